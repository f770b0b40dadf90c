// libFuzzer target: the .bronzelib reader (load_metallib's parser) on
// arbitrary bytes.
#include <cstdint>

#include "bronze/error.hpp"
#include "shader/bronzelib.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    auto f = bronze::shader::decode_library(data, size);
    (void)bronze::shader::encode_library(f);
  } catch (const bronze::Error&) {
  }
  return 0;
}
