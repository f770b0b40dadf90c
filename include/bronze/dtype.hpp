// Element types and the 16-bit float formats bronze stores (IEEE half and
// bfloat16), with round-to-nearest-even conversions done in integer arithmetic
// so results are identical on every host compiler.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

namespace bronze {

enum class DType : std::uint8_t {
  Bool,
  UInt8,
  Int8,
  Int16,
  Int32,
  Int64,
  Float16,
  BFloat16,
  Float32,
  Float64,
  UInt16,  // after the rest: the values above keep their numbers
  UInt32,
  UInt64,
};

std::size_t element_size(DType t);
const char* dtype_name(DType t);  // "float32", ...
DType dtype_from_name(const std::string& name);  // throws ValueError
inline bool is_floating(DType t) {
  return t == DType::Float16 || t == DType::BFloat16 || t == DType::Float32 || t == DType::Float64;
}
// The dtype both operands are converted to for arithmetic (torch's rules for
// tensor-tensor promotion, restricted to bronze's dtypes).
DType promote_types(DType a, DType b);

namespace detail {
inline std::uint32_t f32_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float bits_f32(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
}  // namespace detail

struct Half {
  std::uint16_t bits = 0;
  Half() = default;
  Half(float f) : bits(from_float(f)) {}  // NOLINT: implicit like a float type
  operator float() const { return to_float(bits); }

  static std::uint16_t from_float(float f) {
    std::uint32_t x = detail::f32_bits(f);
    std::uint32_t sign = (x >> 16) & 0x8000u;
    std::uint32_t abs = x & 0x7fffffffu;
    if (abs >= 0x7f800000u)  // inf or nan
      return static_cast<std::uint16_t>(sign | (abs > 0x7f800000u ? 0x7e00u : 0x7c00u));
    if (abs >= 0x477ff000u)  // rounds to >= 65520: overflow to inf
      return static_cast<std::uint16_t>(sign | 0x7c00u);
    if (abs < 0x38800000u) {  // subnormal half (or zero)
      // Add 0.5 (as float) so the FPU-free shift below rounds to nearest even.
      float mag = detail::bits_f32(abs) + 0.5f;
      return static_cast<std::uint16_t>(sign | (detail::f32_bits(mag) - 0x3f000000u));
    }
    std::uint32_t mant_odd = (abs >> 13) & 1u;
    abs += 0xc8000fffu + mant_odd;  // rebias exponent (-112 << 23) and round
    return static_cast<std::uint16_t>(sign | (abs >> 13));
  }
  static float to_float(std::uint16_t h) {
    std::uint32_t sign = (static_cast<std::uint32_t>(h) & 0x8000u) << 16;
    std::uint32_t exp = (h >> 10) & 0x1fu;
    std::uint32_t mant = h & 0x3ffu;
    if (exp == 0x1f) return detail::bits_f32(sign | 0x7f800000u | (mant << 13));
    if (exp == 0) {  // zero or subnormal: mant * 2^-24
      float mag = static_cast<float>(mant) * 5.9604644775390625e-8f;
      return detail::bits_f32(sign | detail::f32_bits(mag));
    }
    return detail::bits_f32(sign | ((exp + 112) << 23) | (mant << 13));
  }
};

struct BFloat16 {
  std::uint16_t bits = 0;
  BFloat16() = default;
  BFloat16(float f) : bits(from_float(f)) {}  // NOLINT
  operator float() const { return detail::bits_f32(static_cast<std::uint32_t>(bits) << 16); }

  static std::uint16_t from_float(float f) {
    std::uint32_t x = detail::f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((x >> 16) | 0x40u);
    x += 0x7fffu + ((x >> 16) & 1u);  // round to nearest even
    return static_cast<std::uint16_t>(x >> 16);
  }
};

}  // namespace bronze
