// Helpers shared by the tensor layer's files.
#pragma once

#include <string>

#include "bronze/tensor.hpp"
#include "runtime/view.hpp"

namespace bronze::detail {

runtime::View view_of(const Tensor& t);
// t's view broadcast to `shape` (stride 0 along expanded dims).
runtime::View expanded_view(const Tensor& t, const Shape& shape);
Shape broadcast_shapes(const Shape& a, const Shape& b);  // throws ValueError
std::string shape_str(const Shape& s);
// Copies a contiguous tensor's bytes to host memory; returns when done.
void read_to_host(const Tensor& contiguous, void* dst);

}  // namespace bronze::detail
