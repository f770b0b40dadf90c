// A number passed to a tensor op: kept as integer or floating so int64 fills
// lose no precision.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

#include "bronze/dtype.hpp"
#include "bronze/error.hpp"

namespace bronze {

class Scalar {
 public:
  // The integer part of a finite double within int64, or within [2^63, 2^64)
  // as uint64 (0 otherwise: a NaN or an infinity has none, and converting it
  // would be undefined).
  Scalar(double v)  // NOLINT
      : is_int_(false), f_(v) {
    if (std::isfinite(v) && v >= -9223372036854775808.0 && v < 9223372036854775808.0) {
      i_ = static_cast<std::int64_t>(v);
    } else if (std::isfinite(v) && v >= 9223372036854775808.0 && v < 18446744073709551616.0) {
      i_ = static_cast<std::int64_t>(static_cast<std::uint64_t>(v));  // two's complement bits
      beyond_int64_ = true;
    }
  }
  Scalar(float v) : Scalar(static_cast<double>(v)) {}                            // NOLINT
  Scalar(bool v) : is_int_(true), f_(v ? 1.0 : 0.0), i_(v ? 1 : 0) {}            // NOLINT
  template <typename T, typename = std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>>>
  Scalar(T v)  // NOLINT
      : is_int_(true), f_(static_cast<double>(v)), i_(static_cast<std::int64_t>(v)),
        beyond_int64_(std::is_unsigned_v<T> && static_cast<std::uint64_t>(v) > 9223372036854775807ull) {}

  bool is_integral() const { return is_int_; }
  double to_double() const { return f_; }
  // The integer part; for a value in [2^63, 2^64) its uint64 bits, which a
  // cast to uint64 (what integer fills do) turns back into the value.
  std::int64_t to_int() const { return i_; }
  // The integer part is in [2^63, 2^64): only uint64 holds it exactly.
  bool beyond_int64() const { return beyond_int64_; }
  std::uint64_t to_uint() const { return static_cast<std::uint64_t>(i_); }

 private:
  bool is_int_;
  double f_;
  std::int64_t i_ = 0;
  bool beyond_int64_ = false;
};

// Throws ValueError unless `v` fits an element of `t` (`what` names where it
// goes): an integer type takes a value in its range (compared exactly, in
// integers), a float only when it is finite and its integer part fits;
// floating types take any number.
inline void check_fits(const Scalar& v, DType t, const std::string& what) {
  if (is_floating(t) || t == DType::Bool) return;
  const int bits = static_cast<int>(8 * element_size(t));
  const bool is_unsigned = t == DType::UInt8 || t == DType::UInt16 || t == DType::UInt32 || t == DType::UInt64;
  std::string shown;
  if (!v.is_integral()) {
    const double lo = is_unsigned ? 0.0 : -std::ldexp(1.0, bits - 1);
    const double hi = std::ldexp(1.0, bits - (is_unsigned ? 0 : 1));  // exclusive; powers of two are exact
    double d = std::trunc(v.to_double());
    if (std::isfinite(d) && d >= lo && d < hi) return;
    shown = std::to_string(v.to_double());
  } else if (v.beyond_int64()) {
    if (t == DType::UInt64) return;
    shown = std::to_string(v.to_uint());
  } else {
    const std::int64_t i = v.to_int();
    const bool ok = is_unsigned ? i >= 0 && (bits == 64 || i < (std::int64_t{1} << bits))
                                : bits == 64 || (i >= -(std::int64_t{1} << (bits - 1)) && i < (std::int64_t{1} << (bits - 1)));
    if (ok) return;
    shown = std::to_string(i);
  }
  throw ValueError(what + ": " + shown + " does not fit " + dtype_name(t) + " without overflow");
}

}  // namespace bronze
