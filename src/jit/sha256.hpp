// SHA-256 (FIPS 180-4), for content-addressed cache keys and entry checksums.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace bronze::jit {

class Sha256 {
 public:
  Sha256();
  Sha256& update(const void* data, std::size_t n);
  Sha256& update(const std::string& s) { return update(s.data(), s.size()); }
  void digest(std::uint8_t out[32]);
  std::string hex();  // finishes and returns the 64-character digest

 private:
  void block(const std::uint8_t* p);
  std::uint32_t h_[8];
  std::uint8_t buf_[64];
  std::size_t used_ = 0;
  std::uint64_t total_ = 0;
};

inline std::string sha256_hex(const std::string& s) { return Sha256().update(s).hex(); }

}  // namespace bronze::jit
