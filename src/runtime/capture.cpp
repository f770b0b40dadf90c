#include "runtime/capture.hpp"

#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <unordered_set>

#include "bronze/error.hpp"

namespace bronze::runtime::capture {
namespace detail {
std::atomic<bool> g_active{false};
}

namespace {
struct State {
  std::mutex mu;
  std::ofstream file;
  std::string path;
  std::uint64_t seq = 0;
  std::unordered_set<std::string> seen;  // record_once keys of this capture
};
State& state() {
  static State* s = new State;
  return *s;
}
}  // namespace

void begin(const std::string& path) {
  State& s = state();
  std::lock_guard<std::mutex> g(s.mu);
  if (active()) throw Error("a capture is already running (to '" + s.path + "')");
  s.file.open(path, std::ios::binary | std::ios::trunc);
  if (!s.file) throw Error("cannot open capture file '" + path + "'");
  s.path = path;
  s.seq = 0;
  s.seen.clear();
  s.file << nlohmann::ordered_json{{"bronze_capture", 1}}.dump() << '\n' << std::flush;
  detail::g_active.store(true);
}

void end() {
  State& s = state();
  std::lock_guard<std::mutex> g(s.mu);
  if (!active()) throw Error("no capture is running");
  detail::g_active.store(false);
  s.file.close();
}

namespace {
void write(State& s, const nlohmann::ordered_json& fields) {
  nlohmann::ordered_json line{{"seq", s.seq++}};
  line.update(fields);
  // Names and shader sources are the user's bytes: invalid UTF-8 in them
  // becomes U+FFFD rather than an exception.
  s.file << line.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << '\n' << std::flush;
}
}  // namespace

void record(const nlohmann::ordered_json& fields) {
  State& s = state();
  std::lock_guard<std::mutex> g(s.mu);
  if (active()) write(s, fields);
}

void record_once(const std::string& key, const std::function<nlohmann::ordered_json()>& fields) {
  State& s = state();
  std::lock_guard<std::mutex> g(s.mu);
  if (active() && s.seen.insert(key).second) write(s, fields());
}

}  // namespace bronze::runtime::capture
