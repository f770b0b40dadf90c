// bronze's precompiled library format (.bronzelib), written by
// `bronze compile` and read by load_metallib:
//   "BRZL" | u32 version | u32 section count | sections
//   section: u32 kind | u32 name length | name | u64 size | bytes | sha256(bytes)
// kinds: 1 the Metal source (always present: reflection is parsed from it,
// and a host without a matching object rebuilds from it), 2 the file name,
// 3 a compiled object for the target in `name` ("cpu-x86_64-linux", ...).
// All integers little-endian. Every length is checked against the input.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace bronze::shader {

struct LibraryFile {
  std::string source;
  std::string filename = "shader.metal";
  std::vector<std::pair<std::string, std::vector<std::uint8_t>>> objects;  // target -> bytes
};

std::vector<std::uint8_t> encode_library(const LibraryFile& f);
// Throws ValueError naming what is wrong (and what the bytes look like, for
// Apple .metallib files).
LibraryFile decode_library(const std::uint8_t* data, std::size_t size);

// The target string of this host's CPU objects.
std::string host_cpu_target();

}  // namespace bronze::shader
