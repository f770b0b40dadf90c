// The Tensor type, creation functions and the array protocols (DLPack,
// __array_interface__, NumPy conversion).
#include <nanobind/ndarray.h>
#include <cstring>
#include <nanobind/stl/function.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bronze/error.hpp"
#include "bronze/memory.hpp"
#include "bronze/tensor.hpp"
#include "common.hpp"

namespace bronze::py {
namespace {
using release_gil = nb::call_guard<nb::gil_scoped_release>;
using OptDevice = std::optional<Device>;
namespace dl = nb::dlpack;

dl::dtype to_dl(DType t) {
  switch (t) {
    case DType::Bool: return {static_cast<std::uint8_t>(dl::dtype_code::Bool), 8, 1};
    case DType::UInt8: return nb::dtype<std::uint8_t>();
    case DType::Int8: return nb::dtype<std::int8_t>();
    case DType::Int16: return nb::dtype<std::int16_t>();
    case DType::Int32: return nb::dtype<std::int32_t>();
    case DType::Int64: return nb::dtype<std::int64_t>();
    case DType::Float16: return {static_cast<std::uint8_t>(dl::dtype_code::Float), 16, 1};
    case DType::BFloat16: return {static_cast<std::uint8_t>(dl::dtype_code::Bfloat), 16, 1};
    case DType::Float32: return nb::dtype<float>();
    case DType::Float64: return nb::dtype<double>();
    case DType::UInt16: return nb::dtype<std::uint16_t>();
    case DType::UInt32: return nb::dtype<std::uint32_t>();
    case DType::UInt64: return nb::dtype<std::uint64_t>();
  }
  throw Error("unknown dtype");
}

DType from_dl(dl::dtype d) {
  if (d.lanes == 1) {
    switch (static_cast<dl::dtype_code>(d.code)) {
      case dl::dtype_code::Bool:
        if (d.bits == 8) return DType::Bool;
        break;
      case dl::dtype_code::UInt:
        if (d.bits == 8) return DType::UInt8;
        if (d.bits == 16) return DType::UInt16;
        if (d.bits == 32) return DType::UInt32;
        if (d.bits == 64) return DType::UInt64;
        if (d.bits == 1) return DType::Bool;
        break;
      case dl::dtype_code::Int:
        if (d.bits == 8) return DType::Int8;
        if (d.bits == 16) return DType::Int16;
        if (d.bits == 32) return DType::Int32;
        if (d.bits == 64) return DType::Int64;
        break;
      case dl::dtype_code::Float:
        if (d.bits == 16) return DType::Float16;
        if (d.bits == 32) return DType::Float32;
        if (d.bits == 64) return DType::Float64;
        break;
      case dl::dtype_code::Bfloat:
        if (d.bits == 16) return DType::BFloat16;
        break;
      default: break;
    }
  }
  throw TypeError("unsupported array element type (DLPack code " + std::to_string(d.code) + ", " +
                  std::to_string(d.bits) + " bits, " + std::to_string(d.lanes) + " lanes)");
}

Device device_of(int dl_type, int dl_id) {
  if (dl_type == nb::device::cpu::value) return Device(DeviceType::CPU, 0);
  if (dl_type == nb::device::cuda::value || dl_type == nb::device::cuda_managed::value)
    return Device(DeviceType::CUDA, dl_id);
  throw TypeError("arrays on DLPack device type " + std::to_string(dl_type) + " are not supported");
}

template <typename Arr>
Tensor wrap_array(const Arr& a, nb::handle owner) {
  Shape shape(a.ndim()), strides(a.ndim());
  for (std::size_t i = 0; i < a.ndim(); ++i) {
    shape[i] = static_cast<std::int64_t>(a.shape(i));
    strides[i] = a.stride(i);
  }
  DType t = from_dl(a.dtype());
  Device d = device_of(a.device_type(), a.device_id());
  owner.inc_ref();
  PyObject* o = owner.ptr();
  return from_blob(const_cast<void*>(static_cast<const void*>(a.data())), shape, strides, t, d,
                   [o] { release_from_any_thread(o); });
}

// A DLPack producer's capsule, asked for as nanobind asks (versioned first,
// unversioned when the producer refuses): importing the capsule itself lets
// nanobind rename it "used_dltensor", so a producer that hands out one
// capsule twice gets a ValueError the second time, not a double free.
nb::object dlpack_capsule(nb::handle obj) {
  if (PyCapsule_CheckExact(obj.ptr()) || nb::isinstance<Tensor>(obj) || !nb::hasattr(obj, "__dlpack__"))
    return nb::borrow(obj);
  nb::object method = obj.attr("__dlpack__");
  nb::object cap;
  try {
    cap = method(nb::arg("max_version") = nb::make_tuple(nb::dlpack::major_version, nb::dlpack::minor_version));
  } catch (nb::python_error& e) {
    if (!e.matches(PyExc_TypeError) && !e.matches(PyExc_BufferError)) throw;
    cap = method();
  }
  if (PyCapsule_CheckExact(cap.ptr())) {
    const char* name = PyCapsule_GetName(cap.ptr());
    if (!name) {
      PyErr_Clear();
      name = "";
    }
    if (std::strncmp(name, "used_", 5) == 0)
      throw ValueError(std::string("this DLPack capsule was already imported (it is named '") + name +
                       "'): a capsule is consumed once; ask the producer for a new one");
  }
  return cap;
}

// Zero-copy import of anything nanobind reads as an array (DLPack, buffer
// protocol). Read-only arrays are copied: kernels may write their arguments.
// The tensor owns the imported ndarray (which owns the producer's memory),
// not the producer object: a producer may hand out memory it does not hold.
Tensor from_array(nb::handle obj) {
  nb::object src = dlpack_capsule(obj);
  nb::ndarray<> rw;
  if (nb::try_cast(src, rw, false)) return wrap_array(rw, nb::cast(rw, nb::rv_policy::reference));  // a capsule holding the import
  nb::ndarray<nb::ro> ro;
  if (nb::try_cast(src, ro, false)) {
    Tensor view = wrap_array(ro, nb::cast(ro, nb::rv_policy::reference));
    return view.clone();
  }
  throw TypeError(std::string("cannot convert an object of type '") + Py_TYPE(obj.ptr())->tp_name +
                  "' to a bronze tensor (it has neither __dlpack__ nor the buffer protocol)");
}

// A nanobind ndarray over the tensor's memory, owning a reference to it:
// the DLPack producer behind Tensor.__dlpack__.
nb::object export_array(const Tensor& t) {
  wait_for_reads(t.device());  // the consumer reads right away (CUDA: on a stream of its own)
  std::vector<std::size_t> shape(t.shape().begin(), t.shape().end());
  auto* keep = new Tensor(t);
  nb::capsule owner(keep, [](void* p) noexcept { delete static_cast<Tensor*>(p); });
  int dev_type = t.device().type == DeviceType::CPU ? nb::device::cpu::value : nb::device::cuda::value;
  nb::ndarray<nb::array_api> arr(t.data_ptr(), t.dim(), shape.data(), owner, t.strides().data(),
                                 to_dl(t.dtype()), dev_type, t.device().index);
  return nb::cast(arr);
}

nb::object to_numpy(const Tensor& t) {
  if (t.dtype() == DType::BFloat16)
    throw TypeError("NumPy has no bfloat16; convert first, e.g. t.to(bronze.float32).numpy()");
  std::size_t n = t.nbytes();
  auto* buf = new std::uint8_t[n ? n : 1];
  nb::capsule owner(buf, [](void* p) noexcept { delete[] static_cast<std::uint8_t*>(p); });
  wait_for_reads(t.device());
  {
    nb::gil_scoped_release g;
    t.copy_to_host(buf);
  }
  std::vector<std::size_t> shape(t.shape().begin(), t.shape().end());
  nb::ndarray<nb::numpy> arr(buf, t.dim(), shape.data(), owner, nullptr, to_dl(t.dtype()));
  return nb::cast(arr);
}

const char* typestr(DType t) {
  switch (t) {
    case DType::Bool: return "|b1";
    case DType::UInt8: return "|u1";
    case DType::Int8: return "|i1";
    case DType::Int16: return "<i2";
    case DType::Int32: return "<i4";
    case DType::Int64: return "<i8";
    case DType::Float16: return "<f2";
    case DType::Float32: return "<f4";
    case DType::Float64: return "<f8";
    case DType::UInt16: return "<u2";
    case DType::UInt32: return "<u4";
    case DType::UInt64: return "<u8";
    case DType::BFloat16: break;
  }
  throw TypeError("NumPy has no bfloat16; convert first, e.g. t.to(bronze.float32)");
}

// The fields __array_interface__ and __cuda_array_interface__ share (v3).
nb::dict interface_dict(const Tensor& t) {
  nb::dict d;
  nb::list shape, strides;
  for (auto s : t.shape()) shape.append(s);
  for (auto s : t.strides()) strides.append(s * static_cast<std::int64_t>(t.element_size()));
  d["shape"] = nb::tuple(shape);
  d["strides"] = nb::tuple(strides);
  d["typestr"] = typestr(t.dtype());
  d["data"] = nb::make_tuple(reinterpret_cast<std::uintptr_t>(t.data_ptr()), false);
  d["version"] = 3;
  return d;
}

nb::dict array_interface(const Tensor& t) {
  if (!t.is_host_visible())
    throw nb::attribute_error(
        "__array_interface__ is only offered by host-visible tensors (CPU, or CUDA with host_visible=True); "
        "use .cpu() first");
  wait_for_reads(t.device());
  nb::dict d = interface_dict(t);
  return d;
}

nb::dict cuda_array_interface(const Tensor& t) {
  if (t.device().type != DeviceType::CUDA)
    throw nb::attribute_error("__cuda_array_interface__ is only offered by CUDA tensors");
  nb::dict d = interface_dict(t);
  // No stream to order against (v3 protocol): the device is synchronized
  // before the pointer is handed out, so the consumer may use any stream.
  d["stream"] = nb::none();
  wait_for_reads(t.device());
  return d;
}

nb::tuple to_tuple(const Shape& s) {
  nb::list l;
  for (auto v : s) l.append(v);
  return nb::tuple(l);
}
// A dimension index in [-ndim, ndim), as torch takes it; IndexError past it.
std::size_t dim_arg(nb::handle h, std::size_t ndim, const char* what) {
  const std::int64_t d = integer_arg(h, what);
  const auto n = static_cast<std::int64_t>(ndim);
  if (d < -n || d >= n)
    throw nb::index_error((std::string(what) + ": dimension " + std::to_string(d) + " is out of range for a " +
                           std::to_string(n) + "-d tensor").c_str());
  return static_cast<std::size_t>(d < 0 ? d + n : d);
}

// A sequence of ints as a shape: a short TypeError for anything else, a
// ValueError for an int past int64.
Shape shape_of(nb::handle dims) {
  Shape shape;
  for (nb::handle d : dims) {
    if (!PyLong_Check(d.ptr()) || PyBool_Check(d.ptr()))
      throw TypeError(std::string("shape entries must be ints, got ") + Py_TYPE(d.ptr())->tp_name);
    int overflow = 0;
    const long long n = PyLong_AsLongLongAndOverflow(d.ptr(), &overflow);
    if (overflow) throw ValueError("shape entry " + nb::cast<std::string>(nb::str(d)) + " is out of range");
    shape.push_back(n);
  }
  return shape;
}

// A shape as torch takes it: ints as separate arguments, or one tuple or
// list of them.
Shape shape_arg(const nb::args& size) {
  if (size.size() == 1 && (PyTuple_Check(size[0].ptr()) || PyList_Check(size[0].ptr()))) return shape_of(size[0]);
  return shape_of(size);
}

// A Python number as a Scalar: bool, int (exactly: int64, or uint64 up to
// 2^64 - 1 where `unsigned_ok`), or anything with __float__. An int past that
// raises, as torch's "Overflow when unpacking long", never becomes a float.
// Returns false (and no Scalar) for an object that is no number.
bool scalar_arg(nb::handle v, const char* what, bool unsigned_ok, Scalar* out) {
  if (PyBool_Check(v.ptr())) {
    *out = Scalar(v.ptr() == Py_True);
    return true;
  }
  if (PyIndex_Check(v.ptr())) {  // int and NumPy integers, exactly
    nb::object i = nb::steal(PyNumber_Index(v.ptr()));
    if (!i.is_valid()) nb::raise_python_error();
    int overflow = 0;
    const long long n = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
    if (!overflow) {
      *out = Scalar(static_cast<std::int64_t>(n));
      return true;
    }
    if (unsigned_ok && overflow > 0) {
      const unsigned long long u = PyLong_AsUnsignedLongLong(i.ptr());
      if (!(u == static_cast<unsigned long long>(-1) && PyErr_Occurred())) {
        *out = Scalar(static_cast<std::uint64_t>(u));
        return true;
      }
      PyErr_Clear();
    }
    throw ValueError(std::string(what) + " " + nb::cast<std::string>(nb::str(i)) + " is out of the " +
                     (unsigned_ok ? "int64 and uint64 ranges" : "int64 range") + " (overflow when unpacking an int)");
  }
  if (PyUnicode_Check(v.ptr()) || PyBytes_Check(v.ptr())) return false;
  const double d = PyFloat_AsDouble(v.ptr());  // float, or anything with __float__
  if (d == -1.0 && PyErr_Occurred()) {
    PyErr_Clear();
    return false;
  }
  *out = Scalar(d);
  return true;
}

// The element of a one-element tensor as a Python int, bool or float, by its
// dtype (torch's item()): int64 values past 2^53 stay exact.
nb::object item_of(const Tensor& t) {
  if (t.numel() != 1)
    throw ValueError("item() needs a tensor with one element, got " + std::to_string(t.numel()));
  wait_for_reads(t.device());
  if (is_floating(t.dtype())) {
    double d;
    {
      nb::gil_scoped_release g;
      d = t.item();
    }
    return nb::float_(d);
  }
  std::uint8_t bytes[8] = {};
  {
    nb::gil_scoped_release g;
    t.copy_to_host(bytes);
  }
  auto load = [&](auto tag) {
    decltype(tag) x;
    std::memcpy(&x, bytes, sizeof x);
    return x;
  };
  switch (t.dtype()) {
    case DType::Bool: return nb::bool_(bytes[0] != 0);
    case DType::UInt8: return nb::int_(load(std::uint8_t{}));
    case DType::Int8: return nb::int_(load(std::int8_t{}));
    case DType::Int16: return nb::int_(load(std::int16_t{}));
    case DType::Int32: return nb::int_(load(std::int32_t{}));
    case DType::Int64: return nb::int_(load(std::int64_t{}));
    case DType::UInt16: return nb::int_(load(std::uint16_t{}));
    case DType::UInt32: return nb::int_(load(std::uint32_t{}));
    case DType::UInt64: return nb::steal(PyLong_FromUnsignedLongLong(load(std::uint64_t{})));
    default: break;
  }
  throw Error("item(): unknown dtype");
}

// In place, as torch: the result keeps the tensor's dtype, so a float into an
// integer tensor is refused, and so is an int its dtype cannot hold (int32
// x += 2**40 was INT_MIN).
Tensor& inplace_scalar(Tensor& a, nb::handle v, Tensor (*fn)(const Tensor&, Scalar), const char* what) {
  Scalar b(0);
  if (!scalar_arg(v, what, false, &b))
    throw TypeError(std::string(what) + " takes a bronze.Tensor or a number, got " + Py_TYPE(v.ptr())->tp_name);
  if (!is_floating(a.dtype()) && !b.is_integral())
    throw TypeError(std::string(what) + ": the result of a float operand is floating, and cannot be cast to the " +
                    dtype_name(a.dtype()) + " tensor in place");
  if (a.dtype() != DType::Bool) check_fits(b, a.dtype(), what);
  return a.copy_(fn(a, b));
}

}  // namespace

void bind_tensor(nb::module_& m) {
  // The properties first: in the stub, a later `bool` would be the member.
  nb::enum_<DType>(m, "dtype", "A tensor element type (bronze.float32, bronze.int64, ...), as torch.dtype.")
      .def_prop_ro("itemsize", [](DType t) { return element_size(t); }, "Bytes of one element.")
      .def_prop_ro("is_floating_point", [](DType t) { return is_floating(t); },
                   "Whether the type is a floating-point one (float16, bfloat16, float32, float64).")
      .value("bool", DType::Bool)
      .value("uint8", DType::UInt8)
      .value("int8", DType::Int8)
      .value("int16", DType::Int16)
      .value("int32", DType::Int32)
      .value("int64", DType::Int64)
      .value("float16", DType::Float16)
      .value("bfloat16", DType::BFloat16)
      .value("float32", DType::Float32)
      .value("float64", DType::Float64)
      .value("uint16", DType::UInt16)
      .value("uint32", DType::UInt32)
      .value("uint64", DType::UInt64)
      .def("__repr__", [](DType t) { return std::string("bronze.") + dtype_name(t); })
      .def("__str__", [](DType t) { return std::string("bronze.") + dtype_name(t); });

  nb::class_<Tensor> cls(m, "Tensor",
                         "A strided array in bronze device memory (CPU or CUDA), made by empty(), zeros(), tensor(), "
                         "asarray() and the others. Work on it is queued on the current stream; reading it "
                         "(numpy(), item(), tolist()) waits for that work.");
  cls.def_prop_ro("shape", [](const Tensor& t) { return to_tuple(t.shape()); },
                  nb::sig("def shape(self, /) -> tuple[int, ...]"), "The size of each dimension.")
      // size()/stride() as a tuple, size(dim)/stride(dim) as one int (dim may be negative), as in torch.
      .def("size", [](const Tensor& t, nb::handle dim) -> nb::object {
        if (dim.is_none()) return to_tuple(t.shape());
        return nb::int_(t.shape()[dim_arg(dim, t.dim(), "size(dim)")]);
      }, nb::arg("dim") = nb::none(), nb::sig("def size(self, dim: int | None = None) -> typing.Any"),
         "The shape as a tuple, or with dim (negative counts from the end) that dimension's size as an int. "
         "Raises IndexError for a dimension out of range.")
      .def("stride", [](const Tensor& t, nb::handle dim) -> nb::object {
        if (dim.is_none()) return to_tuple(t.strides());
        return nb::int_(t.strides()[dim_arg(dim, t.dim(), "stride(dim)")]);
      }, nb::arg("dim") = nb::none(), nb::sig("def stride(self, dim: int | None = None) -> typing.Any"),
         "The strides (in elements) as a tuple, or with dim that dimension's as an int. Raises IndexError for a "
         "dimension out of range.")
      .def_prop_ro("dtype", &Tensor::dtype, "The element type.")
      .def_prop_ro("device", &Tensor::device, "The device holding the memory.")
      .def_prop_ro("ndim", &Tensor::dim, "The number of dimensions.")
      .def("dim", &Tensor::dim, "The number of dimensions.")
      .def("numel", &Tensor::numel, "The number of elements.")
      .def("__len__", [](const Tensor& t) {
        if (t.dim() == 0) throw TypeError("len() of a 0-d tensor");
        return t.shape()[0];
      })
      .def_prop_ro("nbytes", &Tensor::nbytes, "Bytes of the elements (numel() * element_size()).")
      .def("element_size", &Tensor::element_size, "Bytes of one element.")
      .def("is_contiguous", &Tensor::is_contiguous, "Whether the elements are in row-major order without gaps.")
      .def("is_host_visible", &Tensor::is_host_visible,
           "Whether the CPU reads the memory in place (every CPU tensor; CUDA ones made with host_visible=True).")
      .def("data_ptr", [](const Tensor& t) { return reinterpret_cast<std::uintptr_t>(t.data_ptr()); },
           "The address of the first element (a device address for CUDA tensors).")
      .def("storage_offset", &Tensor::storage_offset, "The first element's offset in its storage, in elements.")
      .def("reshape", [](const Tensor& t, const nb::args& shape) { return t.reshape(shape_arg(shape)); },
           nb::sig("def reshape(self, *shape: int | collections.abc.Sequence[int]) -> Tensor"),
           "The tensor with another shape (ints, or one tuple; -1 infers a size): a view where the strides "
           "allow it, else a copy. Raises ValueError when the element counts differ.")
      .def("view", [](const Tensor& t, const nb::args& shape) {
        if (!t.is_contiguous()) throw ValueError("view() needs a contiguous tensor; use reshape()");
        return t.reshape(shape_arg(shape));
      }, nb::sig("def view(self, *shape: int | collections.abc.Sequence[int]) -> Tensor"),
         "A view with another shape, as reshape(); raises ValueError for a tensor that is not contiguous.")
      .def("t", &Tensor::t, "The transpose of a tensor of at most 2 dimensions (a view).")
      // The memory a view reaches, as a flat tensor from its first element:
      // a strided input bound as a buffer, read through its strides
      // (metal_kernel's ensure_row_contiguous=False).
      .def("_span", [](const Tensor& t) {
        std::int64_t n = t.numel() ? 1 : 0;
        for (std::size_t i = 0; i < t.shape().size() && n; ++i) n += (t.shape()[i] - 1) * t.strides()[i];
        return Tensor(t.storage(), t.storage_offset(), {n}, {1}, t.dtype());
      })
      .def_prop_ro("T", &Tensor::t, "The transpose, as t().")
      .def("contiguous", &Tensor::contiguous, "The tensor itself when contiguous, else a row-major copy.")
      .def("clone", &Tensor::clone, "A copy in new memory on the same device.")
      // Typed as bronze.X: in the class's stub, `device` and `dtype` are its properties.
      .def("_to_device", [](const Tensor& t, OptDevice d) { return t.to(d.value_or(t.device())); },
           nb::sig("def _to_device(self, device: bronze.device | str | None, /) -> Tensor"))
      .def("_to_dtype", [](const Tensor& t, DType d) { return t.to(d); },
           nb::sig("def _to_dtype(self, dtype: bronze.dtype, /) -> Tensor"))
      .def("copy_", [](Tensor& t, nb::handle src) -> Tensor& {
        return t.copy_(class_arg<Tensor>(src, "copy_(src)", "a bronze.Tensor"));
      }, nb::arg("src").none(), nb::rv_policy::none, nb::sig("def copy_(self, src: Tensor) -> Tensor"),
         "Copies src's elements into this tensor (broadcasting, converting the dtype, across devices) and "
         "returns it. Raises TypeError for anything but a Tensor, ValueError for shapes that do not broadcast.")
      .def("fill_", [](Tensor& t, nb::handle v) -> Tensor& {
        Scalar x(0);
        if (!scalar_arg(v, "fill_ value", true, &x))
          throw TypeError(std::string("fill_ takes a number, got ") + Py_TYPE(v.ptr())->tp_name);
        return t.fill_(x);
      }, nb::arg("value").none(), nb::rv_policy::none, nb::sig("def fill_(self, value: typing.SupportsFloat) -> Tensor"),
         "Sets every element to value and returns the tensor. Raises TypeError for a value that is no number.")
      .def("zero_", &Tensor::zero_, nb::rv_policy::none, "Sets every element to 0 and returns the tensor.")
      .def("uniform_", [](Tensor& t, nb::handle from, nb::handle to) -> Tensor& {
        return t.uniform_(number_arg(from, "uniform_(from_)"), number_arg(to, "uniform_(to)"));
      }, nb::arg("from_").none() = 0.0, nb::arg("to").none() = 1.0, nb::rv_policy::none,
         nb::sig("def uniform_(self, from_: typing.SupportsFloat = 0.0, to: typing.SupportsFloat = 1.0) -> Tensor"),
         "Fills a floating-point tensor with uniform numbers in [from_, to) from the device's generator.")
      .def("normal_", [](Tensor& t, nb::handle mean, nb::handle std) -> Tensor& {
        return t.normal_(number_arg(mean, "normal_(mean)"), number_arg(std, "normal_(std)"));
      }, nb::arg("mean").none() = 0.0, nb::arg("std").none() = 1.0, nb::rv_policy::none,
         nb::sig("def normal_(self, mean: typing.SupportsFloat = 0.0, std: typing.SupportsFloat = 1.0) -> Tensor"),
         "Fills a floating-point tensor with normal numbers of that mean and standard deviation.")
      .def("random_", [](Tensor& t, nb::handle low, nb::handle high) -> Tensor& {
        if (high.is_none()) return t.random_(0, integer_arg(low, "random_(to)"));  // torch's random_(to): [0, to)
        return t.random_(integer_arg(low, "random_(from)"), integer_arg(high, "random_(to)"));
      }, nb::arg("low").none(), nb::arg("high").none() = nb::none(), nb::rv_policy::none,
         nb::sig("def random_(self, low: int, high: int | None = None) -> Tensor"),
         "Fills the tensor with integers in [low, high), or in [0, low) without high, as torch's random_.")
      .def("record_stream", [](const Tensor& t, nb::handle s) {
        t.record_stream(class_arg<Stream>(s, "record_stream(stream)", "a bronze.Stream"));
      }, nb::arg("stream").none(), nb::sig("def record_stream(self, stream: Stream) -> None"),
         "Marks the memory as used by work on `stream`: the allocator reuses it only once that work is done.")
      .def("item", &item_of, nb::sig("def item(self) -> int | float | bool"),
           "The value of a one-element tensor as a Python number (it waits for the tensor's producers). Raises "
           "ValueError for another number of elements.")
      .def("numpy", &to_numpy, nb::sig("def numpy(self) -> numpy.typing.NDArray[typing.Any]"),
           "A NumPy copy of the elements (it waits for the tensor's producers). Raises TypeError for bfloat16.")
      .def("_dlpack_array", &export_array, nb::sig("def _dlpack_array(self) -> typing.Any"))
      .def_prop_ro("__array_interface__", &array_interface,
                   nb::sig("def __array_interface__(self, /) -> dict[str, typing.Any]"),
                   "NumPy's array interface (v3), for host-visible tensors only (AttributeError otherwise).")
      .def_prop_ro("__cuda_array_interface__", &cuda_array_interface,
                   nb::sig("def __cuda_array_interface__(self, /) -> dict[str, typing.Any]"),
                   "The CUDA array interface (v3), for CUDA tensors only (AttributeError otherwise).")
      .def("__matmul__", [](const Tensor& a, const Tensor& b) { return mm(a, b); }, nb::is_operator());

  // Arithmetic: tensor (op) tensor, and tensor (op) Python number (an int
  // exactly, and past int64 an error as in torch, never a float64).
  // Anything else is NotImplemented, so Python tries the other operand.
#define BRONZE_NUM(pyname, fn)                                                           \
  cls.def(pyname, [](const Tensor& a, nb::handle b) -> nb::object {                      \
    Scalar x(0);                                                                         \
    if (!scalar_arg(b, "the operand", false, &x)) return nb::borrow(Py_NotImplemented);  \
    return nb::cast(fn(a, x));                                                           \
  }, nb::is_operator(), nb::sig("def " pyname "(self, other: typing.SupportsFloat, /) -> Tensor"));
#define BRONZE_BIN(pyname, fn)                                                                          \
  cls.def(pyname, [](const Tensor& a, const Tensor& b) { return fn(a, b); }, nb::is_operator());        \
  BRONZE_NUM(pyname, fn)
  BRONZE_BIN("__add__", add)
  BRONZE_BIN("__sub__", sub)
  BRONZE_BIN("__mul__", mul)
  BRONZE_BIN("__truediv__", div)
#undef BRONZE_BIN
  BRONZE_NUM("__radd__", add)
  BRONZE_NUM("__rsub__", rsub)
  BRONZE_NUM("__rmul__", mul)
  BRONZE_NUM("__rtruediv__", rdiv)
#undef BRONZE_NUM
  cls.def("__neg__", [](const Tensor& a) { return mul(a, Scalar(std::int64_t{-1})); });
  cls.def("__iadd__", [](Tensor& a, const Tensor& b) -> Tensor& { return a.copy_(add(a, b)); }, nb::rv_policy::none, nb::is_operator());
  cls.def("__iadd__", [](Tensor& a, nb::handle b) -> Tensor& {
    return inplace_scalar(a, b, [](const Tensor& x, Scalar y) { return add(x, y); }, "+=");
  }, nb::rv_policy::none, nb::is_operator(), nb::sig("def __iadd__(self, other: typing.SupportsFloat, /) -> Tensor"));
  cls.def("__imul__", [](Tensor& a, const Tensor& b) -> Tensor& { return a.copy_(mul(a, b)); }, nb::rv_policy::none, nb::is_operator());
  cls.def("__imul__", [](Tensor& a, nb::handle b) -> Tensor& {
    return inplace_scalar(a, b, [](const Tensor& x, Scalar y) { return mul(x, y); }, "*=");
  }, nb::rv_policy::none, nb::is_operator(), nb::sig("def __imul__(self, other: typing.SupportsFloat, /) -> Tensor"));

  m.def("mm", [](nb::handle a, nb::handle b) {
    return mm(class_arg<Tensor>(a, "mm(a, b): a", "a bronze.Tensor"), class_arg<Tensor>(b, "mm(a, b): b", "a bronze.Tensor"));
  }, nb::arg("a").none(), nb::arg("b").none(), nb::sig("def mm(a: Tensor, b: Tensor) -> Tensor"),
        "The matrix product of two 2-d tensors of one floating-point dtype on one device (BLAS on the CPU, "
        "cuBLAS on CUDA). Raises TypeError for other types, ValueError for shapes that do not fit.");
  // empty(*size, dtype=None, device=None) parsed here: it is the allocation
  // hot path, and a Python wrapper would triple its cost.
  m.def("empty", [](nb::args size, nb::handle dtype, std::optional<Device> device, bool host_visible) {
    Shape shape = shape_arg(size);
    DType t = DType::Float32;
    if (!dtype.is_none()) {
      static nb::handle as_dtype = nb::object(nb::module_::import_("bronze._tensor").attr("as_dtype")).release();
      t = nb::isinstance<DType>(dtype) ? nb::cast<DType>(dtype) : nb::cast<DType>(as_dtype(dtype));
    }
    return empty(shape, t, device, host_visible);
  }, nb::arg("size"), nb::kw_only(), nb::arg("dtype") = nb::none(), nb::arg("device") = nb::none(),
     nb::arg("host_visible") = false,
     nb::sig("def empty(*size: int | collections.abc.Sequence[int], dtype: dtype | str | None = None, "
             "device: device | str | None = None, host_visible: bool = False) -> Tensor"),
     "A tensor of that shape (ints, or one tuple) whose elements are not set: float32 and the current device "
     "by default. host_visible=True puts a CUDA tensor in pinned host memory the GPU reads in place. Raises "
     "OutOfMemoryError past the memory limit.");
  m.def("_empty", &empty, nb::arg("shape"), nb::arg("dtype"), nb::arg("device") = nb::none(),
        nb::arg("host_visible") = false);
  m.def("_full", [](nb::handle s, nb::handle v, DType t, OptDevice d) {
    Scalar x(0);
    if (!scalar_arg(v, "fill value", true, &x))
      throw TypeError(std::string("full takes a number, got ") + Py_TYPE(v.ptr())->tp_name);
    return full(shape_of(s), x, t, d);
  });
  m.def("_arange", [](nb::handle start, nb::handle end, nb::handle step, DType t, OptDevice d) {
    // Python ints stay integers (exact int64 ranges); other numbers are doubles.
    auto number = [](nb::handle h, const char* what) {
      return PyIndex_Check(h.ptr()) && !PyBool_Check(h.ptr()) ? Scalar(integer_arg(h, what)) : Scalar(number_arg(h, what));
    };
    return arange(number(start, "arange start"), number(end, "arange end"), number(step, "arange step"), t, d);
  }, nb::arg("start").none(), nb::arg("end").none(), nb::arg("step").none(), nb::arg("dtype"), nb::arg("device").none());
  m.def("_rand", [](nb::handle s, DType t, OptDevice d) { return rand(shape_of(s), t, d); });
  m.def("_randn", [](nb::handle s, DType t, OptDevice d) { return randn(shape_of(s), t, d); });
  m.def("_randint", [](nb::handle low, nb::handle high, nb::handle s, DType t, OptDevice d) {
    return randint(integer_arg(low, "randint low"), integer_arg(high, "randint high"), shape_of(s), t, d);
  }, nb::arg("low").none(), nb::arg("high").none(), nb::arg("size"), nb::arg("dtype"), nb::arg("device").none());
  m.def("_from_array", &from_array, nb::arg("obj"));
}

}  // namespace bronze::py
