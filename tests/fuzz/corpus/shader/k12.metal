
    kernel void v(device float* o, device const float4* x, device packed_float3* p, uint i [[thread_position_in_grid]]) {
      float4 a = x[i];
      float3 c = a.xyz * 2.0f;
      float2 s = a.xy + a.zw;
      a.xy = a.yx;
      o[i * 12 + 0] = dot(c, float3(1.0f));
      o[i * 12 + 1] = length(float2(3.0f, 4.0f));
      o[i * 12 + 2] = s.x - s.y;
      o[i * 12 + 3] = a.x;
      o[i * 12 + 4] = metal::precise::sqrt(16.0f) + fast::rsqrt(4.0f);
      o[i * 12 + 5] = clamp(a.w, 0.0f, 1.0f) + select(1.0f, 2.0f, a.z > 100.0f);
      o[i * 12 + 6] = normalize(float3(0.0f, 3.0f, 4.0f)).z;
      o[i * 12 + 7] = isnan(NAN) ? 1.0f : 0.0f;
      o[i * 12 + 8] = tanh(0.5f) + fma(2.0f, 3.0f, 1.0f) + pow(2.0f, 3.0f) + floor(-1.5f) + abs(-2.0f);
      o[i * 12 + 9] = float(sizeof(float3)) + float(sizeof(packed_float3)) / 100.0f;
      o[i * 12 + 10] = cross(float3(1, 0, 0), float3(0, 1, 0)).z + float(all(int2(1, 2) > int2(0)));
      o[i * 12 + 11] = max(float4(1, 5, 3, 2), float4(4)).y + min(2, 3);
      p[i] = packed_float3(c.x, c.y, c.z);
    }