// compile_shader and callable kernels: lib.kernel(*args, threads=, group_size=).
#include <list>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bronze/error.hpp"
#include "bronze/shader.hpp"
#include "common.hpp"
#include "jit/disk_cache.hpp"
#include "jit/host_compiler.hpp"
#include "jit/log.hpp"
#include "jit/warnings.hpp"
#include "shader/types.hpp"

namespace bronze::py {
namespace {

// A grid extent: an int or a NumPy integer (not a bool), any size (the
// range check below names it, never a wrapped number).
std::int64_t extent(nb::handle x, const char* what) {
  if (PyBool_Check(x.ptr()) || !PyIndex_Check(x.ptr()))
    throw TypeError(std::string(what) + " takes ints, got " + Py_TYPE(x.ptr())->tp_name);
  int overflow = 0;
  long long n = PyLong_AsLongLongAndOverflow(nb::steal(PyNumber_Index(x.ptr())).ptr(), &overflow);
  if (PyErr_Occurred()) PyErr_Clear();
  return overflow ? -1 : n;  // -1: out of range either way
}

Dim3 to_dim3(nb::handle h, const char* what) {
  Dim3 d;
  std::vector<std::int64_t> v;
  if (PyTuple_Check(h.ptr()) || PyList_Check(h.ptr())) {
    for (nb::handle x : h) v.push_back(extent(x, what));
  } else if (PyIndex_Check(h.ptr()) && !PyBool_Check(h.ptr())) {
    v.push_back(extent(h, what));
  } else {
    throw TypeError(std::string(what) + " must be an int or a tuple of 1 to 3 ints");
  }
  if (v.empty() || v.size() > 3) throw ValueError(std::string(what) + " needs 1 to 3 dimensions");
  for (auto x : v)
    if (x < 0 || x > 0xffffffffll) throw ValueError(std::string(what) + " dimensions must be in [0, 2^32)");
  d.x = static_cast<std::uint32_t>(v[0]);
  if (v.size() > 1) d.y = static_cast<std::uint32_t>(v[1]);
  if (v.size() > 2) d.z = static_cast<std::uint32_t>(v[2]);
  return d;
}

// Bytes of each [[threadgroup(n)]] buffer: an int for index 0, the common
// case (Metal's setThreadgroupMemoryLength:atIndex:0), or a list per index.
std::vector<std::uint64_t> to_threadgroup_memory(nb::handle h) {
  const char* what = "threadgroup_memory";
  std::vector<std::uint64_t> bytes;
  auto add = [&](nb::handle x) {
    std::int64_t n = extent(x, what);
    if (n < 0) throw ValueError(std::string(what) + " takes byte counts >= 0, got " + nb::cast<std::string>(nb::str(x)));
    bytes.push_back(static_cast<std::uint64_t>(n));
  };
  if (PyTuple_Check(h.ptr()) || PyList_Check(h.ptr())) {
    for (nb::handle x : h) add(x);
  } else if (PyIndex_Check(h.ptr()) && !PyBool_Check(h.ptr())) {
    add(h);
  } else {
    throw TypeError(std::string(what) + " must be an int (bytes at [[threadgroup(0)]]) or a list of ints, one per index; got " +
                    Py_TYPE(h.ptr())->tp_name);
  }
  return bytes;
}

Scalar to_scalar(nb::handle h, const char* name) {
  auto label = [&] { return std::string("argument '") + name + "'"; };
  if (PyBool_Check(h.ptr())) return Scalar(h.ptr() == Py_True);
  if (PyIndex_Check(h.ptr())) {
    long long v = PyLong_AsLongLong(nb::steal(PyNumber_Index(h.ptr())).ptr());
    if (PyErr_Occurred()) {
      PyErr_Clear();
      throw ValueError(label() + ": integer out of the 64-bit range");
    }
    return Scalar(static_cast<std::int64_t>(v));
  }
  if (PyFloat_Check(h.ptr()) || PyNumber_Check(h.ptr())) {
    double d = PyFloat_AsDouble(h.ptr());
    if (PyErr_Occurred()) {
      PyErr_Clear();
      throw TypeError(label() + ": expected a number, got " + Py_TYPE(h.ptr())->tp_name);
    }
    return Scalar(d);
  }
  throw TypeError(label() + ": expected a number, got " + Py_TYPE(h.ptr())->tp_name);
}

// A list/tuple of numbers, packed as the parameter's element type.
std::vector<std::uint8_t> pack_list(nb::handle seq, const KernelParam& p, const std::string& label) {
  shader::ScalarType st = shader::scalar_type(p.type);
  if (!st.known) throw TypeError(label + ": a list needs a numeric parameter type, '" + p.type + "' is not; pass bytes");
  std::vector<std::uint8_t> out;
  for (nb::handle x : seq) shader::append_element(st, to_scalar(x, p.name.c_str()), out);
  if (out.empty()) throw ValueError(label + ": empty list");
  if (st.lanes > 1 && out.size() < p.size) out.resize(p.size, 0);  // uint3 is padded to 16 bytes
  return out;
}

// An array the kernel cannot write in place: a read-only buffer (NumPy's
// writeable=False) or a read-only __array_interface__. Importing it copies,
// and the kernel's writes would go to the copy.
bool read_only_array(nb::handle h) {
  if (PyObject_CheckBuffer(h.ptr())) {
    Py_buffer view;
    // With strides: a writable view that is not contiguous is writable
    // (the launch then says it is not contiguous), not read-only.
    if (PyObject_GetBuffer(h.ptr(), &view, PyBUF_WRITABLE | PyBUF_STRIDES) == 0) {
      PyBuffer_Release(&view);
      return false;
    }
    PyErr_Clear();
    return true;
  }
  if (!PyObject_HasAttrString(h.ptr(), "__array_interface__")) return false;
  nb::object data = nb::borrow<nb::dict>(h.attr("__array_interface__")).get("data", nb::none());
  return PyTuple_Check(data.ptr()) && PyTuple_Size(data.ptr()) == 2 && PyObject_IsTrue(PyTuple_GET_ITEM(data.ptr(), 1)) == 1;
}

// What a call's arguments hold for its duration (lists: references stay
// valid, and a call without any allocates nothing).
struct Temps {
  std::list<Tensor> arrays;                     // imported zero-copy
  std::list<std::vector<Tensor>> tensor_lists;  // argument buffers
};

bool is_array(nb::handle h) {
  return PyObject_HasAttrString(h.ptr(), "__dlpack__") || PyObject_HasAttrString(h.ptr(), "__array_interface__") ||
         PyObject_CheckBuffer(h.ptr());
}

// A tensor, or an array of at least one dimension (a NumPy scalar is a number).
bool is_tensor_like(nb::handle h) {
  if (nb::isinstance<Tensor>(h)) return true;
  if (PyFloat_Check(h.ptr()) || PyLong_Check(h.ptr()) || !is_array(h)) return false;
  return !PyObject_HasAttrString(h.ptr(), "ndim") || nb::cast<int>(h.attr("ndim")) != 0;
}

// A list or tuple of tensors or arrays: an argument buffer (a struct of
// device pointers), as torch.mps binds one.
bool is_tensor_list(nb::handle h) {
  if (!(PyList_Check(h.ptr()) || PyTuple_Check(h.ptr())) || PySequence_Size(h.ptr()) == 0) return false;
  return is_tensor_like(nb::steal(PySequence_GetItem(h.ptr(), 0)));
}

KernelArg tensor_list(nb::handle h, const std::string& label, nb::handle from_array, Temps& temps) {
  std::vector<Tensor>& ts = temps.tensor_lists.emplace_back();
  for (nb::handle x : h) {
    if (nb::isinstance<Tensor>(x)) ts.push_back(nb::cast<const Tensor&>(x));
    else if (is_tensor_like(x)) ts.push_back(nb::cast<Tensor>(from_array(x)));
    else throw TypeError(label + ": an argument buffer is a list of tensors, got an item of type " + Py_TYPE(x.ptr())->tp_name);
  }
  return ts;
}

// Tensors are passed by reference to the Python object's tensor.
KernelArg convert(nb::handle h, const KernelParam& p, nb::handle from_array, Temps& temps) {
  if (p.kind == ParamKind::Scalar && (PyFloat_CheckExact(h.ptr()) || PyLong_CheckExact(h.ptr()) || PyBool_Check(h.ptr())))
    return to_scalar(h, p.name.c_str());  // the common case, without building messages
  if (nb::isinstance<Tensor>(h)) {
    const Tensor& t = nb::cast<const Tensor&>(h);
    // A 0-d tensor binds to a value, as in torch.mps.
    if (p.kind == ParamKind::Scalar && t.defined() && t.dim() == 0) return to_scalar(h.attr("item")(), p.name.c_str());
    return t;
  }
  std::string label = "argument " + std::to_string(p.binding) + " ('" + p.name + "')";
  if (p.kind == ParamKind::Scalar && PyObject_HasAttrString(h.ptr(), "__dlpack__") &&
      PyObject_HasAttrString(h.ptr(), "item") && PyObject_HasAttrString(h.ptr(), "ndim") &&
      nb::cast<int>(h.attr("ndim")) == 0)
    return to_scalar(h.attr("item")(), p.name.c_str());  // a 0-d torch/NumPy/CuPy array
  if (PyBytes_Check(h.ptr()) || PyByteArray_Check(h.ptr()) || PyMemoryView_Check(h.ptr())) {
    nb::bytes b = nb::steal<nb::bytes>(PyBytes_FromObject(h.ptr()));
    const auto* d = static_cast<const std::uint8_t*>(b.data());
    return std::vector<std::uint8_t>(d, d + b.size());
  }
  if (is_tensor_list(h)) return tensor_list(h, label, from_array, temps);
  if (p.kind == ParamKind::Buffer) {
    if (PyList_Check(h.ptr()) || PyTuple_Check(h.ptr())) {
      if (!p.read_only) throw KernelArgumentError(label + " is a writable buffer: pass a tensor, not a list");
      return pack_list(h, p, label);
    }
    if (is_array(h)) {
      if (!p.read_only && read_only_array(h))
        throw KernelArgumentError(label + " is a read-only array, and the kernel writes this buffer (device " + p.type +
                                  "*): pass a writable array or a tensor (its writes would go to a copy)");
      return temps.arrays.emplace_back(nb::cast<Tensor>(from_array(h)));
    }
    throw KernelArgumentError(label + " is a buffer: expected a tensor or array, got " + Py_TYPE(h.ptr())->tp_name);
  }
  if (PyList_Check(h.ptr()) || PyTuple_Check(h.ptr())) return pack_list(h, p, label);
  // An array into `constant T&` binds its bytes, as torch.mps binds a tensor.
  if (is_array(h)) return temps.arrays.emplace_back(nb::cast<Tensor>(from_array(h)));
  return to_scalar(h, p.name.c_str());
}

// torch.mps's arg_casts: one cast name for every value argument, or a dict
// of argument index to cast name. bronze binds values by the kernel's
// signature already; a cast packs the value as the named type instead, and
// its size must then fit the parameter.
class ArgCasts {
 public:
  ArgCasts() = default;
  explicit ArgCasts(nb::handle v) {
    if (PyUnicode_Check(v.ptr())) {
      all_ = metal_type(nb::cast<std::string>(v));
    } else if (PyDict_Check(v.ptr())) {
      for (auto [k, c] : nb::cast<nb::dict>(v)) {
        if (!PyLong_Check(k.ptr()) || !PyUnicode_Check(c.ptr()))
          throw TypeError("arg_casts maps argument indices (int) to cast names (str)");
        const long long index = PyLong_AsLongLong(k.ptr());
        if (index < 0 || index > 30) {  // 2**70 overflows: -1 with an error set
          PyErr_Clear();
          throw ValueError("arg_casts: an argument index is 0 to 30, got " + nb::cast<std::string>(nb::str(k)));
        }
        by_index_.emplace_back(static_cast<std::size_t>(index), metal_type(nb::cast<std::string>(c)));
      }
    } else {
      throw TypeError(std::string("arg_casts must be a str or a dict, got ") + Py_TYPE(v.ptr())->tp_name);
    }
  }
  bool empty() const { return all_.empty() && by_index_.empty(); }
  KernelArg convert(std::size_t i, nb::handle h, const KernelParam& p, nb::handle from_array,
                    Temps& temps) const {
    std::string type = all_;
    for (const auto& [k, t] : by_index_)
      if (k == i) type = t;
    bool number = PyNumber_Check(h.ptr()) && !nb::isinstance<Tensor>(h);
    bool list = (PyList_Check(h.ptr()) || PyTuple_Check(h.ptr())) && !is_tensor_list(h);
    if (type.empty() || p.kind == ParamKind::Attribute || (!number && !list)) return py::convert(h, p, from_array, temps);
    KernelParam cast = p;
    cast.type = type;
    cast.size = 0;
    std::string label = "argument " + std::to_string(p.binding) + " ('" + p.name + "')";
    if (list) return pack_list(h, cast, label);
    return shader::pack_scalar(cast, to_scalar(h, p.name.c_str()));
  }

