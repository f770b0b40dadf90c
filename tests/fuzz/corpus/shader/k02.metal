
    kernel void k(constant float& s [[buffer(1)]], device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
      out[i] = s * i;
    }