// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3")
// and the mapping from (seed, offset, element index) to numbers that every
// backend uses, so the same seed gives bit-identical uniforms and integers on
// CPU and CUDA. This header is plain C++ so the CUDA backend can compile it
// with NVRTC unchanged (define BRONZE_PHILOX_FN as __device__ inline there,
// BRONZE_PHILOX_COLD_FN as __device__ __noinline__, BRONZE_PHILOX_TABLE as
// __device__ const).
//
// Element i of an op whose generator state is (seed, offset) reads the block
//   philox(key = seed, counter = (offset + i / per_block, 0))
// and takes lane i % per_block of it; the op then advances offset by
// ceil(n / per_block). per_block is 4 for 32-bit draws, 2 for 64-bit draws.
#pragma once

#if !defined(__CUDACC__)
#include <cstring>
#endif

#ifndef BRONZE_PHILOX_FN
#define BRONZE_PHILOX_FN inline
#endif
#ifndef BRONZE_PHILOX_COLD_FN  // rarely taken: kept out of line in GPU kernels
#define BRONZE_PHILOX_COLD_FN inline
#endif
#ifndef BRONZE_PHILOX_TABLE
#define BRONZE_PHILOX_TABLE inline constexpr
#endif

namespace bronze::philox {

typedef unsigned int u32;
typedef unsigned long long u64;

struct U32x4 {
  u32 v[4];
};

// The high and low words of a * b.
#if defined(__CUDACC__)
// __umulhi and a plain multiply: NVRTC turns the 64-bit product into an
// IMAD.WIDE plus a redundant add.
BRONZE_PHILOX_FN void mulhilo(u32 a, u32 b, u32* hi, u32* lo) {
  *hi = __umulhi(a, b);
  *lo = a * b;
}
#else
BRONZE_PHILOX_FN void mulhilo(u32 a, u32 b, u32* hi, u32* lo) {
  const u64 p = static_cast<u64>(a) * b;
  *hi = static_cast<u32>(p >> 32);
  *lo = static_cast<u32>(p);
}
#endif

// The keys of the ten rounds: the key (k0, k1) bumped by the Weyl constants.
struct RoundKeys {
  u32 k0[10], k1[10];
};
BRONZE_PHILOX_FN RoundKeys round_keys(u32 k0, u32 k1) {
  RoundKeys keys;
  for (int round = 0; round < 10; ++round) {
    keys.k0[round] = k0 + static_cast<u32>(round) * 0x9E3779B9u;
    keys.k1[round] = k1 + static_cast<u32>(round) * 0xBB67AE85u;
  }
  return keys;
}
BRONZE_PHILOX_FN RoundKeys round_keys(u64 seed) {
  return round_keys(static_cast<u32>(seed), static_cast<u32>(seed >> 32));
}

// GPU kernels take a seed's RoundKeys as a kernel parameter: the rounds read
// them from the constant bank rather than recomputing them for every block.
BRONZE_PHILOX_FN U32x4 philox4x32_10(u32 c0, u32 c1, u32 c2, u32 c3, const RoundKeys& keys) {
  for (int round = 0; round < 10; ++round) {
    u32 hi0, lo0, hi1, lo1;
    mulhilo(0xD2511F53u, c0, &hi0, &lo0);
    mulhilo(0xCD9E8D57u, c2, &hi1, &lo1);
    u32 n0 = hi1 ^ c1 ^ keys.k0[round];
    u32 n2 = hi0 ^ c3 ^ keys.k1[round];
    c0 = n0;
    c1 = lo1;
    c2 = n2;
    c3 = lo0;
  }
  U32x4 r = {{c0, c1, c2, c3}};
  return r;
}
BRONZE_PHILOX_FN U32x4 philox4x32_10(u32 c0, u32 c1, u32 c2, u32 c3, u32 k0, u32 k1) {
  return philox4x32_10(c0, c1, c2, c3, round_keys(k0, k1));
}

// The block for counter `block` (offset + i / per_block) under `seed`.
BRONZE_PHILOX_FN U32x4 block(const RoundKeys& keys, u64 counter) {
  return philox4x32_10(static_cast<u32>(counter), static_cast<u32>(counter >> 32), 0u, 0u, keys);
}
BRONZE_PHILOX_FN U32x4 block(u64 seed, u64 counter) { return block(round_keys(seed), counter); }

}  // namespace bronze::philox

#include "ziggurat_tables.hpp"

