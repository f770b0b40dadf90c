#include "jit/progress.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <chrono>
#include <system_error>

namespace bronze::jit {
namespace {
std::atomic<bool> g_shown{false};  // a compile's line is on the terminal (or may be)

void write_stderr(const std::string& s) { [[maybe_unused]] ssize_t n = ::write(2, s.data(), s.size()); }
}  // namespace

CompileProgress::CompileProgress(std::string what, std::size_t parts) : what_(std::move(what)), parts_(parts) {
  if (!::isatty(2) || g_shown.exchange(true)) return;
  try {
    ticker_ = std::thread([this] { show(); });
  } catch (const std::system_error&) {  // no thread to spare: the compile goes on without its line
    g_shown.store(false);
  }
}

CompileProgress::~CompileProgress() {
  if (!ticker_.joinable()) return;
  {
    std::lock_guard<std::mutex> g(mu_);
    finished_ = true;
  }
  cv_.notify_one();
  ticker_.join();
  g_shown.store(false);
}

void CompileProgress::show() {
  using namespace std::chrono;
  const auto start = steady_clock::now();
  bool written = false;
  std::unique_lock<std::mutex> g(mu_);
  for (auto next = start + seconds(2); !cv_.wait_until(g, next, [&] { return finished_; }); next += milliseconds(500)) {
    std::string line = "bronze: " + what_ + " (";
    if (parts_ > 1) line += std::to_string(done_.load(std::memory_order_relaxed)) + " of " + std::to_string(parts_) + " parts built, ";
    line += std::to_string(duration_cast<seconds>(steady_clock::now() - start).count()) + " s)";
    // Within the terminal's width: a wrapped line could not be rewritten in place.
    winsize ws{};
    if (::ioctl(2, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1 && line.size() >= ws.ws_col) line.resize(ws.ws_col - 1);
    write_stderr("\r\033[K" + line);
    written = true;
  }
  if (written) write_stderr("\r\033[K");
}

}  // namespace bronze::jit
