
    kernel void k(device float* f, device int* i, device half* h, constant float& a, constant int& b,
                  constant half& c, constant bool& d, constant uint2& e, uint t [[thread_position_in_grid]]) {
      f[t] = a + float(e.y); i[t] = b + int(d); h[t] = c;
    }