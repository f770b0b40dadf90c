// A number passed to a tensor op: kept as integer or floating so int64 fills
// lose no precision.
#pragma once

#include <cstdint>
#include <type_traits>

namespace bronze {

class Scalar {
 public:
  Scalar(double v) : is_int_(false), f_(v), i_(static_cast<std::int64_t>(v)) {}  // NOLINT
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

}  // namespace bronze
