#include "jit/log.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <mutex>

#include "jit/env.hpp"

namespace bronze::jit {
namespace detail {
std::atomic<int> g_log_level{kLevelUnread};

bool read_log_level(LogLevel level) { return log_level() >= level; }
}  // namespace detail

namespace {
constexpr std::size_t kMaxQueued = 10000;

std::atomic<LogSink> g_sink{nullptr};
// A leaf lock: nothing is called while it is held.
std::mutex g_queue_mu;
std::vector<LogRecord> g_queue;
std::size_t g_dropped = 0;
std::atomic<bool> g_waiting{false};

thread_local const LogScope* t_scope = nullptr;

const char* upper_name(LogLevel level) { return level == LogLevel::Debug ? "DEBUG" : "INFO"; }
}  // namespace

LogLevel log_level() {
  int l = detail::g_log_level.load(std::memory_order_relaxed);
  if (l == detail::kLevelUnread) {
    l = env_choice("BRONZE_LOG", 0, {"off", "info", "debug"});  // throws before anything is stored
    detail::g_log_level.store(l, std::memory_order_relaxed);
  }
  return static_cast<LogLevel>(l);
}

const char* log_level_name(LogLevel level) {
  return level == LogLevel::Debug ? "debug" : level == LogLevel::Info ? "info" : "off";
}

void detail::log_record(LogLevel level, std::string message) {
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  if (LogSink sink = g_sink.load()) {
    {
      std::lock_guard<std::mutex> g(g_queue_mu);
      if (g_queue.size() >= kMaxQueued) {
        ++g_dropped;
        return;
      }
      g_queue.push_back({level, std::move(message), now});
      g_waiting.store(true, std::memory_order_relaxed);
    }
    sink();
    return;
  }
  // One write per record: lines of concurrent threads do not interleave.
  const std::string line = std::string("bronze ") + upper_name(level) + ": " + message + "\n";
  [[maybe_unused]] ssize_t n = ::write(2, line.data(), line.size());
}

void set_log_sink(LogSink sink) { g_sink.store(sink); }

std::vector<LogRecord> take_log_records() {
  std::vector<LogRecord> out;
  std::lock_guard<std::mutex> g(g_queue_mu);
  out.swap(g_queue);
  g_waiting.store(false, std::memory_order_relaxed);
  if (g_dropped) {
    out.push_back({LogLevel::Info, std::to_string(g_dropped) + " records dropped (more than " +
                                       std::to_string(kMaxQueued) + " waited to be delivered)",
                   out.back().time});
    g_dropped = 0;
  }
  return out;
}

bool log_records_waiting() { return g_waiting.load(std::memory_order_relaxed); }

LogScope::LogScope(const std::string& unit, std::size_t part, std::size_t parts)
    : unit_(unit), part_(part), parts_(parts), outer_(t_scope) {
  t_scope = this;
}

LogScope::~LogScope() { t_scope = outer_; }

std::string LogScope::name() {
  if (!t_scope) return "a compile";
  const LogScope& s = *t_scope;
  if (s.parts_ <= 1) return s.unit_;
  return s.unit_ + " (part " + std::to_string(s.part_ + 1) + " of " + std::to_string(s.parts_) + ")";
}

std::string elapsed(std::chrono::steady_clock::time_point start) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f s",
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return text;
}

std::string command_line(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& a : argv) {
    if (!out.empty()) out += ' ';
    if (!a.empty() && a.find_first_of(" \t\n'\"\\$") == std::string::npos) {
      out += a;
      continue;
    }
    out += '\'';
    for (char c : a) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += '\'';
  }
  return out;
}

}  // namespace bronze::jit
