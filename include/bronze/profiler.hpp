// The profiler: while active, every queued operation records an interval
// (its start and end on the device timeline) and/or a completion event; stop()
// writes a Chrome trace (chrome://tracing, ui.perfetto.dev).
#pragma once

#include <string>

namespace bronze::profiler {

// mode: "interval", "event" or "interval,event" (case and spaces ignored);
// anything else throws ValueError. Starting twice throws Error.
// wait_until_completed makes every operation wait for its completion, so
// intervals do not overlap.
void start(const std::string& mode = "interval", bool wait_until_completed = false);
// Waits for queued work, writes the trace and returns its path: `path`, else
// $BRONZE_TRACE_FILE, else bronze-trace-<pid>.json in the working directory.
// A trace it cannot write is kept (the Error names the path): stop() again,
// with another path, writes it; start() drops it. Throws ValueError when
// the profiler is not running and no trace is kept.
std::string stop(const std::string& path = "");
bool is_running();
bool has_unwritten_trace();

// GPU capture: enabled by BRONZE_CAPTURE_ENABLED=1 (or MTL_CAPTURE_ENABLED=1).
bool is_capture_enabled();
bool is_capturing();
// Throws Error when capture is not enabled or one is already running.
void start_capture(const std::string& path);
void stop_capture();

}  // namespace bronze::profiler
