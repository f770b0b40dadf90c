#include "jit/sha256.hpp"

#include <cmath>
#include <cstring>

namespace bronze::jit {
namespace {
// The constants are the first 32 fractional bits of the square roots (H) and
// cube roots (K) of the first primes; computed once instead of transcribed.
struct Constants {
  std::uint32_t h[8];
  std::uint32_t k[64];
  Constants() {
    int primes[64], n = 0;
    for (int c = 2; n < 64; ++c) {
      bool prime = true;
      for (int d = 2; d * d <= c; ++d)
        if (c % d == 0) prime = false;
      if (prime) primes[n++] = c;
    }
    auto frac32 = [](long double x) {
      return static_cast<std::uint32_t>(std::floor((x - std::floor(x)) * 4294967296.0L));
    };
    for (int i = 0; i < 8; ++i) h[i] = frac32(std::sqrt(static_cast<long double>(primes[i])));
    for (int i = 0; i < 64; ++i) k[i] = frac32(std::cbrt(static_cast<long double>(primes[i])));
  }
};
const Constants& constants() {
  static const Constants c;
  return c;
}
inline std::uint32_t rotr(std::uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }
}  // namespace

Sha256::Sha256() { std::memcpy(h_, constants().h, sizeof h_); }

void Sha256::block(const std::uint8_t* p) {
  const std::uint32_t* K = constants().k;
  std::uint32_t w[64];
  for (int i = 0; i < 16; ++i)
    w[i] = (std::uint32_t(p[4 * i]) << 24) | (std::uint32_t(p[4 * i + 1]) << 16) | (std::uint32_t(p[4 * i + 2]) << 8) |
           p[4 * i + 3];
  for (int i = 16; i < 64; ++i) {
    std::uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
    std::uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  std::uint32_t a = h_[0], b = h_[1], c = h_[2], d = h_[3], e = h_[4], f = h_[5], g = h_[6], h = h_[7];
  for (int i = 0; i < 64; ++i) {
    std::uint32_t t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
    std::uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
    h = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  h_[0] += a; h_[1] += b; h_[2] += c; h_[3] += d;
  h_[4] += e; h_[5] += f; h_[6] += g; h_[7] += h;
}

Sha256& Sha256::update(const void* data, std::size_t n) {
  const auto* p = static_cast<const std::uint8_t*>(data);
  total_ += n;
  while (n > 0) {
    std::size_t take = std::min(n, 64 - used_);
    std::memcpy(buf_ + used_, p, take);
    used_ += take;
    p += take;
    n -= take;
    if (used_ == 64) {
      block(buf_);
      used_ = 0;
    }
  }
  return *this;
}

void Sha256::digest(std::uint8_t out[32]) {
  std::uint64_t bits = total_ * 8;
  std::uint8_t pad = 0x80;
  update(&pad, 1);
  std::uint8_t zero = 0;
  while (used_ != 56) update(&zero, 1);
  std::uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<std::uint8_t>(bits >> (56 - 8 * i));
  update(len, 8);
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 4; ++j) out[4 * i + j] = static_cast<std::uint8_t>(h_[i] >> (24 - 8 * j));
}

std::string Sha256::hex() {
  std::uint8_t d[32];
  digest(d);
  static const char* hexd = "0123456789abcdef";
  std::string s;
  for (std::uint8_t b : d) {
    s += hexd[b >> 4];
    s += hexd[b & 15];
  }
  return s;
}

}  // namespace bronze::jit
