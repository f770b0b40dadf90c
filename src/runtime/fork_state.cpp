#include "runtime/fork_state.hpp"

#include <pthread.h>

#include <atomic>
#include <mutex>
#include <string>

#include "bronze/error.hpp"

namespace bronze::runtime {
namespace {
constexpr int kTypes = 2;  // DeviceType::CPU, DeviceType::CUDA
std::atomic<bool> g_started[kTypes], g_forked[kTypes];

int slot(DeviceType t) { return t == DeviceType::CPU ? 0 : 1; }

void in_child() {
  for (int i = 0; i < kTypes; ++i)
    if (g_started[i].load()) g_forked[i].store(true);
}
}  // namespace

void note_backend_started(DeviceType t) {
  static std::once_flag once;
  std::call_once(once, [] { pthread_atfork(nullptr, nullptr, in_child); });
  g_started[slot(t)].store(true);
}

bool forked_after_start(DeviceType t) { return g_forked[slot(t)].load(std::memory_order_relaxed); }

void check_not_forked(DeviceType t) {
  if (!forked_after_start(t)) return;
  const bool cpu = t == DeviceType::CPU;
  throw Error(std::string("bronze's ") + (cpu ? "CPU" : "CUDA") +
              " backend cannot run in this process: it was forked (os.fork, or multiprocessing's 'fork' start "
              "method) after the parent started " +
              (cpu ? "bronze's worker threads" : "the CUDA driver") +
              ", which the child does not have. Start the children with multiprocessing's 'spawn' or "
              "'forkserver' method, or fork before using bronze.");
}

}  // namespace bronze::runtime
