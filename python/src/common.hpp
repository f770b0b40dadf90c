// Shared declarations of the nanobind extension's files.
#pragma once

#include <nanobind/nanobind.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "bronze/device.hpp"
#include "bronze/dtype.hpp"
#include "bronze/error.hpp"

namespace bronze::py {
namespace nb = nanobind;

void bind_errors(nb::module_& m);
void bind_runtime(nb::module_& m);
void bind_tensor(nb::module_& m);
void bind_shader(nb::module_& m);
void bind_log(nb::module_& m);
void bind_metallib(nb::module_& m);

// bronze's log records handed to Python's logging, here (the GIL held, no
// bronze lock held): log.cpp.
void deliver_log();
// For its lifetime this thread's records wait (a compile may run Python code
// while it holds bronze's locks); they are delivered at its end.
class DeferLogDelivery {
 public:
  DeferLogDelivery();
  ~DeferLogDelivery();
  DeferLogDelivery(const DeferLogDelivery&) = delete;
  DeferLogDelivery& operator=(const DeferLogDelivery&) = delete;
};

// Drops a Python reference from any thread: directly when this thread holds
// the GIL, else deferred to the interpreter's main thread (a stream worker
// must never wait for the GIL, or synchronize() could deadlock with it).
void release_from_any_thread(PyObject* obj);

// Arguments taken as handles so that a wrong type is a short TypeError naming
// `what` and the expected type, not nanobind's list of signatures.
template <typename T>
T& class_arg(nb::handle h, const char* what, const char* expected) {
  T* p = nullptr;
  if (!nb::try_cast<T*>(h, p) || !p)
    throw TypeError(std::string(what) + " must be " + expected + ", got " + Py_TYPE(h.ptr())->tp_name);
  return *p;
}
// Blocks until done() (called without the GIL) holds; Ctrl-C raises
// KeyboardInterrupt meanwhile (wait.cpp).
void wait_until(const std::function<bool()>& done);
// Runs `call` (one that may compile) without the GIL, stopped by Ctrl-C:
// the signal's handler runs on this thread between the compile's waits, and
// the exception it raises (KeyboardInterrupt) stops the compilers and is
// raised here once the call has unwound (wait.cpp).
void run_interruptible(const std::function<void()>& call);
template <typename F>
auto interruptible(F&& f) -> decltype(f()) {
  std::optional<decltype(f())> result;
  run_interruptible([&] { result.emplace(f()); });
  return std::move(*result);
}
// Queueing into a full stream from Python waits with wait_until (runtime::queue_wait).
void install_queue_wait();
// wait_until the device has finished its work, then synchronize it (which
// raises what failed).
void wait_for_device(const Device& d);
// For a read of device memory (numpy(), item(), DLPack): wait_until the
// device has finished its work, then synchronize the current stream. Other
// streams' failures stay theirs to report: a read on one thread never takes
// another thread's kernel fault.
void wait_for_reads(const Device& d);
// The same for a Stream or an Event.
template <typename Waitable>
void wait_for(const Waitable& w) {
  wait_until([&] { return w.query(); });
  nb::gil_scoped_release g;
  w.synchronize();
}

// The argument types of a call, "int, str, device=float", for messages.
std::string argument_types(const nb::args& args, const nb::kwargs& kwargs);

// The constructor overload tried last: arguments no other overload took are
// a short TypeError saying what `name` takes (nanobind would list every
// signature). Python functions get the same from bronze/_arguments.py.
template <typename T, typename Class>
void refuse_other_arguments(Class& cls, const char* name, const char* takes) {
  cls.def("__init__", [name, takes](T*, nb::args args, nb::kwargs kwargs) {
    throw TypeError(std::string(name) + "() takes " + takes + "; got (" + argument_types(args, kwargs) + ")");
  }, nb::sig("def __init__(self, *args: typing.NoReturn, **kwargs: typing.NoReturn) -> None"),
     "Other arguments raise TypeError.");
}

std::string text_arg(nb::handle h, const char* what);  // a str with a UTF-8 form (no lone surrogate)
double number_arg(nb::handle h, const char* what);       // a real number (not a bool)
std::int64_t integer_arg(nb::handle h, const char* what);  // an int or NumPy integer (not a bool), range-checked

}  // namespace bronze::py

namespace nanobind::detail {
// A device argument: a bronze.device, a str such as "cuda:0", or None. A bad
// string raises the parser's ValueError and any other type a short
// TypeError, rather than nanobind's list of signatures (and its stderr note
// on a failed implicit conversion).
// Signatures name what the caster takes (nanobind adds "| None"), not only
// the class.
template <>
struct remove_opt_mono<std::optional<bronze::Device>> {
  using type = std::optional<bronze::Device>;
};
template <>
struct type_caster<std::optional<bronze::Device>> {
  NB_TYPE_CASTER(std::optional<bronze::Device>, io_name("bronze._C.device | str", "bronze._C.device | None"))

  bool from_python(handle src, uint8_t, cleanup_list*) {
    if (src.is_none()) {
      value = std::nullopt;
    } else if (nanobind::isinstance<bronze::Device>(src)) {
      value = nanobind::cast<bronze::Device>(src);
    } else if (PyUnicode_Check(src.ptr())) {
      value = bronze::Device::parse(bronze::py::text_arg(src, "device"));
    } else if (std::string(Py_TYPE(src.ptr())->tp_name) == "torch.device") {  // torch.device("mps"), ("cuda", 0)
      value = bronze::Device::parse(nanobind::cast<std::string>(nanobind::str(src)));
    } else {
      throw bronze::TypeError(std::string("device must be a bronze.device, a str such as 'cpu', 'cuda:0' or 'mps', "
                                          "a torch.device, or None; got ") + Py_TYPE(src.ptr())->tp_name);
    }
    return true;
  }
  static handle from_cpp(const std::optional<bronze::Device>& d, rv_policy p, cleanup_list* c) noexcept {
    if (!d) return none().release();
    return make_caster<bronze::Device>::from_cpp(*d, p, c);
  }
};
}  // namespace nanobind::detail
