
    kernel void red(device const float* x, device float* out, constant uint& n, uint i [[thread_position_in_grid]],
                    uint lane [[thread_index_in_simdgroup]], uint sg [[simdgroup_index_in_threadgroup]],
                    uint nsg [[simdgroups_per_threadgroup]]) {
      threadgroup float part[32];
      float v = simd_sum(x[i]);
      if (lane == 0) part[sg] = v;
      threadgroup_barrier(mem_flags::mem_threadgroup);
      if (sg == 0) {
        float w = lane < nsg ? part[lane] : 0.0f;
        w = simd_sum(w);
        if (lane == 0) out[0] = w;
      }
    }