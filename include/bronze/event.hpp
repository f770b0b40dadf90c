// Events mark a point in a stream: other streams can wait on it, the host can
// poll or block on it, and two timing events give the device time between.
#pragma once

#include <memory>
#include <optional>

#include "bronze/stream.hpp"

namespace bronze {
namespace runtime {
class EventImpl;
}

class Event {
 public:
  explicit Event(bool enable_timing = false);

  // Records on `stream` (the current stream by default).
  void record(std::optional<Stream> stream = std::nullopt);
  // Makes `stream` wait until the recorded work has finished. No-op when the
  // event was never recorded.
  void wait(std::optional<Stream> stream = std::nullopt);
  bool query() const;  // true when recorded work finished (or never recorded)
  void synchronize() const;
  // Milliseconds between this event and `end` on the device timeline. Throws
  // Error when either lacks enable_timing, was never recorded, or `end`
  // completed before this event.
  double elapsed_time(const Event& end) const;

  bool enable_timing() const { return timing_; }
  bool recorded() const;

 private:
  bool timing_;
  std::shared_ptr<runtime::EventImpl> impl_;  // made at the first record()
};

}  // namespace bronze
