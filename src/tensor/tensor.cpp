// Tensor views, creation and host transfers. Arithmetic lives in ops.cpp.
#include "bronze/tensor.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "bronze/error.hpp"
#include "runtime/device_impl.hpp"
#include "tensor/internal.hpp"
#include "tensor/storage.hpp"

namespace bronze {

Shape contiguous_strides(const Shape& shape) { return runtime::contiguous_strides(shape); }

namespace {
// NumPy's limit: more dimensions break the array protocols (N20).
void check_dims(const Shape& shape) {
  if (shape.size() > static_cast<std::size_t>(kMaxDims))
    throw ValueError("a tensor has at most " + std::to_string(kMaxDims) + " dimensions (NumPy's limit), got " +
                     std::to_string(shape.size()));
}

// The bytes [lo, hi) a view with non-negative strides touches.
std::pair<const char*, const char*> byte_range(const runtime::View& v) {
  std::int64_t last = 0;
  for (std::size_t i = 0; i < v.shape.size(); ++i) last += (v.shape[i] - 1) * v.strides[i];
  const auto* lo = static_cast<const char*>(v.data);
  return {lo, lo + (last + 1) * static_cast<std::int64_t>(element_size(v.dtype))};
}

// Every element has its own address and together they fill their range
// (torch's is_non_overlapping_and_dense), so two such views over one range
// either match element for element or cross.
bool dense(const runtime::View& v) {
  std::vector<std::pair<std::int64_t, std::int64_t>> dims;  // (stride, size) of the dims that are not 1
  for (std::size_t i = 0; i < v.shape.size(); ++i)
    if (v.shape[i] != 1) dims.emplace_back(v.strides[i], v.shape[i]);
  std::sort(dims.begin(), dims.end());
  std::int64_t expect = 1;
  for (auto& [stride, size] : dims) {
    if (stride != expect) return false;
    expect *= size;
  }
  return true;
}
}  // namespace

std::shared_ptr<StorageImpl> allocate_storage(const Device& d, std::size_t nbytes, bool host_visible) {
  auto& dev = runtime::device_impl(d);
  auto s = std::make_shared<StorageImpl>();
  s->device = d;
  s->nbytes = nbytes;
  s->host_visible = host_visible || dev.memory_is_host_visible();
  if (nbytes > 0) {
    s->allocator = host_visible ? &dev.host_visible_allocator() : &dev.allocator();
    s->block = s->allocator->allocate(nbytes, *runtime::current_stream(d));
    s->data = runtime::CachingAllocator::block_ptr(s->block);
  }
  return s;
}

Tensor::Tensor(std::shared_ptr<StorageImpl> storage, std::int64_t offset, Shape shape, Shape strides,
               DType dtype)
    : storage_(std::move(storage)), offset_(offset), shape_(std::move(shape)),
      strides_(std::move(strides)), dtype_(dtype) {}

Device Tensor::device() const {
  if (!storage_) throw Error("tensor is undefined");
  return storage_->device;
}

std::int64_t Tensor::numel() const {
  return std::accumulate(shape_.begin(), shape_.end(), std::int64_t{1}, std::multiplies<>());
}

bool Tensor::is_host_visible() const {
  if (!storage_) throw Error("tensor is undefined");
  return storage_->host_visible;
}

bool Tensor::is_contiguous() const { return detail::view_of(*this).contiguous(); }

void* Tensor::data_ptr() const {
  if (!storage_) throw Error("tensor is undefined");
  if (!storage_->data) return nullptr;
  return static_cast<char*>(storage_->data) + offset_ * static_cast<std::int64_t>(element_size());
}

Tensor Tensor::reshape(const Shape& shape) const {
  check_dims(shape);
  Shape s = shape;
  std::int64_t known = 1;
  int infer = -1;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == -1) {
      if (infer >= 0) throw ValueError("reshape: only one dimension can be -1");
      infer = static_cast<int>(i);
    } else if (s[i] < 0) {
      throw ValueError("reshape: negative dimension " + std::to_string(s[i]));
    } else {
      known *= s[i];
    }
  }
  if (infer >= 0) {
    if (known == 0 || numel() % known != 0)
      throw ValueError("reshape: cannot infer the -1 dimension for " + std::to_string(numel()) + " elements");
    s[infer] = numel() / known;
    known *= s[infer];
  }
  if (known != numel())
    throw ValueError("reshape: shape has " + std::to_string(known) + " elements, tensor has " +
                     std::to_string(numel()));
  const Tensor& base = is_contiguous() ? *this : contiguous();
  return Tensor(base.storage_, base.offset_, s, contiguous_strides(s), dtype_);
}

