
    kernel void simd(device const float* x, device float* o, uint i [[thread_position_in_grid]],
                     uint lane [[thread_index_in_simdgroup]]) {
      float v = x[i];
      o[i * 10 + 0] = simd_sum(v);
      o[i * 10 + 1] = simd_max(v);
      o[i * 10 + 2] = simd_min(v);
      o[i * 10 + 3] = simd_prefix_exclusive_sum(v);
      o[i * 10 + 4] = simd_prefix_inclusive_sum(v);
      o[i * 10 + 5] = simd_shuffle(v, 3);
      o[i * 10 + 6] = simd_shuffle_down(v, 1);
      o[i * 10 + 7] = simd_shuffle_xor(v, 1);
      o[i * 10 + 8] = simd_broadcast(v, 31);
      o[i * 10 + 9] = float(uint64_t(simd_ballot(v > 0.5f)) & 0xff) + (simd_all(v >= 0.0f) ? 1000.0f : 0.0f) +
                      (simd_any(v > 2.0f) ? 5000.0f : 0.0f);
    }