// Shared declarations of the nanobind extension's files.
#pragma once

#include <nanobind/nanobind.h>

#include "bronze/device.hpp"
#include "bronze/dtype.hpp"

namespace bronze::py {
namespace nb = nanobind;

void bind_errors(nb::module_& m);
void bind_runtime(nb::module_& m);
void bind_tensor(nb::module_& m);
void bind_shader(nb::module_& m);

// Drops a Python reference from any thread: directly when this thread holds
// the GIL, else deferred to the interpreter's main thread (a stream worker
// must never wait for the GIL, or synchronize() could deadlock with it).
void release_from_any_thread(PyObject* obj);

}  // namespace bronze::py
