// Elementwise arithmetic and matrix products: type promotion, broadcasting
// and checks here; the device's kernels do the work.
#include <cstdint>

#include "bronze/error.hpp"
#include "bronze/tensor.hpp"
#include "runtime/device_impl.hpp"
#include "tensor/internal.hpp"

namespace bronze {
namespace {
using runtime::BinaryOp;

bool is_division(BinaryOp op) { return op == BinaryOp::Div || op == BinaryOp::RDiv; }

Tensor binary_tt(BinaryOp op, const Tensor& a, const Tensor& b) {
  if (!a.defined() || !b.defined()) throw Error("arithmetic on an undefined tensor");
  if (a.device() != b.device())
    throw ValueError("operands are on different devices: " + a.device().str() + " and " + b.device().str());
  DType t = promote_types(a.dtype(), b.dtype());
  if (is_division(op) && !is_floating(t)) t = DType::Float32;  // true division
  if (t == DType::Bool && op != BinaryOp::Mul) t = DType::Int64;
  Shape shape = detail::broadcast_shapes(a.shape(), b.shape());
  Tensor x = a.to(t), y = b.to(t);
  Tensor out = empty(shape, t, a.device());
  if (out.numel() == 0) return out;
  runtime::device_impl(a.device())
      .binary(*runtime::current_stream(a.device()), op, detail::view_of(out),
              detail::expanded_view(x, shape), detail::expanded_view(y, shape));
  return out;
}

Tensor binary_ts(BinaryOp op, const Tensor& a, Scalar b) {
  if (!a.defined()) throw Error("arithmetic on an undefined tensor");
  DType t = a.dtype();
  if (!is_floating(t) && (!b.is_integral() || is_division(op))) t = DType::Float32;
  if (t == DType::Bool) t = DType::Int64;
  Tensor x = a.to(t);
  Tensor out = empty(a.shape(), t, a.device());
  if (out.numel() == 0) return out;
  runtime::device_impl(a.device())
      .binary_scalar(*runtime::current_stream(a.device()), op, detail::view_of(out), detail::view_of(x), b);
  return out;
}

// A BLAS takes row-major or transposed operands with 32-bit leading
// dimensions; anything else is copied (a copy's leading dimension is a size,
// which mm has checked).
Tensor blas_ready(const Tensor& t) {
  const Shape& st = t.strides();
  bool ok = (st[1] == 1 && st[0] >= t.shape()[1]) || (st[0] == 1 && st[1] >= t.shape()[0]);
  ok = ok && st[0] <= INT32_MAX && st[1] <= INT32_MAX;
  return ok ? t : t.clone();
}
}  // namespace

Tensor add(const Tensor& a, const Tensor& b) { return binary_tt(BinaryOp::Add, a, b); }
Tensor sub(const Tensor& a, const Tensor& b) { return binary_tt(BinaryOp::Sub, a, b); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary_tt(BinaryOp::Mul, a, b); }
Tensor div(const Tensor& a, const Tensor& b) { return binary_tt(BinaryOp::Div, a, b); }
Tensor add(const Tensor& a, Scalar b) { return binary_ts(BinaryOp::Add, a, b); }
Tensor sub(const Tensor& a, Scalar b) { return binary_ts(BinaryOp::Sub, a, b); }
Tensor mul(const Tensor& a, Scalar b) { return binary_ts(BinaryOp::Mul, a, b); }
Tensor div(const Tensor& a, Scalar b) { return binary_ts(BinaryOp::Div, a, b); }
Tensor rsub(const Tensor& a, Scalar b) { return binary_ts(BinaryOp::RSub, a, b); }
Tensor rdiv(const Tensor& a, Scalar b) { return binary_ts(BinaryOp::RDiv, a, b); }

Tensor mm(const Tensor& a, const Tensor& b) {
  if (!a.defined() || !b.defined()) throw Error("mm on an undefined tensor");
  if (a.dim() != 2 || b.dim() != 2)
    throw ValueError("mm needs 2-D tensors, got " + std::to_string(a.dim()) + "-D and " +
                     std::to_string(b.dim()) + "-D");
  if (a.dtype() != b.dtype())
    throw TypeError(std::string("mm needs operands of one dtype, got ") + dtype_name(a.dtype()) + " and " +
                    dtype_name(b.dtype()));
  if (!is_floating(a.dtype()))
    throw TypeError(std::string("mm needs floating tensors, got ") + dtype_name(a.dtype()));
  if (a.shape()[1] != b.shape()[0])
    throw ValueError("mm: shapes " + detail::shape_str(a.shape()) + " and " + detail::shape_str(b.shape()) +
                     " cannot be multiplied");
  if (a.device() != b.device()) throw ValueError("mm: operands are on different devices");
  // BLAS and cuBLAS take int sizes: a size past 2^31 - 1 would be narrowed (N34).
  for (std::int64_t size : {a.shape()[0], a.shape()[1], b.shape()[1]})
    if (size > INT32_MAX)
      throw ValueError("mm: shapes " + detail::shape_str(a.shape()) + " and " + detail::shape_str(b.shape()) +
                       " have a size over 2^31 - 1, the most the BLAS takes");
  Tensor out = empty({a.shape()[0], b.shape()[1]}, a.dtype(), a.device());
  if (out.numel() == 0) return out;
  if (a.shape()[1] == 0) return out.zero_();
  runtime::device_impl(a.device())
      .matmul(*runtime::current_stream(a.device()), detail::view_of(out), detail::view_of(blas_ready(a)),
              detail::view_of(blas_ready(b)));
  return out;
}

}  // namespace bronze
