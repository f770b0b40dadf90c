// libFuzzer target: load_metallib's reading of a .bronzelib on arbitrary
// bytes, up to (not including) loading an object: the reader, a re-encode
// round trip, and the front end on the source the library carries, whose
// reflected signatures every object is checked against (and which
// rebuild=True builds). Mismatched sections come from mutating one section
// of the seed library and not the others.
#include <cstdint>

#include "bronze/error.hpp"
#include "shader/bronzelib.hpp"
#include "shader/parser.hpp"
#include "shader/rewrite.hpp"
#include "backends/cpu/metal/cpu_codegen.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  bronze::shader::LibraryFile f;
  try {
    f = bronze::shader::decode_library(data, size);
  } catch (const bronze::Error&) {
    return 0;
  }
  auto bytes = bronze::shader::encode_library(f);
  auto again = bronze::shader::decode_library(bytes.data(), bytes.size());  // must not throw
  if (again.source != f.source || again.filename != f.filename || again.objects != f.objects) __builtin_trap();
  try {
    auto ps = bronze::shader::parse(f.source, f.filename);
    for (const auto& k : ps.kernels) (void)bronze::shader::layout_words(k.params.size());
    (void)bronze::cpu::generate(f.source, ps);
  } catch (const bronze::Error&) {
  }
  return 0;
}
