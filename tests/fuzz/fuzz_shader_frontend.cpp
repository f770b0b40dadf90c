// libFuzzer target: the MSL front end (lexer, parser, CPU and CUDA rewriters) on
// arbitrary text. Anything but a bronze::Error escaping, or a crash, is a bug.
#include <cstdint>
#include <string>

#include "bronze/error.hpp"
#include "shader/parser.hpp"
#include "shader/rewrite_cpu.hpp"
#include "shader/rewrite_cuda.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string src(reinterpret_cast<const char*>(data), size);
  try {
    auto parsed = bronze::shader::parse(src, "fuzz.metal");
    (void)bronze::shader::rewrite_for_cpu(src, parsed);
    (void)bronze::shader::rewrite_for_cuda(src, parsed);
  } catch (const bronze::Error&) {
  }
  return 0;
}