Tensor Tensor::t() const {
  if (dim() != 2) throw ValueError("t() needs a 2-D tensor, got " + std::to_string(dim()) + "-D");
  return Tensor(storage_, offset_, {shape_[1], shape_[0]}, {strides_[1], strides_[0]}, dtype_);
}

Tensor Tensor::contiguous() const {
  if (is_contiguous()) return *this;
  return clone();
}

Tensor Tensor::clone() const {
  Tensor out = empty(shape_, dtype_, device());
  out.copy_(*this);
  return out;
}

Tensor Tensor::to(const Device& d) const {
  if (d == device()) return *this;
  Tensor out = empty(shape_, dtype_, d);
  out.copy_(*this);
  return out;
}

Tensor Tensor::to(DType t) const {
  if (t == dtype_) return *this;
  Tensor out = empty(shape_, t, device());
  out.copy_(*this);
  return out;
}

Tensor& Tensor::copy_(const Tensor& src) {
  if (!defined() || !src.defined()) throw Error("copy_: tensor is undefined");
  Shape bshape;
  try {
    bshape = detail::broadcast_shapes(shape_, src.shape_);
  } catch (const ValueError&) {
    // reported below, with copy_'s own wording
  }
  if (bshape != shape_)
    throw ValueError("copy_: source of shape " + detail::shape_str(src.shape_) +
                     " does not broadcast to " + detail::shape_str(shape_));
  if (numel() == 0) return *this;
  if (src.device() != device()) {
    // Through the host: the source is read on its own stream, written on ours.
    Tensor host_src = src.contiguous();
    auto staging = std::make_shared<std::vector<std::uint8_t>>(host_src.nbytes());
    detail::read_to_host(host_src, staging->data());
    Tensor dst_tmp = empty(src.shape_, src.dtype_, device());
    auto& dev = runtime::device_impl(device());
    dev.copy_from_host(*runtime::current_stream(device()), dst_tmp.data_ptr(), staging->data(),
                       staging->size(), staging);
    return copy_(dst_tmp);
  }
  auto& dev = runtime::device_impl(device());
  const runtime::View dst_view = detail::view_of(*this), src_view = detail::expanded_view(src, shape_);
  const auto [dlo, dhi] = byte_range(dst_view);
  const auto [slo, shi] = byte_range(src_view);
  if (dlo < shi && slo < dhi) {  // one memory under both: an elementwise copy would read what it wrote
    if (dst_view.data == src_view.data && dtype_ == src.dtype_ && dst_view.strides == src_view.strides)
      return *this;  // the same elements: nothing to do
    if (dense(dst_view) && dense(src_view))  // torch's rule: overlapping dense views are refused
      throw ValueError(
          "copy_: unsupported operation: some elements of the input tensor and the written-to tensor refer to a "
          "single memory location; clone() the source first");
    return copy_(src.clone());  // views torch cannot judge: through a temporary, always right
  }
  dev.copy(*runtime::current_stream(device()), dst_view, src_view);
  return *this;
}

Tensor& Tensor::fill_(Scalar v) {
  check_fits(v, dtype(), "fill value");  // as torch: 300 into uint8 is an error, not 44
  if (numel() == 0) return *this;
  runtime::device_impl(device()).fill(*runtime::current_stream(device()), detail::view_of(*this), v);
  return *this;
}

namespace {
Tensor& random_into(Tensor& t, runtime::RandomParams p) {
  if (t.numel() == 0) return t;
  Device d = t.device();
  auto& dev = runtime::device_impl(d);
  p.philox = dev.generator().reserve(static_cast<std::uint64_t>(t.numel()), p.per_block(t.dtype()));
  if (t.is_contiguous()) {
    dev.random(*runtime::current_stream(d), detail::view_of(t), p);
  } else {  // numbers are defined on the contiguous order
    Tensor tmp = empty(t.shape(), t.dtype(), d);
    dev.random(*runtime::current_stream(d), detail::view_of(tmp), p);
    t.copy_(tmp);
  }
  return t;
}
}  // namespace

