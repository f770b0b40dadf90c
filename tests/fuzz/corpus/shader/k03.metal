
    kernel void k(device uint4* o, uint2 gid [[thread_position_in_grid]], uint2 tid [[thread_position_in_threadgroup]],
                  uint2 tg [[threadgroup_position_in_grid]], uint2 dtptg [[dispatch_threads_per_threadgroup]],
                  uint2 tptg [[threads_per_threadgroup]], uint2 grid [[threads_per_grid]],
                  uint2 ngroups [[threadgroups_per_grid]], uint lin [[thread_index_in_threadgroup]]) {
      o[gid.y * grid.x + gid.x] = uint4(tg.x * dtptg.x + tid.x, tg.y * dtptg.y + tid.y,
                                        ngroups.x * 100 + ngroups.y + tptg.x * 1000, lin);
    }