namespace bronze::philox {

// [0, 1) with 24 random bits: exactly representable in float, half rounding aside.
BRONZE_PHILOX_FN float uniform_f32(u32 x) { return static_cast<float>(x >> 8) * 5.9604644775390625e-8f; }
// [0, 1) on float16's grid (11 random bits) and bfloat16's (8): exact in
// those dtypes, so a standard uniform never rounds up to 1 (as torch draws
// them: its uniform_real takes the dtype's digits).
BRONZE_PHILOX_FN float uniform_f16(u32 x) { return static_cast<float>(x >> 21) * 4.8828125e-4f; }
BRONZE_PHILOX_FN float uniform_bf16(u32 x) { return static_cast<float>(x >> 24) * 3.90625e-3f; }
// [a, b) in double, u in [0, 1): a value above `cap` (the dtype's largest
// below b), which would round to b in the dtype, becomes cap.
BRONZE_PHILOX_FN double uniform_between(double u, double a, double b, double cap) {
  const double v = a + u * (b - a);
  return v < cap ? v : cap;
}
// [0, 1) with 53 random bits.
BRONZE_PHILOX_FN double uniform_f64(u32 hi, u32 lo) {
  u64 x = (static_cast<u64>(hi) << 32) | lo;
  return static_cast<double>(x >> 11) * 1.1102230246251565404236316680908203125e-16;
}

// Standard normals are drawn by the ziggurat (Marsaglia & Tsang; tables in
// ziggurat_tables.hpp) in arithmetic built only from correctly rounded
// operations (+ - * /, integer ops, no contraction: the CUDA kernels compile
// with --fmad=false, the CPU file with -ffp-contract=off), so every IEEE
// machine produces the same bits. A float element takes its 32-bit word w (as
// above), a double element the 64-bit word v[2l] << 32 | v[2l + 1]; the top
// bit is the sign, the next 8 bits the layer, and the low 23 (float) or 52
// (double) bits the position m in the layer. The 98.5% of words inside their
// layer's rectangle cost a table lookup and a multiply. The rest continue
// with the element's own blocks
//   philox(key = seed, counter = (offset + i / per_block, attempt = 1, 2, ..., i % per_block))
// which no op's main blocks (third word 0) ever use.

#if defined(__CUDACC__)
BRONZE_PHILOX_FN int ilog2(u32 k) { return 31 - __clz(k); }  // k > 0
BRONZE_PHILOX_FN int ilog2(u64 k) { return 63 - __clzll(k); }
BRONZE_PHILOX_FN u32 bits_of(float x) { return __float_as_uint(x); }
BRONZE_PHILOX_FN u64 bits_of(double x) { return static_cast<u64>(__double_as_longlong(x)); }
BRONZE_PHILOX_FN float float_of(u32 b) { return __uint_as_float(b); }
BRONZE_PHILOX_FN double double_of(u64 b) { return __longlong_as_double(static_cast<long long>(b)); }
#else
BRONZE_PHILOX_FN int ilog2(u32 k) { return 31 - __builtin_clz(k); }
BRONZE_PHILOX_FN int ilog2(u64 k) { return 63 - __builtin_clzll(k); }
template <typename To, typename From>
BRONZE_PHILOX_FN To bit_cast(From x) {
  To b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}
BRONZE_PHILOX_FN u32 bits_of(float x) { return bit_cast<u32>(x); }
BRONZE_PHILOX_FN u64 bits_of(double x) { return bit_cast<u64>(x); }
BRONZE_PHILOX_FN float float_of(u32 b) { return bit_cast<float>(b); }
BRONZE_PHILOX_FN double double_of(u64 b) { return bit_cast<double>(b); }
#endif

BRONZE_PHILOX_FN u64 word64(u32 hi, u32 lo) { return (static_cast<u64>(hi) << 32) | lo; }

// m < 2^23 as a float, exactly: m in the mantissa of 2^23, minus 2^23 (an OR
// and an add, where GPUs convert integers at an eighth of their float rate).
BRONZE_PHILOX_FN float f32_of_u23(u32 m) { return float_of(0x4b000000u | m) - 8388608.0f; }
// m < 2^52 as a double, exactly.
BRONZE_PHILOX_FN double f64_of_u52(u64 m) { return double_of(0x4330000000000000ull | m) - 4503599627370496.0; }

// log(k / 2^24) for k in [1, 2^24] (within 2.3 ulp): k = m 2^e with m in
// [sqrt(1/2), sqrt(2)), log m = 2 atanh(s), s = (m - 1) / (m + 1), |s| < 0.172,
// by its series.
BRONZE_PHILOX_FN float log_uniform24(u32 k) {
  int e = ilog2(k);
  u32 kn = e <= 23 ? k << (23 - e) : k >> 1;    // exact: top bit at 2^23
  float m = float_of(0x3f800000u | (kn & 0x7fffffu));  // kn / 2^23 in [1, 2)
  if (kn > 11863283u) {                         // m > sqrt(2)
    m *= 0.5f;
    e += 1;
  }
  float s = (m - 1.0f) / (m + 1.0f), z = s * s;
  float log_m = s * (2.0f + z * (0.6666666666666666f + z * (0.4f + z * (0.2857142857142857f + z * 0.2222222222222222f))));
  float ef = static_cast<float>(e - 24);
  return ef * 0.693145751953125f + (ef * 1.4286068202862268e-06f + log_m);  // ln 2, hi + lo
}

// log(k / 2^53) for k in [1, 2^53] (within 2.7 ulp): as log_uniform24, the series to s^23.
BRONZE_PHILOX_FN double log_uniform53(u64 k) {
  int e = ilog2(k);
  u64 kn = e <= 52 ? k << (52 - e) : k >> 1;  // exact: top bit at 2^52
  double m = double_of(0x3ff0000000000000ull | (kn & 0xfffffffffffffull));  // [1, 2)
  if (kn > 6369051672525772ull) {              // m > sqrt(2)
    m *= 0.5;
    e += 1;
  }
  double s = (m - 1.0) / (m + 1.0), z = s * s, series = 2.0 / 23.0;
  for (int j = 10; j >= 0; --j) series = 2.0 / (2 * j + 1) + z * series;
  double ef = static_cast<double>(e - 53);
  return ef * 6.93147180369123816490e-01 + (ef * 1.90821492927058770002e-10 + s * series);  // ln 2, hi + lo
}

// exp(t) for t in [-20, 0] (within 1.1 ulp): t = n ln 2 + r, n = round(t / ln 2)
// by the 1.5 * 2^23 rounding trick, |r| <= ln 2 / 2, e^r by its Taylor series
// to r^7, times 2^n put in the exponent bits.
BRONZE_PHILOX_FN float exp_nonpositive(float t) {
  const float kf = t * 1.44269504f + 12582912.0f;
  const float nf = kf - 12582912.0f;
  const int n = static_cast<int>(bits_of(kf)) - 0x4b400000;
  const float r = (t - nf * 0.693145751953125f) - nf * 1.4286068202862268e-06f;
  const float p = 1.0f + r * (1.0f + r * (0.5f + r * (0.16666667f + r * (0.041666668f + r * (0.0083333333f +
                  r * (0.0013888889f + r * 1.984127e-4f))))));
  return p * float_of(static_cast<u32>(n + 127) << 23);
}

// exp(t) for t in [-40, 0] (within 1.2 ulp): as exp_nonpositive, the series to r^13.
BRONZE_PHILOX_FN double exp_nonpositive(double t) {
  const double kf = t * 1.4426950408889634 + 6755399441055744.0;  // 1.5 * 2^52
  const double nf = kf - 6755399441055744.0;
  const int n = static_cast<int>(static_cast<long long>(bits_of(kf) - 0x4338000000000000ull));
  const double r = (t - nf * 6.93147180369123816490e-01) - nf * 1.90821492927058770002e-10;
  const double inv_factorial[13] = {1.0,         1.0 / 2,        1.0 / 6,         1.0 / 24,       1.0 / 120,
                                    1.0 / 720,   1.0 / 5040,     1.0 / 40320,     1.0 / 362880,   1.0 / 3628800,
                                    1.0 / 39916800, 1.0 / 479001600, 1.0 / 6227020800.0};  // 1/1! to 1/13!
  double p = inv_factorial[12];
  for (int j = 11; j >= 0; --j) p = p * r + inv_factorial[j];
  return (p * r + 1.0) * double_of(static_cast<u64>(n + 1023) << 52);
}

// What the ziggurat needs of its float type: the word, its tables, and how
// an attempt's Philox block gives the tail's two uniforms (as -log u), the
// wedge's height uniform and the next word.
template <typename F>
struct Zig;
template <>
struct Zig<float> {
  typedef u32 Word;
  typedef ZigLayer Layer;
  static constexpr int kPositionBits = 23;
  BRONZE_PHILOX_FN static const Layer& layer(u32 i) { return kZigLayers[i]; }
  BRONZE_PHILOX_FN static float f(u32 i) { return kZigF[i]; }
  BRONZE_PHILOX_FN static float r() { return kZigR; }
  BRONZE_PHILOX_FN static float inv_r() { return kZigInvR; }
  BRONZE_PHILOX_FN static float position(Word m) { return f32_of_u23(m); }
  BRONZE_PHILOX_FN static float neg_log_uniform(const U32x4& e, int j) { return -log_uniform24((e.v[j] >> 8) + 1u); }
  BRONZE_PHILOX_FN static float uniform(const U32x4& e) { return uniform_f32(e.v[0]); }
  BRONZE_PHILOX_FN static Word next_word(const U32x4& e) { return e.v[3]; }
};
template <>
struct Zig<double> {
  typedef u64 Word;
  typedef ZigLayer64 Layer;
  static constexpr int kPositionBits = 52;
  BRONZE_PHILOX_FN static const Layer& layer(u32 i) { return kZigLayers64[i]; }
  BRONZE_PHILOX_FN static double f(u32 i) { return kZigF64[i]; }
  BRONZE_PHILOX_FN static double r() { return kZigR64; }
  BRONZE_PHILOX_FN static double inv_r() { return kZigInvR64; }
  BRONZE_PHILOX_FN static double position(Word m) { return f64_of_u52(m); }
  BRONZE_PHILOX_FN static double neg_log_uniform(const U32x4& e, int j) {
    return -log_uniform53((word64(e.v[2 * j], e.v[2 * j + 1]) >> 11) + 1u);
  }
  BRONZE_PHILOX_FN static double uniform(const U32x4& e) { return uniform_f64(e.v[0], e.v[1]); }
  BRONZE_PHILOX_FN static Word next_word(const U32x4& e) { return word64(e.v[2], e.v[3]); }
};

// A word's fields: sign (the top bit), layer (the next 8 bits; with the sign,
// the top 9 bits index a table of signed widths), position (the low bits).
template <typename W>
BRONZE_PHILOX_FN u32 zig_index(W w) { return static_cast<u32>(w >> (8 * sizeof(W) - 9)); }
template <typename W>
BRONZE_PHILOX_FN W zig_position(W w, int position_bits) { return w & ((W(1) << position_bits) - 1); }
template <typename F, typename W>
BRONZE_PHILOX_FN F zig_signed(F z, W w) { return (zig_index(w) & 0x100u) ? -z : z; }

// Attempt `attempt` (1, 2, ...) at a word that failed its rectangle test:
// Marsaglia's tail method beyond r for the base layer (the same word again
// when it rejects), the wedge test under exp(-z^2/2) for the others (a new
// word when it rejects, itself first tried on its rectangle). True with *z
// when it accepts, else *w is the word for attempt + 1.
template <typename F>
BRONZE_PHILOX_FN bool normal_attempt(typename Zig<F>::Word* w, u32 attempt, u64 seed, u64 counter, u32 lane, F* z) {
  typedef Zig<F> Z;
  const U32x4 e = philox4x32_10(static_cast<u32>(counter), static_cast<u32>(counter >> 32), attempt, lane,
                                static_cast<u32>(seed), static_cast<u32>(seed >> 32));
  const u32 layer = zig_index(*w) & 0xffu;
  if (layer == 0) {
    const F x = Z::neg_log_uniform(e, 0) * Z::inv_r();
    const F y = Z::neg_log_uniform(e, 1);
    *z = zig_signed(Z::r() + x, *w);
    return y + y > x * x;
  }
  const F zw = Z::position(zig_position(*w, Z::kPositionBits)) * Z::layer(layer).w;
  const F height = Z::f(layer) + Z::uniform(e) * (Z::f(layer + 1) - Z::f(layer));
  *z = zig_signed(zw, *w);
  if (height < exp_nonpositive(F(-0.5) * zw * zw)) return true;
  *w = Z::next_word(e);
  const typename Z::Layer& next = Z::layer(zig_index(*w) & 0xffu);
  const typename Z::Word m = zig_position(*w, Z::kPositionBits);
  *z = zig_signed(Z::position(m) * next.w, *w);
  return m < next.k;
}

template <typename F>
BRONZE_PHILOX_COLD_FN F normal_rejected(typename Zig<F>::Word w, u64 seed, u64 counter, u32 lane) {
  F z;
  for (u32 attempt = 1; !normal_attempt<F>(&w, attempt, seed, counter, lane, &z); ++attempt) {
  }
  return z;
}

// The standard normal of word w, element `lane` of block `counter`. (The
// CUDA float kernel inlines this rectangle test on its shared-memory table.)
template <typename F>
BRONZE_PHILOX_FN F normal(typename Zig<F>::Word w, u64 seed, u64 counter, u32 lane) {
  typedef Zig<F> Z;
  const typename Z::Layer& layer = Z::layer(zig_index(w) & 0xffu);
  const typename Z::Word m = zig_position(w, Z::kPositionBits);
  if (m < layer.k) return zig_signed(Z::position(m) * layer.w, w);
  return normal_rejected<F>(w, seed, counter, lane);
}

}  // namespace bronze::philox