namespace {
// The largest value of floating dtype t below b (finite, within t's range).
double largest_below(double b, DType t) {
  switch (t) {
    case DType::Float64: return std::nextafter(b, -INFINITY);
    case DType::Float32: {
      float f = static_cast<float>(b);
      if (static_cast<double>(f) >= b) f = std::nextafter(f, -INFINITY);
      return f;
    }
    default: {  // 16-bit formats: step the bits of their nearest value down
      auto step = [b](auto v) {
        if (static_cast<double>(static_cast<float>(v)) >= b) {
          const std::uint16_t mag = v.bits & 0x7fffu, sign = v.bits & 0x8000u;
          v.bits = sign ? static_cast<std::uint16_t>(v.bits + 1)
                        : mag == 0 ? std::uint16_t{0x8001u} : static_cast<std::uint16_t>(v.bits - 1);
        }
        return static_cast<double>(static_cast<float>(v));
      };
      return t == DType::Float16 ? step(Half(static_cast<float>(b))) : step(BFloat16(static_cast<float>(b)));
    }
  }
}

// torch's bounds: a floating dtype's finite range; integers and floats
// drawn by random_ within the values the dtype holds exactly.
double dtype_max(DType t) {
  switch (t) {
    case DType::Float16: return 65504.0;
    case DType::BFloat16: return 3.3895313892515355e38;
    case DType::Float32: return 3.4028234663852886e38;
    default: return 1.7976931348623157e308;
  }
}
}  // namespace

Tensor& Tensor::uniform_(double from, double to) {
  if (!is_floating(dtype_)) throw TypeError(std::string("uniform_ needs a floating tensor, got ") + dtype_name(dtype_));
  const double hi = dtype_max(dtype_);
  if (!(from >= -hi && from <= hi)) throw ValueError("uniform_: from is out of bounds for " + std::string(dtype_name(dtype_)));
  if (!(to >= -hi && to <= hi)) throw ValueError("uniform_: to is out of bounds for " + std::string(dtype_name(dtype_)));
  if (!(from <= to)) throw ValueError("uniform_ expects from <= to");
  if (!(to - from <= hi))
    throw ValueError("uniform_ expects to - from <= the largest " + std::string(dtype_name(dtype_)) + ", got from=" +
                     std::to_string(from) + " and to=" + std::to_string(to));
  runtime::RandomParams p;
  p.kind = runtime::RandomKind::Uniform;
  p.a = from;
  p.b = to;
  // [from, to): a value that rounds up to `to` in the dtype is taken as the one below it.
  p.cap = from == to ? to : std::max(from, largest_below(to, dtype_));
  return random_into(*this, p);
}

Tensor& Tensor::normal_(double mean, double std) {
  if (!is_floating(dtype_)) throw TypeError(std::string("normal_ needs a floating tensor, got ") + dtype_name(dtype_));
  if (!(std >= 0.0)) throw ValueError("normal_ expects std >= 0, got " + std::to_string(std));
  runtime::RandomParams p;
  p.kind = runtime::RandomKind::Normal;
  p.a = mean;
  p.b = std;
  return random_into(*this, p);
}

Tensor& Tensor::random_(std::int64_t low, std::int64_t high) {
  if (high <= low)
    throw ValueError("random_ expects low < high, got [" + std::to_string(low) + ", " + std::to_string(high) + ")");
  // torch's bounds: from and to - 1 are values of the dtype (for floating
  // dtypes, integers it holds exactly: |x| <= 2^digits).
  const std::int64_t last = high - 1;
  auto bounds = [&](std::int64_t x, const char* name) {
    bool ok;
    if (is_floating(dtype_)) {
      const int digits = dtype_ == DType::Float16 ? 11 : dtype_ == DType::BFloat16 ? 8 : dtype_ == DType::Float32 ? 24 : 53;
      const std::int64_t lim = std::int64_t{1} << digits;
      ok = x >= -lim && x <= lim;
    } else if (dtype_ == DType::Bool) {
      ok = x == 0 || x == 1;
    } else {
      try {
        check_fits(Scalar(x), dtype_, name);
        ok = true;
      } catch (const ValueError&) {
        ok = false;
      }
    }
    if (!ok) throw ValueError(std::string("random_: ") + name + " is out of bounds for " + dtype_name(dtype_));
  };
  bounds(low, "from");
  bounds(last, "to - 1");
  runtime::RandomParams p;
  p.kind = runtime::RandomKind::Int;
  p.low = low;
  p.high = high;
  return random_into(*this, p);
}

