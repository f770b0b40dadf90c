// Command capture: while active, every command queued on any stream is
// appended to a capture file (JSON lines: a header, then one object per
// command) that `bronze capture show` lists. Each line reaches the file as it
// is recorded, so a process that dies inside a capture leaves every command
// queued before it (and at most one partial last line).
#pragma once

#include <atomic>
#include <functional>
#include <string>

namespace bronze::runtime::capture {

namespace detail {
extern std::atomic<bool> g_active;
}
inline bool active() { return detail::g_active.load(std::memory_order_relaxed); }

void begin(const std::string& path);  // throws Error when one runs already
void end();                           // throws Error when none runs
// `fields` is the inside of a JSON object (`"k":v,...`) describing the command.
void record(const std::string& fields);
// Records `fields()` the first time `key` is seen in this capture (a
// library's source, before the first command that uses it).
void record_once(const std::string& key, const std::function<std::string()>& fields);

}  // namespace bronze::runtime::capture
