// Command capture: while active, every command queued on any stream is
// appended to a capture file (JSON lines: a header, then one object per
// command) that `bronze capture show` lists. Each line reaches the file as it
// is recorded, so a process that dies inside a capture leaves every command
// queued before it (and at most one partial last line).
#pragma once

#include <atomic>
#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <string>

namespace bronze::runtime::capture {

namespace detail {
extern std::atomic<bool> g_active;
}
inline bool active() { return detail::g_active.load(std::memory_order_relaxed); }

void begin(const std::string& path);  // throws Error when one runs already
void end();                           // throws Error when none runs
// `fields`, an object describing the command, becomes its line (after "seq").
void record(const nlohmann::ordered_json& fields);
// Records `fields()` the first time `key` is seen in this capture (a
// library's source, before the first command that uses it).
void record_once(const std::string& key, const std::function<nlohmann::ordered_json()>& fields);

}  // namespace bronze::runtime::capture