 private:
  static std::string metal_type(const std::string& cast) {
    static const char* const names[][2] = {{"fp16", "half"}, {"bf16", "bfloat"}, {"int32", "int"},
                                           {"int16", "short"}, {"int8", "char"},  {"uint8", "uchar"}};
    for (const auto& n : names)
      if (cast == n[0]) return n[1];
    throw ValueError("unsupported cast '" + cast + "' in arg_casts: fp16, bf16, int32, int16, int8 or uint8");
  }
  std::string all_;
  std::vector<std::pair<std::size_t, std::string>> by_index_;
};

// The kernel, built if it was not: a build (seconds, on first use) runs
// without the GIL and stops at Ctrl-C.
const Kernel& ready(const Kernel& k) {
  if (!k.is_built()) run_interruptible([&] { k.warmup(); });
  return k;
}

nb::dict param_dict(const KernelParam& p) {
  static const char* kinds[] = {"buffer", "scalar", "attribute", "threadgroup"};
  nb::dict d;
  d["name"] = p.name;
  d["kind"] = kinds[static_cast<int>(p.kind)];
  d["type"] = p.type;
  d["access"] = p.read_only ? "read" : "read_write";
  d["binding"] = p.binding;
  d["index"] = p.index;
  d["attribute"] = p.attribute;
  d["size"] = p.size;
  d["by_value"] = p.by_value;
  return d;
}
}  // namespace

void bind_shader(nb::module_& m) {
  // Compiles run without the GIL; a warning takes it to reach `warnings`.
  // Where warnings are errors, the message still reaches stderr rather than
  // failing a compile that worked.
  // The cache folder is fixed now: a relative BRONZE_CACHE_DIR is where the
  // process imported bronze, whatever it chdirs to later. A bad $BRONZE_CACHE_*
  // value is the error of the first compile (and of cache_info), not of import.
  try {
    jit::DiskCache::instance();
  } catch (const ValueError&) {
  }
  jit::set_warning_handler([](const std::string& msg) {
    nb::gil_scoped_acquire g;
    if (PyErr_WarnEx(PyExc_RuntimeWarning, msg.c_str(), 1) != 0) {
      PyErr_Clear();
      PySys_WriteStderr("%s\n", msg.c_str());
    }
  });
  nb::class_<Kernel>(m, "Kernel",
                     "A compiled compute kernel of a Library (lib.name); call it like a function. A kernel's own "
                     "__doc__ (help(lib.name)) gives its parameters and how a call binds them.")
      .def_prop_ro("name", &Kernel::name, "The kernel's host name (known without a build).")
      .def_prop_ro("max_threads_per_threadgroup", [](const Kernel& k) { return ready(k).max_threads_per_threadgroup(); },
                   "The most threads a threadgroup of this kernel may have (builds the kernel).")
      .def_prop_ro("thread_execution_width", &Kernel::thread_execution_width, "Threads of a SIMD group (32).")
      .def_prop_ro("static_thread_group_memory_length",
                   [](const Kernel& k) { return ready(k).static_thread_group_memory_length(); },
                   "Bytes of threadgroup memory the kernel declares itself (builds the kernel).")
      .def_prop_ro("cooperative", [](const Kernel& k) { return ready(k).info().cooperative; },
                   "Whether the kernel uses barriers or SIMD-group functions (builds the kernel).")
      .def_prop_ro("params", [](const Kernel& k) {
        nb::list l;
        for (const auto& p : ready(k).info().params) l.append(param_dict(p));
        return l;
      }, nb::sig("def params(self, /) -> list[dict[str, typing.Any]]"),
         "The kernel's parameters as the compiler reflects them (builds the kernel), in declaration order: "
         "dicts of name, kind ('buffer', 'scalar' (a value), 'threadgroup', 'attribute'), type, access "
         "('read' or 'read_write'), binding (the position of its argument in a call; -1 for none), index "
         "([[buffer(n)]] or [[threadgroup(n)]] slot), attribute (a thread-position attribute's name), size "
         "(bytes of the type) and by_value.")
      .def("warmup", [](const Kernel& k) { ready(k); },
           "Builds the kernel now (a library's kernels are built on first use). Raises ShaderCompileError where "
           "the build fails, as the first call would.")
      .def_prop_ro("is_built", &Kernel::is_built,
                   "Whether the kernel is built (a source of more than 8 kernels builds each on first use).")
      .def("__call__", [](const Kernel& k, nb::args args, nb::kwargs kwargs) {
        const KernelInfo& ki = ready(k).info();
        DispatchOptions opt;
        ArgCasts casts;
        for (auto [key, value] : kwargs) {
          // Compared in place (no std::string per keyword: this is the launch hot path).
          // The pointer is captured, not `key`: Clang before 16 captures no structured binding.
          PyObject* keyword = key.ptr();
          auto is = [keyword](const char* name) { return PyUnicode_CompareWithASCIIString(keyword, name) == 0; };
          if (value.is_none()) continue;
          if (is("threads")) opt.threads = to_dim3(value, "threads");
          else if (is("group_size")) opt.group_size = to_dim3(value, "group_size");
          else if (is("stream")) {
            if (!nb::isinstance<Stream>(value))
              throw TypeError(std::string("stream must be a bronze.Stream, got ") + Py_TYPE(value.ptr())->tp_name);
            opt.stream = nb::cast<Stream>(value);
          } else if (is("threadgroup_memory")) opt.threadgroup_memory = to_threadgroup_memory(value);
          else if (is("arg_casts")) casts = ArgCasts(value);
          else if (is("error_buf_idx")) {  // torch.mps's: where the stream's error buffer binds
            if (!PyLong_Check(value.ptr()) || PyBool_Check(value.ptr()))
              throw TypeError(std::string("error_buf_idx must be an int, got ") + Py_TYPE(value.ptr())->tp_name);
            long long idx = PyLong_AsLongLong(value.ptr());
            if (idx < 0 || idx > 0xffffffffLL) {
              PyErr_Clear();
              throw ValueError("error_buf_idx must be a buffer index >= 0, got " + nb::cast<std::string>(nb::str(value)));
            }
            opt.error_buf_idx = static_cast<unsigned>(idx);
          } else throw TypeError("kernel call got an unexpected keyword argument '" + nb::cast<std::string>(key) + "'");
        }
        // Looked up once; the module lives as long as the interpreter.
        static nb::handle from_array = nb::object(nb::module_::import_("bronze._C").attr("_from_array")).release();
        // With error_buf_idx the arguments take every binding but the error buffer's.
        int skip = ki.bindings();
        if (opt.error_buf_idx) {
          skip = error_buffer_binding(ki, *opt.error_buf_idx);
          if (args.size() + 1 != static_cast<std::size_t>(ki.bindings()))
            throw TypeError("kernel '" + ki.name + "' takes " + std::to_string(ki.bindings() - 1) +
                            " arguments besides the error buffer, got " + std::to_string(args.size()));
        } else {
          ki.check_arity(args.size());
        }
        std::vector<KernelArg> converted;
        Temps temps;
        converted.reserve(args.size());
        for (std::size_t i = 0; i < args.size(); ++i) {
          const KernelParam& p = ki.binding(static_cast<int>(i) < skip ? static_cast<int>(i) : static_cast<int>(i) + 1);
          converted.push_back(casts.empty() ? convert(args[i], p, from_array, temps) : casts.convert(i, args[i], p, from_array, temps));
        }
        k.dispatch(converted, opt);
        if (jit::log_records_waiting()) deliver_log();  // the launch's record (BRONZE_LOG=debug)
      }, nb::sig("def __call__(self, *args: typing.Any, threads: int | collections.abc.Sequence[int] | None = None, "
                 "group_size: int | collections.abc.Sequence[int] | None = None, "
                 "threadgroup_memory: int | collections.abc.Sequence[int] | None = None, stream: Stream | None = None, "
                 "arg_casts: str | dict[int, str] | None = None, error_buf_idx: int | None = None) -> None"),
         "Queues the kernel over a grid of threads (it returns at once). help() of the kernel gives its "
         "parameters and how each argument binds.")
      .def("__repr__", [](const Kernel& k) { return "<bronze.Kernel '" + k.name() + "'>"; });

  // dynamic_attr: a kernel found by __getattr__ is kept in the instance's
  // __dict__, so the next lib.k is an ordinary attribute hit; the failed
  // lookup, the call to __getattr__ and a new Kernel object cost 1.3 us of
  // a 2.5 us lib.k(x, 1.0) otherwise.
  nb::class_<Library>(m, "Library",
                      "Kernels compiled from one shader source (compile_shader, load_metallib): each kernel is an "
                      "attribute, lib.name (lib._kernel(name) for a name that is no identifier); `name in lib` and "
                      "kernel_names say which there are. A missing name raises KernelNotFoundError, an "
                      "AttributeError.",
                      nb::dynamic_attr())
      .def("__getattr__", [](nb::handle self, nb::str attr) {
        std::string name;
        try {
          name = text_arg(attr, "a kernel name");
        } catch (const ValueError& e) {  // no kernel has that name: hasattr() answers False
          throw nb::attribute_error(e.what());
        }
        if (name.size() > 1 && name[0] == '_' && name[1] == '_') throw nb::attribute_error(name.c_str());
        nb::object k = nb::cast(nb::cast<const Library&>(self).kernel(name));
        nb::setattr(self, name.c_str(), k);
        return k;
      }, nb::sig("def __getattr__(self, name: str, /) -> Kernel"))
      .def("__dir__", [](const Library& lib) { return lib.kernel_names(); })  // as torch.mps: the kernels
      // A kernel by name, also one named as a Library attribute (kernel_names, specialize).
      .def("_kernel", [](const Library& lib, nb::handle name) { return lib.kernel(text_arg(name, "a kernel name")); })
      .def("_specialize", [](const Library& lib, const std::string& name,
                             const std::vector<std::pair<std::string, std::string>>& constants) {
        return interruptible([&] { return lib.specialize(name, constants); });  // may compile
      })
      .def("warmup", [](const Library& lib) { run_interruptible([&] { lib.warmup(); }); },
           "Builds every kernel not built yet, in parallel over the machine's cores. Raises ShaderCompileError "
           "where a build fails.")
      .def_prop_ro("kernel_names", &Library::kernel_names, "The names of the library's kernels.")
      .def_prop_ro("hash", &Library::hash, "The content hash of the compiled library.")
      .def_prop_ro("device", &Library::device,
                   "The device it was built for (a library compiled without device= follows its tensors).")
      .def("__contains__", [](const Library& lib, nb::handle name) {
        // `x in lib` answers for any x, as a dict does: only a kernel's name is in it.
        if (!PyUnicode_Check(name.ptr())) return false;
        try {
          return lib.has_kernel(text_arg(name, "a kernel name"));
        } catch (const ValueError&) {  // a lone surrogate: no kernel's name
          return false;
        }
      })
      .def("__repr__", [](const Library& lib) {
        std::string s;
        for (const auto& n : lib.kernel_names()) s += (s.empty() ? "" : ", ") + n;
        return "<bronze.Library " + lib.hash() + " [" + s + "]>";
      });

  m.def("cache_info", [] {
    auto& c = jit::DiskCache::instance();
    auto n = c.counters();
    nb::dict d;
    d["enabled"] = c.enabled();
    d["writable"] = c.writable();
    d["dir"] = c.dir();
    d["status"] = c.status();
    d["hits"] = n.hits;
    d["misses"] = n.misses;
    d["stores"] = n.stores;
    d["corrupt"] = n.corrupt;
    d["compiler"] = jit::HostCompiler::get().available() ? jit::HostCompiler::get().path : std::string();
    d["preprocessor"] = jit::preprocessor_path();
    return d;
  }, nb::sig("def cache_info() -> dict[str, typing.Any]"),
        "The compile cache: enabled, writable, dir, status (or why it is off), the counters hits, misses, "
        "stores and corrupt, and the compiler and preprocessor it runs.");

  m.def("_host_compiler", [](bool check) {
    const jit::HostCompiler* found = nullptr;
    std::string why;
    {
      nb::gil_scoped_release g;  // runs the compiler (with check, compiles a small unit)
      found = &jit::HostCompiler::get();
      if (check) why = found->works();
    }
    const auto& cc = *found;
    nb::dict d;
    d["path"] = cc.path;
    d["chosen_by"] = cc.chosen_by;
    d["kind"] = cc.kind_name();
    d["version"] = cc.version;
    d["status"] = cc.status;
    if (check) {
      d["works"] = why.empty();
      d["problem"] = why;
    }
    return d;
  }, nb::arg("check") = false, "The host compiler (what it is, found by running it); with check, whether it builds kernels.");

  m.def("_compile_library", [](const std::string& src, const std::string& filename, std::optional<Device> device,
                               std::vector<int> archs, std::vector<std::string> include_dirs,
                               std::vector<std::pair<std::string, std::string>> headers,
                               std::vector<std::pair<std::string, std::string>> defines,
                               const std::string& torch_include_dir,
                               std::vector<std::pair<std::string, std::string>> constants,
                               const std::string& math_mode) {
    CompileOptions o;
    o.filename = filename;
    o.constants = std::move(constants);
    o.math_mode = math_mode;
    o.device = device;
    o.cuda_archs = std::move(archs);
    o.include_dirs = std::move(include_dirs);
    o.headers = std::move(headers);
    o.defines = std::move(defines);
    o.torch_include_dir = torch_include_dir;
    std::vector<std::uint8_t> bytes = interruptible([&] { return compile_library(src, o); });
    return nb::bytes(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  });
  m.def("_load_metallib", [](nb::bytes data, std::optional<Device> device, const std::string& signatures,
                             bool rebuild) {
    const auto* p = static_cast<const std::uint8_t*>(data.data());
    std::vector<std::uint8_t> bytes(p, p + data.size());
    return interruptible([&] { return load_metallib(bytes, device, signatures, rebuild); });  // may build its source
  }, nb::arg("data"), nb::arg("device") = nb::none(), nb::arg("signatures") = "", nb::arg("rebuild") = false);

  m.def("set_kernel_time_limit", [](nb::handle seconds) {
    set_kernel_time_limit(seconds.is_none() ? 0.0 : number_arg(seconds, "the kernel time limit (seconds)"));
  }, nb::arg("seconds").none(), nb::sig("def set_kernel_time_limit(seconds: typing.SupportsFloat | None) -> None"),
        "Seconds one CPU kernel launch may run before it is stopped (DeviceError at the next synchronize); "
        "None or 0: no limit.");
  m.def("kernel_time_limit", &kernel_time_limit, "The CPU kernel time limit in seconds (0: none).");

  m.def("_compile_shader", [](const std::string& src, const std::string& language, std::optional<Device> device,
                              const std::string& filename, bool validate, std::vector<std::string> include_dirs,
                              std::vector<std::pair<std::string, std::string>> headers,
                              std::vector<std::pair<std::string, std::string>> defines,
                              const std::string& torch_include_dir, bool find_only,
                              std::vector<std::pair<std::string, std::string>> constants,
                              const std::string& math_mode) -> nb::object {
    CompileOptions o;
    o.math_mode = math_mode;
    o.language = language;
    o.device = device;
    o.filename = filename;
    o.validate = validate;
    o.include_dirs = std::move(include_dirs);
    o.headers = std::move(headers);
    o.defines = std::move(defines);
    o.torch_include_dir = torch_include_dir;
    o.constants = std::move(constants);
    if (find_only) return nb::cast(interruptible([&] { return find_kernels(src, o); }));
    return nb::cast(interruptible([&] { return compile_shader(src, o); }));
  });
}

}  // namespace bronze::py
