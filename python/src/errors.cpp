// Maps bronze's C++ exceptions to the Python classes in bronze/errors.py.
#include <mutex>
#include <vector>

#include "bronze/error.hpp"
#include "common.hpp"

namespace bronze::py {
namespace {

PyObject* py_class(const char* name) {
  // Looked up once per class; the module lives as long as the interpreter.
  nb::object cls = nb::module_::import_("bronze.errors").attr(name);
  return cls.release().ptr();
}

void raise(PyObject* cls, const char* msg) { PyErr_SetString(cls, msg); }

std::mutex g_pending_mu;
std::vector<PyObject*> g_pending;

int drain_pending(void*) {
  std::vector<PyObject*> objs;
  {
    std::lock_guard<std::mutex> g(g_pending_mu);
    objs.swap(g_pending);
  }
  for (PyObject* o : objs) Py_DECREF(o);
  return 0;
}
}  // namespace

void release_from_any_thread(PyObject* obj) {
  if (!Py_IsInitialized()) return;  // interpreter gone: nothing to release
  if (PyGILState_Check()) {
    Py_DECREF(obj);
    return;
  }
  bool schedule;
  {
    std::lock_guard<std::mutex> g(g_pending_mu);
    schedule = g_pending.empty();
    g_pending.push_back(obj);
  }
  if (schedule) Py_AddPendingCall(drain_pending, nullptr);
}

namespace {
// Sets the Python error for one of bronze's C++ exceptions.
void translate(const std::exception_ptr& p) {
  static PyObject* base = py_class("BronzeError");
  static PyObject* oom = py_class("OutOfMemoryError");
  static PyObject* device = py_class("DeviceError");
  static PyObject* unsupported = py_class("NotSupportedError");
  static PyObject* compile = py_class("ShaderCompileError");
  static PyObject* compile_unsupported = py_class("ShaderNotSupportedError");
  static PyObject* notfound = py_class("KernelNotFoundError");
  static PyObject* argument = py_class("KernelArgumentError");
  try {
    std::rethrow_exception(p);
  } catch (const OutOfMemoryError& e) {
    nb::object exc = nb::borrow(oom)(e.what(), e.requested(), e.allocated(), e.reserved(), e.limit());
    PyErr_SetObject(oom, exc.ptr());
  } catch (const ShaderCompileError& e) {
    PyObject* type = dynamic_cast<const ShaderNotSupportedError*>(&e) ? compile_unsupported : compile;
    nb::object exc = e.line() > 0 ? nb::borrow(type)(e.what(), e.line(), e.column()) : nb::borrow(type)(e.what());
    PyErr_SetObject(type, exc.ptr());
  } catch (const KernelNotFoundError& e) {
    raise(notfound, e.what());
  } catch (const DeviceError& e) {
    raise(device, e.what());
  } catch (const NotSupportedError& e) {
    raise(unsupported, e.what());
  } catch (const ValueError& e) {
    raise(PyExc_ValueError, e.what());
  } catch (const KernelArgumentError& e) {
    raise(argument, e.what());
  } catch (const TypeError& e) {
    raise(PyExc_TypeError, e.what());
  } catch (const Error& e) {
    raise(base, e.what());
  }
}
}  // namespace

void bind_errors(nb::module_& m) {
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    // Building an exception object runs Python code, where a pending signal
    // raises: that exception (KeyboardInterrupt) is the one to raise, not
    // nanobind's RuntimeError holding its traceback.
    try {
      translate(p);
    } catch (nb::python_error& e) {
      e.restore();
    }
  });
  (void)m;
}

}  // namespace bronze::py