void Tensor::record_stream(const Stream& s) const {
  if (storage_ && storage_->block) storage_->allocator->record_stream(storage_->block, s.shared_impl());
}

void Tensor::copy_to_host(void* dst) const {
  if (nbytes() > 0) detail::read_to_host(contiguous(), dst);
}

std::vector<double> Tensor::to_double_vector() const {
  Tensor c = to(DType::Float64).contiguous();
  std::vector<double> out(static_cast<std::size_t>(c.numel()));
  if (!out.empty()) detail::read_to_host(c, out.data());
  return out;
}

double Tensor::item() const {
  if (numel() != 1)
    throw ValueError("item() needs a tensor with one element, got " + std::to_string(numel()));
  return to_double_vector()[0];
}

// ---- creation ----

Tensor empty(const Shape& shape, DType dtype, std::optional<Device> d, bool host_visible) {
  check_dims(shape);
  for (auto s : shape)
    if (s < 0) throw ValueError("negative dimension " + std::to_string(s) + " in shape " + detail::shape_str(shape));
  // Sizes are checked, never wrapped: 2^62 float32 elements is no zero-byte tensor.
  std::int64_t n = 1;
  std::size_t bytes = 0;
  for (auto s : shape)
    if (__builtin_mul_overflow(n, s, &n))
      throw ValueError("shape " + detail::shape_str(shape) + " has more than 2^63 elements");
  if (__builtin_mul_overflow(static_cast<std::size_t>(n), element_size(dtype), &bytes) ||
      bytes > static_cast<std::size_t>(INT64_MAX))
    throw ValueError("shape " + detail::shape_str(shape) + " of " + dtype_name(dtype) + " is " + std::to_string(n) +
                     " elements, more than 2^63 bytes");
  Device dev = runtime::resolve(d);
  auto storage = allocate_storage(dev, bytes, host_visible);
  return Tensor(std::move(storage), 0, shape, contiguous_strides(shape), dtype);
}

Tensor zeros(const Shape& shape, DType dtype, std::optional<Device> d) { return full(shape, 0, dtype, d); }
Tensor ones(const Shape& shape, DType dtype, std::optional<Device> d) { return full(shape, 1, dtype, d); }

Tensor full(const Shape& shape, Scalar value, DType dtype, std::optional<Device> d) {
  Tensor t = empty(shape, dtype, d);
  t.fill_(value);
  return t;
}

Tensor arange(Scalar start, Scalar end, Scalar step, DType dtype, std::optional<Device> d) {
  const bool exact = start.is_integral() && end.is_integral() && step.is_integral() && !is_floating(dtype);
  std::int64_t n;
  if (exact) {
    const __int128 span = static_cast<__int128>(end.to_int()) - start.to_int(), by = step.to_int();
    if (by == 0) throw ValueError("arange: step must be nonzero");
    if ((span < 0 && by > 0) || (span > 0 && by < 0))
      throw ValueError("arange: the step's sign does not lead from start to end");
    n = static_cast<std::int64_t>((span + by + (by > 0 ? -1 : 1)) / by);  // ceil(span / by), below 2^64
    if (n > 0) {
      check_fits(start, dtype, "arange start");
      check_fits(Scalar(static_cast<std::int64_t>(start.to_int() + static_cast<__int128>(n - 1) * by)), dtype,
                 "arange's last value");
    }
  } else {
    const double a = start.to_double(), b = end.to_double(), by = step.to_double();
    if (by == 0.0) throw ValueError("arange: step must be nonzero");
    if (!std::isfinite(a) || !std::isfinite(b) || !std::isfinite(by))
      throw ValueError("arange: start, end and step must be finite");
    if ((b - a) / by < 0) throw ValueError("arange: the step's sign does not lead from start to end");
    const double len = std::ceil((b - a) / by);
    if (!(len < 9.2e18)) throw ValueError("arange: " + std::to_string(len) + " elements are more than 2^63");
    n = static_cast<std::int64_t>(len);
  }
  Tensor t = empty({n}, dtype, d);
  if (n > 0) runtime::device_impl(t.device()).arange(*runtime::current_stream(t.device()), detail::view_of(t), start, step);
  return t;
}

