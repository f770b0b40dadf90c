// Tensor: a strided view of device memory that comes from the caching
// allocator (or from an external owner, for zero-copy imports). Ops are
// queued on the current stream of the tensor's device.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "bronze/device.hpp"
#include "bronze/dtype.hpp"
#include "bronze/scalar.hpp"
#include "bronze/stream.hpp"

namespace bronze {

using Shape = std::vector<std::int64_t>;
// Creation refuses more dimensions (ValueError), as NumPy does.
constexpr int kMaxDims = 64;
struct StorageImpl;

class Tensor {
 public:
  Tensor() = default;  // undefined tensor

  bool defined() const { return storage_ != nullptr; }
  DType dtype() const { return dtype_; }
  Device device() const;
  const Shape& shape() const { return shape_; }
  const Shape& strides() const { return strides_; }  // in elements
  std::int64_t dim() const { return static_cast<std::int64_t>(shape_.size()); }
  std::int64_t numel() const;
  std::size_t element_size() const { return bronze::element_size(dtype_); }
  std::size_t nbytes() const { return static_cast<std::size_t>(numel()) * element_size(); }
  std::int64_t storage_offset() const { return offset_; }
  bool is_contiguous() const;
  // The host reads and writes its memory directly (every CPU tensor; CUDA
  // tensors made with host_visible = true, in pinned mapped host memory).
  bool is_host_visible() const;
  // Address of element 0 on the device. Reading it from the host is valid only
  // for host-visible devices and after the producing work finished.
  void* data_ptr() const;
  const std::shared_ptr<StorageImpl>& storage() const { return storage_; }

  // Same storage, new shape (needs a contiguous tensor); one -1 dim is inferred.
  Tensor reshape(const Shape& shape) const;
  Tensor t() const;  // transpose of a 2-D tensor (a view)
  Tensor contiguous() const;
  Tensor clone() const;
  // Returns *this when already on `d`; otherwise a copy on `d`.
  Tensor to(const Device& d) const;
  Tensor to(DType t) const;

  Tensor& copy_(const Tensor& src);  // broadcasts src, converts dtype
  Tensor& fill_(Scalar v);
  Tensor& zero_() { return fill_(0); }
  Tensor& uniform_(double from = 0.0, double to = 1.0);
  Tensor& normal_(double mean = 0.0, double std = 1.0);
  Tensor& random_(std::int64_t low, std::int64_t high);  // integers in [low, high)

  // Marks the tensor as used on `s`, so its memory is not reused until the
  // work queued there so far finished (torch's record_stream).
  void record_stream(const Stream& s) const;

  // Host copies (wait for the device first). copy_to_host writes nbytes()
  // bytes in C order.
  void copy_to_host(void* dst) const;
  std::vector<double> to_double_vector() const;
  double item() const;  // as a double (Python's item() gives an int or bool by dtype)

  // Internal: wraps storage in a view.
  Tensor(std::shared_ptr<StorageImpl> storage, std::int64_t offset, Shape shape, Shape strides,
         DType dtype);

 private:
  std::shared_ptr<StorageImpl> storage_;
  std::int64_t offset_ = 0;
  Shape shape_;
  Shape strides_;
  DType dtype_ = DType::Float32;
};

// Creation (device: the current device when not given). host_visible: on
// CUDA, pinned host memory mapped into the device (kernels use it in place
// over the bus; host_alias views it without a copy), from its own pool.
Tensor empty(const Shape& shape, DType dtype = DType::Float32, std::optional<Device> d = std::nullopt,
             bool host_visible = false);
Tensor zeros(const Shape& shape, DType dtype = DType::Float32, std::optional<Device> d = std::nullopt);
Tensor ones(const Shape& shape, DType dtype = DType::Float32, std::optional<Device> d = std::nullopt);
Tensor full(const Shape& shape, Scalar value, DType dtype = DType::Float32,
            std::optional<Device> d = std::nullopt);
// Integer start, end and step into an integer dtype count exactly (int64
// throughout); otherwise the values are start + i * step in double.
Tensor arange(Scalar start, Scalar end, Scalar step = 1, DType dtype = DType::Float32,
              std::optional<Device> d = std::nullopt);
Tensor rand(const Shape& shape, DType dtype = DType::Float32, std::optional<Device> d = std::nullopt);
Tensor randn(const Shape& shape, DType dtype = DType::Float32, std::optional<Device> d = std::nullopt);
Tensor randint(std::int64_t low, std::int64_t high, const Shape& shape, DType dtype = DType::Int64,
               std::optional<Device> d = std::nullopt);
// Wraps memory owned elsewhere (zero copy). `owner_release` runs when the
// last tensor using it goes away. Strides in elements; empty = contiguous.
Tensor from_blob(void* data, const Shape& shape, const Shape& strides, DType dtype, Device d,
                 std::function<void()> owner_release);
// Copies host data into a new tensor.
Tensor from_host(const void* data, const Shape& shape, DType dtype,
                 std::optional<Device> d = std::nullopt);

// Elementwise arithmetic with broadcasting and torch's type promotion
// (integer / integer gives float32).
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor add(const Tensor& a, Scalar b);
Tensor sub(const Tensor& a, Scalar b);
Tensor mul(const Tensor& a, Scalar b);
Tensor div(const Tensor& a, Scalar b);
Tensor rsub(const Tensor& a, Scalar b);  // b - a
Tensor rdiv(const Tensor& a, Scalar b);  // b / a
// Matrix product of 2-D floating tensors through the device's BLAS.
Tensor mm(const Tensor& a, const Tensor& b);

inline Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }

Shape contiguous_strides(const Shape& shape);

}  // namespace bronze
