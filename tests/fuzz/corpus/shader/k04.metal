
    template <typename T, int SCALE>
    kernel void scale(device T* y, device const T* x, uint i [[thread_position_in_grid]]) { y[i] = x[i] * T(SCALE); }
    template [[host_name("scale_f32")]] kernel void scale<float, 2>(device float*, device const float*, uint);
    template [[host_name("scale_i32")]] kernel void scale<int, 3>(device int*, device const int*, uint);
    