Tensor rand(const Shape& shape, DType dtype, std::optional<Device> d) {
  Tensor t = empty(shape, dtype, d);
  return t.uniform_(0.0, 1.0);
}

Tensor randn(const Shape& shape, DType dtype, std::optional<Device> d) {
  Tensor t = empty(shape, dtype, d);
  return t.normal_(0.0, 1.0);
}

Tensor randint(std::int64_t low, std::int64_t high, const Shape& shape, DType dtype, std::optional<Device> d) {
  Tensor t = empty(shape, dtype, d);
  return t.random_(low, high);
}

Tensor from_blob(void* data, const Shape& shape, const Shape& strides, DType dtype, Device d,
                 std::function<void()> owner_release) {
  check_dims(shape);
  Shape st = strides.empty() ? contiguous_strides(shape) : strides;
  if (st.size() != shape.size()) throw ValueError("from_blob: shape and strides differ in length");
  std::int64_t span = 1;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0) throw ValueError("from_blob: negative dimension");
    if (st[i] < 0) throw ValueError("from_blob: negative strides are not supported");
    if (shape[i] == 0) span = 0;
  }
  if (span != 0)
    for (std::size_t i = 0; i < shape.size(); ++i) span += (shape[i] - 1) * st[i];
  auto s = std::make_shared<StorageImpl>();
  s->device = d;
  s->data = data;
  s->nbytes = static_cast<std::size_t>(span) * element_size(dtype);
  // Foreign memory of a device with separate device memory: not known to be mapped.
  s->host_visible = runtime::device_impl(d).memory_is_host_visible();
  s->release = std::move(owner_release);
  return Tensor(std::move(s), 0, shape, st, dtype);
}

Tensor from_host(const void* data, const Shape& shape, DType dtype, std::optional<Device> d) {
  Tensor t = empty(shape, dtype, d);
  if (t.nbytes() == 0) return t;
  // Staged so the caller's buffer may go away before the queued copy runs.
  auto staging = std::make_shared<std::vector<std::uint8_t>>(
      static_cast<const std::uint8_t*>(data), static_cast<const std::uint8_t*>(data) + t.nbytes());
  runtime::device_impl(t.device())
      .copy_from_host(*runtime::current_stream(t.device()), t.data_ptr(), staging->data(), t.nbytes(), staging);
  return t;
}

namespace detail {

runtime::View view_of(const Tensor& t) {
  return runtime::View{t.data_ptr(), t.dtype(), t.shape(), t.strides(), queued_use(t.storage())};
}

runtime::View expanded_view(const Tensor& t, const Shape& shape) {
  runtime::View v = view_of(t);
  std::size_t lead = shape.size() - t.shape().size();
  Shape st(shape.size(), 0);
  for (std::size_t i = 0; i < t.shape().size(); ++i)
    st[lead + i] = t.shape()[i] == 1 && shape[lead + i] != 1 ? 0 : t.strides()[i];
  v.shape = shape;
  v.strides = st;
  return v;
}

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  std::size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (std::size_t i = 0; i < n; ++i) {
    std::int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())];
    std::int64_t y = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (x != y && x != 1 && y != 1)
      throw ValueError("shapes " + shape_str(a) + " and " + shape_str(b) + " do not broadcast");
    out[i] = x == 1 ? y : x;
  }
  return out;
}

std::string shape_str(const Shape& s) {
  std::string r = "(";
  for (std::size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + (s.size() == 1 ? ",)" : ")");
}

void read_to_host(const Tensor& contiguous, void* dst) {
  Device d = contiguous.device();
  auto& dev = runtime::device_impl(d);
  // Producers may sit on any stream of the device: wait for all of them
  // (their failures are their streams' to report).
  dev.wait_all();
  auto stream = runtime::current_stream(d);
  dev.copy_to_host(*stream, dst, contiguous.data_ptr(), contiguous.nbytes(), queued_use(contiguous.storage()));
  stream->synchronize();
}

}  // namespace detail
}  // namespace bronze
