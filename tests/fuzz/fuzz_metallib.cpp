// libFuzzer target: the .metallib container reader (src/air/metallib) on
// arbitrary bytes: every function it returns lies inside the input, as the
// LLVM bitcode reader is then handed each module's bytes.
#include <cstdint>

#include "air/metallib.hpp"
#include "bronze/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const bool claimed = bronze::air::is_metallib(data, size);
  try {
    const bronze::air::Metallib lib = bronze::air::read_metallib(data, size);
    if (!claimed) __builtin_trap();  // read what is_metallib refused
    for (const auto& f : lib.functions)
      if (f.bitcode < data || f.bitcode_size > size || f.bitcode > data + size - f.bitcode_size) __builtin_trap();
  } catch (const bronze::Error&) {
  }
  return 0;
}
