#include "jit/interrupt.hpp"

#include <utility>

namespace bronze::jit {
namespace {
thread_local InterruptFlag t_flag;
thread_local const std::function<bool()>* t_pending = nullptr;
}  // namespace

InterruptScope::InterruptScope(std::function<bool()> pending)
    : pending_(std::move(pending)), saved_flag_(t_flag), saved_pending_(t_pending) {
  t_flag = std::make_shared<std::atomic<bool>>(false);
  t_pending = &pending_;
}

InterruptScope::~InterruptScope() {
  t_flag = std::move(saved_flag_);
  t_pending = saved_pending_;
}

SharedInterrupt::SharedInterrupt(InterruptFlag flag) : saved_(t_flag) { t_flag = std::move(flag); }
SharedInterrupt::~SharedInterrupt() { t_flag = std::move(saved_); }

InterruptFlag interrupt_flag() { return t_flag; }

bool interrupted() {
  if (!t_flag) return false;
  if (!t_flag->load() && t_pending && (*t_pending)()) t_flag->store(true);
  return t_flag->load();
}

void check_interrupt() {
  if (interrupted()) throw Interrupted();
}

}  // namespace bronze::jit
