// A bounded busy-wait: how long a CPU worker polls for work, or a waiter for
// completion, before sleeping. A thread wake-up through the kernel costs tens
// of microseconds on some hosts; polling briefly keeps queue hand-offs at
// about a microsecond.
#pragma once

#include <chrono>

namespace bronze::cpu {

constexpr auto kSpinBudget = std::chrono::microseconds(50);

template <class Pred>
bool spin_until(Pred done) {
  auto until = std::chrono::steady_clock::now() + kSpinBudget;
  do {
    for (int i = 0; i < 64; ++i) {
      if (done()) return true;
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    }
  } while (std::chrono::steady_clock::now() < until);
  return done();
}

}  // namespace bronze::cpu
