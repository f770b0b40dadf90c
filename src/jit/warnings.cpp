#include "jit/warnings.hpp"

#include <atomic>
#include <iostream>

namespace bronze::jit {
namespace {
std::atomic<WarningHandler> g_handler{nullptr};
}  // namespace

void set_warning_handler(WarningHandler h) { g_handler.store(h); }

void warn(const std::string& message) {
  if (WarningHandler h = g_handler.load()) h(message);
  else std::cerr << message << std::endl;
}

}  // namespace bronze::jit
