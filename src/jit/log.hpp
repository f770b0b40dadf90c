// bronze's log: each compile (what, the compiler's command line or NVRTC's
// options, how long, the compile cache's answer), the fallbacks bronze takes,
// and at debug each launch and cache lookup. $BRONZE_LOG sets the level: off
// (the default), info or debug, read strictly (jit/env.hpp) by the first site
// that asks, whose call then raises the ValueError naming it.
//
// Off, a site costs one relaxed atomic load: the message is built only when
// its level is on. Records go to stderr, a line each, unless a sink is set
// (the Python module sets one that hands them to logging.getLogger("bronze")).
// With a sink they are queued and the sink is told; it must neither block nor
// take a lock of its own that another thread may hold while waiting (a site
// may hold bronze's locks), so it only arranges for take_log_records() to be
// called where delivering is safe.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

namespace bronze::jit {

enum class LogLevel : int { Off = 0, Info = 1, Debug = 2 };

namespace detail {
constexpr int kLevelUnread = 3;  // above every level: the first check reads $BRONZE_LOG
extern std::atomic<int> g_log_level;
bool read_log_level(LogLevel level);  // parses $BRONZE_LOG; whether `level` is on
void log_record(LogLevel level, std::string message);
}  // namespace detail

inline bool log_enabled(LogLevel level) {
  const int l = detail::g_log_level.load(std::memory_order_relaxed);
  return l >= static_cast<int>(level) && (l != detail::kLevelUnread || detail::read_log_level(level));
}

// Records message() (called only when `level` is on).
template <typename Message>
void log(LogLevel level, Message&& message) {
  if (log_enabled(level)) detail::log_record(level, message());
}

// $BRONZE_LOG's level (ValueError when it is not off, info or debug).
LogLevel log_level();
const char* log_level_name(LogLevel level);  // "off", "info", "debug"

struct LogRecord {
  LogLevel level;
  std::string message;
  double time;  // seconds since the epoch, when it was recorded
};

// Called, from the recording thread, after a record is queued for a sink.
using LogSink = void (*)();
// With a sink records are queued for take_log_records(); without (nullptr)
// each goes to stderr. Queued records past 10,000 are dropped (counted in
// the next one taken).
void set_log_sink(LogSink sink);
std::vector<LogRecord> take_log_records();
// Whether records wait for take_log_records() (one relaxed load).
bool log_records_waiting();

// What this thread compiles, named in the records of the compilers it runs
// ("quantized.metal, part 3 of 16"): set by the API around a build, on each
// thread that builds a part. Costs no formatting until a record is made.
class LogScope {
 public:
  LogScope(const std::string& unit, std::size_t part = 0, std::size_t parts = 1);
  ~LogScope();
  LogScope(const LogScope&) = delete;
  LogScope& operator=(const LogScope&) = delete;
  // This thread's innermost scope as text ("a compile" outside every scope).
  static std::string name();

 private:
  std::string unit_;  // a copy: callers pass temporaries
  std::size_t part_, parts_;
  const LogScope* outer_;
};

// The time since `start`, as "1.23 s".
std::string elapsed(std::chrono::steady_clock::time_point start);

// A command line as one line (arguments with spaces or quotes quoted).
std::string command_line(const std::vector<std::string>& argv);

}  // namespace bronze::jit
