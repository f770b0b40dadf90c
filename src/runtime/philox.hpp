// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3")
// and the mapping from (seed, offset, element index) to numbers that every
// backend uses, so the same seed gives bit-identical uniforms and integers on
// CPU and CUDA. This header is plain C++ so the CUDA backend can compile it
// with NVRTC unchanged (define BRONZE_PHILOX_FN as __device__ there).
//
// Element i of an op whose generator state is (seed, offset) reads the block
//   philox(key = seed, counter = (offset + i / per_block, 0))
// and takes lane i % per_block of it; the op then advances offset by
// ceil(n / per_block). per_block is 4 for 32-bit draws, 2 for 64-bit draws.
#pragma once

#if !defined(__CUDACC__)
#include <cmath>
#endif

#ifndef BRONZE_PHILOX_FN
#define BRONZE_PHILOX_FN inline
#endif

namespace bronze::philox {

typedef unsigned int u32;
typedef unsigned long long u64;

struct U32x4 {
  u32 v[4];
};

BRONZE_PHILOX_FN U32x4 philox4x32_10(u32 c0, u32 c1, u32 c2, u32 c3, u32 k0, u32 k1) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    u64 p0 = static_cast<u64>(0xD2511F53u) * c0;
    u64 p1 = static_cast<u64>(0xCD9E8D57u) * c2;
    u32 hi0 = static_cast<u32>(p0 >> 32), lo0 = static_cast<u32>(p0);
    u32 hi1 = static_cast<u32>(p1 >> 32), lo1 = static_cast<u32>(p1);
    u32 n0 = hi1 ^ c1 ^ k0;
    u32 n2 = hi0 ^ c3 ^ k1;
    c0 = n0;
    c1 = lo1;
    c2 = n2;
    c3 = lo0;
  }
  U32x4 r = {{c0, c1, c2, c3}};
  return r;
}

// The block for counter `block` (offset + i / per_block) under `seed`.
BRONZE_PHILOX_FN U32x4 block(u64 seed, u64 counter) {
  return philox4x32_10(static_cast<u32>(counter), static_cast<u32>(counter >> 32), 0u, 0u,
                       static_cast<u32>(seed), static_cast<u32>(seed >> 32));
}

// [0, 1) with 24 random bits: exactly representable in float, half rounding aside.
BRONZE_PHILOX_FN float uniform_f32(u32 x) { return static_cast<float>(x >> 8) * 5.9604644775390625e-8f; }
// (0, 1]: safe for log().
BRONZE_PHILOX_FN float uniform_f32_open0(u32 x) {
  return static_cast<float>((x >> 8) + 1u) * 5.9604644775390625e-8f;
}
// [0, 1) with 53 random bits.
BRONZE_PHILOX_FN double uniform_f64(u32 hi, u32 lo) {
  u64 x = (static_cast<u64>(hi) << 32) | lo;
  return static_cast<double>(x >> 11) * 1.1102230246251565404236316680908203125e-16;
}

// Standard normals, two from two words (Box-Muller: r = sqrt(-2 log u1),
// angle 2 pi u2), in float arithmetic built only from correctly rounded
// operations (+ - * / sqrt, integer ops, no contraction: the CUDA kernels
// compile with --fmad=false, the CPU file with -ffp-contract=off), so every
// IEEE machine produces the same bits. log is within 2.3 ulp, sin/cos 1.5 ulp
// (tests/cpp/test_philox.cpp), so the normals are within a few ulp.
// u1 = (x0 >> 8) + 1 over 2^24 in (0, 1], u2 = (x1 >> 8) over 2^24 in [0, 1).

#if defined(__CUDACC__)
BRONZE_PHILOX_FN int ilog2(u32 k) { return 31 - __clz(k); }  // k > 0
BRONZE_PHILOX_FN float sqrt_rn(float x) { return sqrtf(x); }  // IEEE unless -use_fast_math
#else
BRONZE_PHILOX_FN int ilog2(u32 k) { return 31 - __builtin_clz(k); }
BRONZE_PHILOX_FN float sqrt_rn(float x) { return std::sqrt(x); }
#endif

// log(k / 2^24) for k in [1, 2^24]: k = m 2^e with m in [sqrt(1/2), sqrt(2)),
// log m = 2 atanh(s), s = (m - 1) / (m + 1), |s| < 0.172, by its series.
BRONZE_PHILOX_FN float log_uniform24(u32 k) {
  int e = ilog2(k);
  u32 kn = e <= 23 ? k << (23 - e) : k >> 1;    // exact: top bit at 2^23
  float m = static_cast<float>(kn) * 1.1920928955078125e-7f;  // [1, 2)
  if (kn > 11863283u) {                         // m > sqrt(2)
    m *= 0.5f;
    e += 1;
  }
  float s = (m - 1.0f) / (m + 1.0f), z = s * s;
  float log_m = s * (2.0f + z * (0.6666666666666666f + z * (0.4f + z * (0.2857142857142857f + z * 0.2222222222222222f))));
  float ef = static_cast<float>(e - 24);
  return ef * 0.693145751953125f + (ef * 1.4286068202862268e-06f + log_m);  // ln 2, hi + lo
}

// sin and cos of 2 pi k / 2^24 for k in [0, 2^24): the angle in quarter
// turns is j + g with j = round(k / 2^22) and g in [-1/2, 1/2] exact, so the
// polynomials (Taylor in g, terms to g^10) only see |angle| <= pi/4.
BRONZE_PHILOX_FN void sincos_turn24(u32 k, float* sin_out, float* cos_out) {
  u32 j = (k + (1u << 21)) >> 22;
  float g = static_cast<float>(static_cast<int>(k) - static_cast<int>(j << 22)) * 2.384185791015625e-7f;
  float z = g * g;
  float sn = g * (1.5707963267948966f + z * (-0.6459640975062462f + z * (0.07969262624616703f + z * (-0.004681754135318687f + z * 0.00016044118478735975f))));
  float cs = 1.0f + z * (-1.2337005501361697f + z * (0.253669507901048f + z * (-0.020863480763352957f + z * (0.0009192602748394263f + z * -2.5202042373060596e-05f))));
  switch (j & 3u) {
    case 0: *sin_out = sn; *cos_out = cs; break;
    case 1: *sin_out = cs; *cos_out = -sn; break;
    case 2: *sin_out = -sn; *cos_out = -cs; break;
    default: *sin_out = -cs; *cos_out = sn; break;
  }
}

// The normals r cos(angle), r sin(angle) of words x0, x1.
BRONZE_PHILOX_FN void normal_pair_f32(u32 x0, u32 x1, float* n0, float* n1) {
  float r = sqrt_rn(-2.0f * log_uniform24((x0 >> 8) + 1u));
  float sn, cs;
  sincos_turn24(x1 >> 8, &sn, &cs);
  *n0 = r * cs;
  *n1 = r * sn;
}

}  // namespace bronze::philox
