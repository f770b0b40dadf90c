#include "runtime/profiler.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>
#include <vector>

#include "bronze/error.hpp"

namespace bronze::runtime::prof {
namespace detail {
std::atomic<bool> g_active{false};
}

namespace {
struct MemRecord {
  std::string device;
  const char* what;
  std::size_t bytes, allocated, reserved;
  std::int64_t ts_ns;
};
struct Session {
  std::mutex mu;
  Mode mode;
  std::int64_t start_ns = 0;
  std::vector<OpRecord> ops;
  std::vector<std::function<OpRecord()>> pending;
  std::vector<MemRecord> mem;
  std::string unwritten;  // a trace stop() could not write, for the next stop()
};
Session& session() {
  static Session* s = new Session;  // outlives static destructors
  return *s;
}
}  // namespace

Mode mode() {
  Session& s = session();
  std::lock_guard<std::mutex> g(s.mu);
  return s.mode;
}

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void record_op(OpRecord&& r) {
  Session& s = session();
  std::lock_guard<std::mutex> g(s.mu);
  if (!active()) return;
  s.ops.push_back(std::move(r));
}

void record_pending(std::function<OpRecord()> resolve) {
  Session& s = session();
  std::lock_guard<std::mutex> g(s.mu);
  if (!active()) return;
  s.pending.push_back(std::move(resolve));
}

std::int64_t session_start_ns() {
  Session& s = session();
  std::lock_guard<std::mutex> g(s.mu);
  return s.start_ns;
}

void memory_event(const std::string& device, const char* what, std::size_t bytes,
                  std::size_t allocated, std::size_t reserved) {
  Session& s = session();
  std::int64_t t = now_ns();
  std::lock_guard<std::mutex> g(s.mu);
  if (!active()) return;
  s.mem.push_back({device, what, bytes, allocated, reserved, t});
}

void begin(Mode m) {
  Session& s = session();
  std::lock_guard<std::mutex> g(s.mu);
  if (active()) throw Error("profiler is already running; call stop() first");
  s.mode = m;
  s.ops.clear();
  s.pending.clear();
  s.mem.clear();
  s.unwritten.clear();  // a new session supersedes it
  s.start_ns = now_ns();
  detail::g_active.store(true);
}

bool has_unwritten_trace() {
  Session& s = session();
  std::lock_guard<std::mutex> g(s.mu);
  return !s.unwritten.empty();
}

namespace {
// Microseconds since the session's start, as the trace format counts.
double us(std::int64_t ns, std::int64_t origin) { return static_cast<double>(ns - origin) / 1000.0; }

// Chrome trace: one process per device, one thread per stream.
std::string render(std::vector<OpRecord>& ops, const std::vector<MemRecord>& mem, const Mode& m,
                   std::int64_t origin) {
  using nlohmann::ordered_json;
  std::sort(ops.begin(), ops.end(), [](const OpRecord& a, const OpRecord& b) { return a.begin_ns < b.begin_ns; });
  std::vector<std::string> devices;
  auto pid_of = [&](const std::string& d) {
    for (std::size_t i = 0; i < devices.size(); ++i)
      if (devices[i] == d) return static_cast<int>(i) + 1;
    devices.push_back(d);
    return static_cast<int>(devices.size());
  };
  ordered_json events = ordered_json::array();
  std::set<std::pair<int, std::uint64_t>> threads;
  for (const OpRecord& r : ops) {
    int pid = pid_of(r.device);
    threads.insert({pid, r.stream});
    if (m.intervals)
      events.push_back({{"name", r.name}, {"cat", r.category}, {"ph", "X"}, {"pid", pid}, {"tid", r.stream},
                        {"ts", us(r.begin_ns, origin)}, {"dur", us(r.end_ns, r.begin_ns)}});
    if (m.events)
      events.push_back({{"name", r.name + " completed"}, {"cat", r.category}, {"ph", "i"}, {"s", "t"}, {"pid", pid},
                        {"tid", r.stream}, {"ts", us(r.end_ns, origin)}});
  }
  for (const MemRecord& r : mem) {
    int pid = pid_of(r.device);
    events.push_back({{"name", "memory"}, {"ph", "C"}, {"pid", pid}, {"ts", us(r.ts_ns, origin)},
                      {"args", {{"allocated", r.allocated}, {"reserved", r.reserved}}}});
    events.push_back({{"name", r.what}, {"cat", "memory"}, {"ph", "i"}, {"s", "p"}, {"pid", pid}, {"tid", 0},
                      {"ts", us(r.ts_ns, origin)}, {"args", {{"bytes", r.bytes}}}});
  }
  for (std::size_t i = 0; i < devices.size(); ++i)
    events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", i + 1}, {"args", {{"name", "bronze " + devices[i]}}}});
  for (const auto& [pid, tid] : threads)
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", pid}, {"tid", tid},
                      {"args", {{"name", "stream " + std::to_string(tid)}}}});
  ordered_json trace{{"displayTimeUnit", "ms"}, {"otherData", {{"generator", "bronze"}}}, {"traceEvents", std::move(events)}};
  // Op names are the user's bytes: invalid UTF-8 in them becomes U+FFFD rather than an exception.
  return trace.dump(-1, ' ', false, ordered_json::error_handler_t::replace) + "\n";
}
}  // namespace

std::string end(const std::string& path_arg) {
  Session& s = session();
  std::vector<OpRecord> ops;
  std::vector<std::function<OpRecord()>> pending;
  std::vector<MemRecord> mem;
  Mode m;
  std::int64_t origin = 0;
  std::string trace;
  {
    std::lock_guard<std::mutex> g(s.mu);
    if (active()) {
      detail::g_active.store(false);
      ops.swap(s.ops);
      pending.swap(s.pending);
      mem.swap(s.mem);
      m = s.mode;
      origin = s.start_ns;
    } else if (!s.unwritten.empty()) {
      trace.swap(s.unwritten);
    } else {
      throw ValueError("profiler is not running; call start() first");
    }
  }
  if (trace.empty()) {
    for (auto& resolve : pending) ops.push_back(resolve());  // waits for each GPU op's end event
    trace = render(ops, mem, m, origin);
  }
  std::string path = path_arg;
  if (path.empty()) {
    const char* env = std::getenv("BRONZE_TRACE_FILE");
    path = env && *env ? env : "bronze-trace-" + std::to_string(::getpid()) + ".json";
  }
  bool written;
  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    written = f && f.write(trace.data(), static_cast<std::streamsize>(trace.size())) && f.flush();
  }
  if (!written) {
    const int err = errno;
    {
      std::lock_guard<std::mutex> g(s.mu);
      if (!active()) s.unwritten = std::move(trace);
    }
    throw Error("profiler: cannot write the trace to '" + path + "': " + std::strerror(err) +
                "; it is kept: call stop(path=...) to write it elsewhere");
  }
  return path;
}

}  // namespace bronze::runtime::prof
