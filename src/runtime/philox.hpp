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

}  // namespace bronze::philox
