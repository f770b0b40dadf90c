// Waiting for device work from Python. A wait blocks without the GIL, in
// slices between which a pending signal runs its Python handler, so Ctrl-C
// raises KeyboardInterrupt in the waiting call (the queued work goes on).
// A compile is waited for the same way, and stopped (run_interruptible).
//
// Interpreter exit: once finalization has begun, a thread that takes the GIL
// back is ended by CPython with pthread_exit, whose forced unwind aborts the
// process when it leaves a noexcept frame (nanobind's gil_scoped_release
// destructor) or meets nanobind's catch (...). So a wait never takes the GIL
// back after exit began: an atexit handler (which runs before finalization,
// with the GIL) marks the exit, and a waiting thread other than the exiting
// one then stays parked without the GIL until the process ends, as a daemon
// thread blocked in time.sleep does. A thread already on its way back to the
// GIL when the handler runs is let through first (the handler drops the GIL
// until it has it), so none is caught between the two.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "bronze/stream.hpp"
#include "common.hpp"
#include "jit/interrupt.hpp"
#include "runtime/stream_impl.hpp"

namespace bronze::py {
namespace {

std::atomic<bool> g_exiting{false};
std::atomic<int> g_reacquiring{0};
std::thread::id g_exit_thread;  // written before g_exiting is set

[[noreturn]] void park() {
  for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
}

void on_interpreter_exit() {  // atexit: the GIL held, finalization not yet begun
  g_exit_thread = std::this_thread::get_id();
  g_exiting.store(true);
  while (g_reacquiring.load() > 0) {
    nb::gil_scoped_release g;  // safe: not finalizing yet
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

// Registers on_interpreter_exit once (the caller holds the GIL).
void watch_interpreter_exit() {
  static bool registered = false;
  if (registered) return;
  registered = true;
  nb::module_::import_("atexit").attr("register")(nb::cpp_function(&on_interpreter_exit));
}

// The GIL released for its lifetime; taken back only while the interpreter is
// not exiting (above).
class ReleasedGil {
 public:
  ReleasedGil() : state_(PyEval_SaveThread()) {}
  ~ReleasedGil() {
    g_reacquiring.fetch_add(1);
    if (g_exiting.load() && std::this_thread::get_id() != g_exit_thread) {
      g_reacquiring.fetch_sub(1);
      park();
    }
    PyEval_RestoreThread(state_);
    g_reacquiring.fetch_sub(1);
  }
  ReleasedGil(const ReleasedGil&) = delete;
  ReleasedGil& operator=(const ReleasedGil&) = delete;

 private:
  PyThreadState* state_;
};

}  // namespace

void wait_until(const std::function<bool()>& done) {
  using namespace std::chrono;
  watch_interpreter_exit();
  const auto start = steady_clock::now();
  for (;;) {
    bool finished;
    {
      ReleasedGil g;
      // The first 2 ms poll, yielding the core (to the CPU backend's own
      // workers among others): a GPU kernel's wait ends within microseconds
      // of its work, as torch.cuda.synchronize's spin does. Longer waits
      // sleep a sixteenth of the time waited so far (at most 1 ms; Linux
      // sleeps at least ~50 us), so they end a few percent late at most.
      const auto slice_end = steady_clock::now() + milliseconds(50);
      while (!(finished = done()) && steady_clock::now() < slice_end) {
        const auto waited = steady_clock::now() - start;
        if (waited < milliseconds(2)) std::this_thread::yield();
        else std::this_thread::sleep_for(std::min<steady_clock::duration>(milliseconds(1), waited / 16));
      }
    }
    if (finished) return;
    if (PyErr_CheckSignals() != 0) throw nb::python_error();
  }
}

void run_interruptible(const std::function<void()>& call) {
  // Python runs signal handlers on its main thread only.
  static const unsigned long main_thread =
      nb::cast<unsigned long>(nb::module_::import_("threading").attr("main_thread")().attr("ident"));
  PyObject *type = nullptr, *value = nullptr, *traceback = nullptr;
  DeferLogDelivery log_after;  // the compile's records, once it has unwound
  auto pending = [&] {
    if (PyThread_get_thread_ident() != main_thread || g_exiting.load()) return false;
    nb::gil_scoped_acquire g;
    if (PyErr_CheckSignals() == 0) return false;
    PyErr_Fetch(&type, &value, &traceback);  // raised once the compile has unwound
    return true;
  };
  try {
    jit::InterruptScope scope(pending);
    ReleasedGil g;
    call();
  } catch (...) {
    if (!type) throw;
  }
  if (type) {  // the handler's exception, rather than what the stopped compile threw
    PyErr_Restore(type, value, traceback);
    throw nb::python_error();
  }
}

void install_queue_wait() {
  // A thread holding the GIL that queues into a full stream waits as every
  // wait does (Ctrl-C raises there, nothing is queued); others block in the
  // stream, having released the GIL themselves.
  runtime::set_queue_wait([](const std::function<bool()>& ready) {
    if (!PyGILState_Check()) return false;
    wait_until(ready);
    return true;
  });
}

void wait_for_device(const Device& d) {
  wait_until([&] { return query(d); });
  ReleasedGil g;
  synchronize(d);  // finds the work done; raises what failed
}

void wait_for_reads(const Device& d) {
  wait_until([&] { return query(d); });
  ReleasedGil g;
  Stream::current(d).synchronize();  // finds the work done; raises what failed on this thread's stream
}

}  // namespace bronze::py
