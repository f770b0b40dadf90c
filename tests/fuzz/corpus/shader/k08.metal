
    kernel void hist(device const uint* v, device atomic_uint* bins, device atomic_int* mx,
                     device atomic_float* total, uint i [[thread_position_in_grid]]) {
      atomic_fetch_add_explicit(&bins[v[i] % 16], 1u, memory_order_relaxed);
      atomic_fetch_max_explicit(mx, int(v[i]), memory_order_relaxed);
      atomic_fetch_add_explicit(total, 0.5f, memory_order_relaxed);
    }
    kernel void ops(device atomic_int* a, uint i [[thread_position_in_grid]]) {
      atomic_fetch_or_explicit(&a[0], 1 << (i % 8), memory_order_relaxed);
      atomic_fetch_and_explicit(&a[1], ~(1 << (i % 8)), memory_order_relaxed);
      atomic_fetch_xor_explicit(&a[2], 1, memory_order_relaxed);
      atomic_fetch_min_explicit(&a[3], int(i), memory_order_relaxed);
      atomic_fetch_sub_explicit(&a[4], 2, memory_order_relaxed);
      int expected = atomic_load_explicit(&a[5], memory_order_relaxed);
      while (!atomic_compare_exchange_weak_explicit(&a[5], &expected, expected + 3, memory_order_relaxed, memory_order_relaxed)) {}
      atomic_store_explicit(&a[6], 42, memory_order_relaxed);
      atomic_exchange_explicit(&a[7], 7, memory_order_relaxed);
    }