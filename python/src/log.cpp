// bronze's log records (jit/log.hpp) handed to Python's logging (bronze._log).
// A record is made on any thread, maybe holding one of bronze's locks, so it
// never takes the GIL there: a thread that holds the GIL may be waiting for
// that lock. Records are queued and delivered with the GIL held and no
// bronze lock: by the main thread the next time it runs Python code (a
// pending call), and at the end of each compile and launch made from Python,
// on the calling thread (deliver_log).
#include <nanobind/stl/string.h>

#include <atomic>

#include "common.hpp"
#include "jit/log.hpp"

namespace bronze::py {
namespace {
std::atomic<bool> g_scheduled{false};
thread_local int t_deferred = 0;  // inside a compile (run_interruptible): its end delivers
PyObject* g_emit = nullptr;        // bronze._log._emit while installed

int deliver_pending(void*) {
  g_scheduled.store(false);
  // Python code that a compile runs on this thread (a signal handler) holds
  // the compile's locks: its end delivers instead.
  if (t_deferred == 0) deliver_log();
  return 0;
}

void schedule_delivery() {
  if (!g_scheduled.exchange(true) && Py_AddPendingCall(deliver_pending, nullptr) != 0) g_scheduled.store(false);
}
}  // namespace

void deliver_log() {
  if (!g_emit || !jit::log_records_waiting() || PyErr_Occurred()) return;
  nb::list records;
  for (jit::LogRecord& r : jit::take_log_records())
    records.append(nb::make_tuple(r.level == jit::LogLevel::Debug ? 10 : 20, std::move(r.message), r.time));
  if (PyObject* done = PyObject_CallOneArg(g_emit, records.ptr())) Py_DECREF(done);
  else PyErr_WriteUnraisable(g_emit);
}

DeferLogDelivery::DeferLogDelivery() { ++t_deferred; }

DeferLogDelivery::~DeferLogDelivery() {
  --t_deferred;
  try {
    deliver_log();
  } catch (...) {  // a record that could not be converted: dropped, never a second exception in flight
    PyErr_Clear();
  }
}

void bind_log(nb::module_& m) {
  m.def(
      "_log_install",
      [](nb::object emit) {
        jit::set_log_sink(emit.is_none() ? nullptr : schedule_delivery);
        Py_XDECREF(g_emit);
        g_emit = emit.is_none() ? nullptr : emit.inc_ref().ptr();
      },
      nb::arg("emit").none(), "Sends bronze's log records to `emit` (None: to stderr).");
  m.def("_log_deliver", &deliver_log, "Hands the records made so far to bronze._log._emit.");
  m.def("_log_level", [] { return jit::log_level_name(jit::log_level()); },
        "$BRONZE_LOG's level: 'off', 'info' or 'debug' (ValueError naming it for another value).");
}

}  // namespace bronze::py
