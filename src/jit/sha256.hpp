// SHA-256 through OpenSSL's libcrypto, for content-addressed cache keys and
// entry checksums.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

struct evp_md_ctx_st;  // OpenSSL's EVP_MD_CTX

namespace bronze::jit {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  Sha256& update(const void* data, std::size_t n);
  Sha256& update(const std::string& s) { return update(s.data(), s.size()); }
  void digest(std::uint8_t out[32]);
  std::string hex();  // finishes and returns the 64-character digest

 private:
  evp_md_ctx_st* ctx_;
};

inline std::string sha256_hex(const std::string& s) { return Sha256().update(s).hex(); }

}  // namespace bronze::jit
