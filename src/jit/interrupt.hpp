// Stopping a compile that is under way. Ctrl-C reaches the thread that
// started the compile (Python runs signal handlers there), which passes it
// on to the compile's other threads through one flag: every wait of a
// compile polls it, and a compiler process running meanwhile is killed
// with its process group.
#pragma once

#include <atomic>
#include <functional>
#include <memory>

#include "bronze/error.hpp"

namespace bronze::jit {

// What a stopped compile throws (its callers translate it: Python raises
// the KeyboardInterrupt that stopped it).
class Interrupted : public Error {
 public:
  Interrupted() : Error("the compile was interrupted") {}
};

using InterruptFlag = std::shared_ptr<std::atomic<bool>>;

// For its lifetime, the calling thread's compiles stop when `pending()`
// (called on this thread, between waits) says so, or when the flag is set.
class InterruptScope {
 public:
  explicit InterruptScope(std::function<bool()> pending);
  ~InterruptScope();
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;

 private:
  std::function<bool()> pending_;
  InterruptFlag saved_flag_;
  const std::function<bool()>* saved_pending_;
};

// For a compile's own threads: they stop with the thread that started them.
class SharedInterrupt {
 public:
  explicit SharedInterrupt(InterruptFlag flag);
  ~SharedInterrupt();
  SharedInterrupt(const SharedInterrupt&) = delete;
  SharedInterrupt& operator=(const SharedInterrupt&) = delete;

 private:
  InterruptFlag saved_;
};

// This thread's flag (null outside an InterruptScope), to hand to SharedInterrupt.
InterruptFlag interrupt_flag();
// Whether this thread's compile is to stop (sets the flag for its other threads).
bool interrupted();
// Throws Interrupted when interrupted().
void check_interrupt();

}  // namespace bronze::jit
