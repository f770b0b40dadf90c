
    kernel void h(device half* y, device const half* x, uint i [[thread_position_in_grid]]) {
      half2 v = half2(x[i], 1.0h);
      y[i] = v.x * 2.0h + v.y;
    }
    kernel void b(device bfloat* y, device const float* x, uint i [[thread_position_in_grid]]) {
      float f = x[i];
      y[i] = bfloat(f * 2.0f);
    }