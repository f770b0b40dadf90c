// The profiler's recording side. Backends call these from their queues; the
// checks are one relaxed atomic load when profiling is off.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

namespace bronze::runtime::prof {

struct Mode {
  bool intervals = false;
  bool events = false;
  bool serialize = false;  // wait_until_completed
};

namespace detail {
extern std::atomic<bool> g_active;
}
inline bool active() { return detail::g_active.load(std::memory_order_relaxed); }
Mode mode();
std::int64_t now_ns();  // the device timeline of the CPU backend (steady clock)

struct OpRecord {
  std::string name;
  const char* category = "op";  // kernel, copy, fill, random, sync, ...
  std::string device;
  std::uint64_t stream = 0;
  std::int64_t begin_ns = 0;
  std::int64_t end_ns = 0;
};
void record_op(OpRecord&& r);
// GPU ops finish after they are queued: the backend hands over a resolver
// that stop() calls (it waits for the op's end) to get the op's interval.
void record_pending(std::function<OpRecord()> resolve);
// When the running session began (now_ns() clock): backends key per-session
// state (a GPU timeline reference) on it.
std::int64_t session_start_ns();
void memory_event(const std::string& device, const char* what, std::size_t bytes,
                  std::size_t allocated, std::size_t reserved);

// Session control (the public API validates arguments first).
void begin(Mode m);  // throws Error when already running; drops an unwritten trace
// Writes the session's trace (or, when none runs, the trace an earlier end()
// could not write) and returns the path. A trace that cannot be written is
// kept for the next end() and the Error names the path.
std::string end(const std::string& path);
bool has_unwritten_trace();

}  // namespace bronze::runtime::prof
