
    kernel void reduce(device const float* x, device float* out, constant uint& n,
                       uint tid [[thread_index_in_threadgroup]], uint gid [[threadgroup_position_in_grid]],
                       uint tpg [[threads_per_threadgroup]]) {
      threadgroup float buf[256];
      uint i = gid * tpg + tid;
      buf[tid] = i < n ? x[i] : 0.0f;
      threadgroup_barrier(mem_flags::mem_threadgroup);
      for (uint s = tpg / 2; s > 0; s >>= 1) {
        if (tid < s) buf[tid] += buf[tid + s];
        threadgroup_barrier(mem_flags::mem_threadgroup);
      }
      if (tid == 0) out[gid] = buf[0];
    }