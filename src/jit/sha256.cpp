#include "jit/sha256.hpp"

#include <openssl/evp.h>

#include <new>

#include "bronze/error.hpp"

namespace bronze::jit {
namespace {
// Fetched once: an EVP_sha256() init looks the algorithm up in the provider each time.
const EVP_MD* sha256() {
  static const EVP_MD* md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  if (!md) throw Error("OpenSSL offers no SHA-256 (libcrypto's configuration refuses it)");
  return md;
}
void check(int ok) {
  if (!ok) throw Error("OpenSSL's SHA-256 failed");
}
}  // namespace

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  if (!ctx_) throw std::bad_alloc();
  if (!EVP_DigestInit_ex(ctx_, sha256(), nullptr)) {
    EVP_MD_CTX_free(ctx_);
    check(0);
  }
}

Sha256::~Sha256() { EVP_MD_CTX_free(ctx_); }

Sha256& Sha256::update(const void* data, std::size_t n) {
  check(EVP_DigestUpdate(ctx_, data, n));
  return *this;
}

void Sha256::digest(std::uint8_t out[32]) { check(EVP_DigestFinal_ex(ctx_, out, nullptr)); }

std::string Sha256::hex() {
  static const char* digits = "0123456789abcdef";
  std::uint8_t d[32];
  digest(d);
  std::string s(64, '0');
  for (int i = 0; i < 32; ++i) {
    s[2 * i] = digits[d[i] >> 4];
    s[2 * i + 1] = digits[d[i] & 15];
  }
  return s;
}

}  // namespace bronze::jit
