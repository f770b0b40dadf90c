#include "bronze/profiler.hpp"

#include <algorithm>
#include <cctype>
#include <exception>

#include "bronze/device.hpp"
#include "bronze/error.hpp"
#include "jit/env.hpp"
#include "runtime/capture.hpp"
#include "runtime/profiler.hpp"

namespace bronze::profiler {

void start(const std::string& mode, bool wait_until_completed) {
  std::string m;
  for (char c : mode)
    if (!std::isspace(static_cast<unsigned char>(c)))
      m += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  runtime::prof::Mode pm;
  pm.serialize = wait_until_completed;
  if (m == "interval") pm.intervals = true;
  else if (m == "event") pm.events = true;
  else if (m == "interval,event" || m == "event,interval") pm.intervals = pm.events = true;
  else
    throw ValueError("invalid profiler mode '" + mode +
                     "': expected 'interval', 'event' or 'interval,event'");
  runtime::prof::begin(pm);
}

std::string stop(const std::string& path) {
  if (!is_running()) return runtime::prof::end(path);  // writes a kept trace, or throws: not running
  // Let queued work finish so its intervals are in the trace. A failure of
  // that work is raised after the trace is written (stop is a sync point).
  std::exception_ptr failure;
  for (const Device& d : devices()) {
    try {
      synchronize(d);
    } catch (const DeviceError&) {
      if (!failure) failure = std::current_exception();
    }
  }
  std::string written = runtime::prof::end(path);
  if (failure) std::rethrow_exception(failure);
  return written;
}

bool is_running() { return runtime::prof::active(); }

bool has_unwritten_trace() { return runtime::prof::has_unwritten_trace(); }

bool is_capture_enabled() {
  for (const char* var : {"BRONZE_CAPTURE_ENABLED", "MTL_CAPTURE_ENABLED"})
    if (jit::env_bool(var, false)) return true;
  return false;
}

bool is_capturing() { return runtime::capture::active(); }

void start_capture(const std::string& path) {
  if (!is_capture_enabled())
    throw Error("GPU capture is not enabled: set BRONZE_CAPTURE_ENABLED=1 (or MTL_CAPTURE_ENABLED=1) "
                "in the environment");
  runtime::capture::begin(path);
}

void stop_capture() { runtime::capture::end(); }

}  // namespace bronze::profiler
