// Apple's .metallib container, as Apple's `metal`/`metallib` tools write it:
// a header of section offsets, a function list (per function a group of
// tagged fields: NAME, TYPE, HASH, OFFT, MDSZ, VERS, ...), metadata sections
// and, per function, one wrapped LLVM bitcode module (AIR). A fat file
// (Mach-O universal header) holds one such container per slice.
//
// Every offset and size is checked against the bytes: a hostile or truncated
// file is a ValueError naming what is wrong, never a read out of range.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace bronze::air {

enum class FunctionType : std::uint8_t { Vertex = 0, Fragment = 1, Kernel = 2, Unqualified = 3, Visible = 4,
                                         Extern = 5, Intersection = 6, Mesh = 7, Object = 8 };

struct Function {
  std::string name;
  FunctionType type = FunctionType::Kernel;
  std::string hash;           // hex SHA-256 Apple's compiler gave the function (the cache key)
  std::uint16_t air_major = 0, air_minor = 0;             // AIR version
  std::uint16_t language_major = 0, language_minor = 0;   // Metal language version
  const std::uint8_t* bitcode = nullptr;  // the module, its bitcode wrapper removed
  std::size_t bitcode_size = 0;
};

struct Metallib {
  std::uint16_t file_major = 0, file_minor = 0;  // the container's version
  std::string platform;                          // "macOS 14.0", "iOS 17.0", ...
  std::vector<Function> functions;               // views into the bytes parsed
};

// Whether the bytes start like a .metallib (thin, "MTLB", or fat with one).
bool is_metallib(const std::uint8_t* data, std::size_t size);

// The functions of the (first) container in `data`, which must outlive the
// result. Throws ValueError for anything malformed.
Metallib read_metallib(const std::uint8_t* data, std::size_t size);

const char* function_type_name(FunctionType t);

}  // namespace bronze::air
