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
  // The integer part of a finite double within int64 (0 otherwise: a NaN or
  // an infinity has none, and converting it would be undefined).
  Scalar(double v)  // NOLINT
      : is_int_(false), f_(v), i_(std::isfinite(v) && std::fabs(v) < 9.2e18 ? static_cast<std::int64_t>(v) : 0) {}
  Scalar(float v) : Scalar(static_cast<double>(v)) {}                            // NOLINT
  Scalar(bool v) : is_int_(true), f_(v ? 1.0 : 0.0), i_(v ? 1 : 0) {}            // NOLINT
  template <typename T, typename = std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>>>
  Scalar(T v) : is_int_(true), f_(static_cast<double>(v)), i_(static_cast<std::int64_t>(v)) {}  // NOLINT

  bool is_integral() const { return is_int_; }
  double to_double() const { return f_; }
  std::int64_t to_int() const { return i_; }

 private:
  bool is_int_;
  double f_;
  std::int64_t i_;
};

// Throws ValueError unless `v` fits an element of `t` (`what` names where it
// goes): an integer type takes a value in its range, a float only when it
// is finite and its integer part fits; floating types take any number.
inline void check_fits(const Scalar& v, DType t, const std::string& what) {
  if (is_floating(t) || t == DType::Bool) return;
  const std::size_t bits = 8 * element_size(t);
  const bool is_unsigned = t == DType::UInt8 || t == DType::UInt16 || t == DType::UInt32 || t == DType::UInt64;
  const double lo = is_unsigned ? 0.0 : -std::ldexp(1.0, static_cast<int>(bits) - 1);
  const double hi = std::ldexp(1.0, static_cast<int>(bits) - (is_unsigned ? 0 : 1));  // exclusive
  std::string shown;
  if (!v.is_integral()) {
    double d = std::trunc(v.to_double());
    if (std::isfinite(d) && d >= lo && d < hi) return;
    shown = std::to_string(v.to_double());
  } else {
    std::int64_t i = v.to_int();
    bool ok = is_unsigned ? i >= 0 && (bits == 64 || static_cast<double>(i) < hi)
                          : static_cast<double>(i) >= lo && static_cast<double>(i) < hi;
    if (ok) return;
    shown = std::to_string(i);
  }
  throw ValueError(what + ": " + shown + " does not fit " + dtype_name(t) + " without overflow");
}

}  // namespace bronze
