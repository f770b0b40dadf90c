// Calls a generic lambda with a value of the C++ type of a DType, and the
// arithmetic type used for it (float for the 16-bit formats).
#pragma once

#include <cstdint>
#include <type_traits>

#include "bronze/dtype.hpp"
#include "bronze/error.hpp"

namespace bronze::runtime {

template <typename T>
using acc_t = std::conditional_t<std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>, float, T>;

template <typename F>
decltype(auto) dispatch(DType t, F&& f) {
  switch (t) {
    case DType::Bool: return f(bool{});
    case DType::UInt8: return f(std::uint8_t{});
    case DType::Int8: return f(std::int8_t{});
    case DType::Int16: return f(std::int16_t{});
    case DType::Int32: return f(std::int32_t{});
    case DType::Int64: return f(std::int64_t{});
    case DType::Float16: return f(Half{});
    case DType::BFloat16: return f(BFloat16{});
    case DType::Float32: return f(float{});
    case DType::Float64: return f(double{});
    case DType::UInt16: return f(std::uint16_t{});
    case DType::UInt32: return f(std::uint32_t{});
    case DType::UInt64: return f(std::uint64_t{});
  }
  throw Error("unknown dtype");
}

// Value conversion between element types with torch's semantics for bool.
template <typename T, typename S>
inline T convert(S s) {
  if constexpr (std::is_same_v<T, bool>) {
    return static_cast<acc_t<S>>(s) != acc_t<S>(0);
  } else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    return T(static_cast<float>(static_cast<acc_t<S>>(s)));
  } else {
    return static_cast<T>(static_cast<acc_t<S>>(s));
  }
}

}  // namespace bronze::runtime
