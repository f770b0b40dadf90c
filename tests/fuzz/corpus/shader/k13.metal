
    kernel void rev(device float* x, threadgroup float* tmp [[threadgroup(0)]], uint tid [[thread_index_in_threadgroup]],
                    uint n [[threads_per_threadgroup]], uint g [[threadgroup_position_in_grid]]) {
      tmp[tid] = x[g * n + tid];
      threadgroup_barrier(mem_flags::mem_threadgroup);
      x[g * n + tid] = tmp[n - 1 - tid];
    }