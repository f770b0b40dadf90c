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
  for (;;) {
    bool finished;
    {
      nb::gil_scoped_release g;
      // Spin a little (short waits end here, at full speed), then back off
      // to sleeps of at most a millisecond: a fraction of any longer wait.
      const auto start = steady_clock::now(), slice_end = start + milliseconds(50);
      microseconds pause(0);
      while (!(finished = done()) && steady_clock::now() < slice_end) {
        if (steady_clock::now() - start < microseconds(50)) continue;
        pause = std::min(microseconds(1000), std::max(microseconds(1), pause * 2));
        std::this_thread::sleep_for(pause);
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
