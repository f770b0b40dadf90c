// Waiting for device work from Python. A wait blocks without the GIL, in
// slices between which a pending signal runs its Python handler, so Ctrl-C
// raises KeyboardInterrupt in the waiting call (the queued work goes on).
#include <algorithm>
#include <chrono>
#include <thread>

#include "common.hpp"

namespace bronze::py {

void wait_until(const std::function<bool()>& done) {
  using namespace std::chrono;
  const auto start = steady_clock::now();
  for (;;) {
    bool finished;
    {
      nb::gil_scoped_release g;
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

void wait_for_device(const Device& d) {
  wait_until([&] { return query(d); });
  nb::gil_scoped_release g;
  synchronize(d);  // finds the work done; raises what failed
}

}  // namespace bronze::py
