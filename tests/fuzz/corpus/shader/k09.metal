
    kernel void softmax(device const float* x, device float* y, constant uint& cols,
                        uint row [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
                        uint tpg [[threads_per_threadgroup]]) {
      threadgroup float red[256];
      float m = -INFINITY;
      for (uint c = tid; c < cols; c += tpg) m = max(m, x[row * cols + c]);
      red[tid] = m;
      threadgroup_barrier(mem_flags::mem_threadgroup);
      for (uint s = tpg / 2; s > 0; s >>= 1) {
        if (tid < s) red[tid] = max(red[tid], red[tid + s]);
        threadgroup_barrier(mem_flags::mem_threadgroup);
      }
      m = red[0];
      threadgroup_barrier(mem_flags::mem_threadgroup);
      float sum = 0.0f;
      for (uint c = tid; c < cols; c += tpg) sum += fast::exp(x[row * cols + c] - m);
      red[tid] = sum;
      threadgroup_barrier(mem_flags::mem_threadgroup);
      for (uint s = tpg / 2; s > 0; s >>= 1) {
        if (tid < s) red[tid] += red[tid + s];
        threadgroup_barrier(mem_flags::mem_threadgroup);
      }
      for (uint c = tid; c < cols; c += tpg) y[row * cols + c] = metal::exp(x[row * cols + c] - m) / red[0];
    }