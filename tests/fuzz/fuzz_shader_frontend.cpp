// libFuzzer target: the MSL front end (lexer, parser, the CPU and CUDA code generators) on
// arbitrary text. Anything but a bronze::Error escaping, or a crash, is a bug.
#include <cstdint>
#include <string>

#include "bronze/error.hpp"
#include "shader/parser.hpp"
#include "backends/cpu/metal/cpu_codegen.hpp"
#include "backends/cuda/metal/cuda_codegen.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string src(reinterpret_cast<const char*>(data), size);
  try {
    auto parsed = bronze::shader::parse(src, "fuzz.metal");
    (void)bronze::cpu::generate(src, parsed);
    (void)bronze::cuda::generate(src, parsed);
  } catch (const bronze::Error&) {
  }
  return 0;
}
