
    #define TILE 8
    kernel void matmul(device const float* A, device const float* B, device float* C, constant uint3& dims,
                       uint2 gid [[thread_position_in_grid]], uint2 lid [[thread_position_in_threadgroup]]) {
      threadgroup float As[TILE][TILE];
      threadgroup float Bs[TILE][TILE];
      uint M = dims.x, K = dims.y, N = dims.z;
      float acc = 0.0f;
      for (uint t = 0; t < (K + TILE - 1) / TILE; ++t) {
        uint ak = t * TILE + lid.x, bk = t * TILE + lid.y;
        As[lid.y][lid.x] = (gid.y < M && ak < K) ? A[gid.y * K + ak] : 0.0f;
        Bs[lid.y][lid.x] = (bk < K && gid.x < N) ? B[bk * N + gid.x] : 0.0f;
        threadgroup_barrier(mem_flags::mem_threadgroup);
        for (uint k = 0; k < TILE; ++k) acc = fma(As[lid.y][k], Bs[k][lid.x], acc);
        threadgroup_barrier(mem_flags::mem_threadgroup);
      }
      if (gid.y < M && gid.x < N) C[gid.y * N + gid.x] = acc;
    }