// JIT kernel code runs under a guard, as a GPU kernel runs under its
// device's fault handling: a fault (SIGSEGV, SIGBUS, SIGFPE, SIGILL, a stack
// overflow) or a launch running past its time limit ends that launch with an
// error instead of ending the process. Integer division by zero or INT_MIN / -1
// does not fault at all on x86-64: the division yields a value (the dividend,
// remainder 0), as a GPU's does, and the kernel goes on.
//
// The guard leaves the kernel by siglongjmp from the signal handler. That is
// sound for kernel code, which holds no runtime locks and calls no library
// functions that could be left half done; what a fault means for memory the
// kernel wrote is said in the error.
#pragma once

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

namespace bronze::cpu {

class KernelGuard {
 public:
  // `time_limit_s` <= 0: no limit. The limit counts from construction.
  KernelGuard(std::string kernel, double time_limit_s);

  // Runs fn(ctx) on the calling thread. False when it faulted or was stopped
  // (or another thread's part already failed, in which case fn is not run).
  bool run(void (*fn)(void*), void* ctx);
  template <class F>
  bool run(F& f) {
    return run([](void* p) { (*static_cast<F*>(p))(); }, &f);
  }

  // Throws bronze::Error describing the first failure, if any.
  void check() const;

  struct Failure {
    int signal = 0;             // the signal, or 0 for the time limit
    std::uintptr_t address = 0;
    bool write = false;         // SIGSEGV: the access was a write (where the CPU says)
    bool stack_overflow = false;
    bool stack_overrun = false;  // past the top of the kernel's stack: a private array's end
  };
  std::optional<Failure> failure() const;

 private:
  std::string kernel_;
  double time_limit_s_;
  std::chrono::steady_clock::time_point deadline_;
  std::atomic<bool> failed_{false};
  mutable std::mutex mu_;
  Failure failure_;
};

}  // namespace bronze::cpu
