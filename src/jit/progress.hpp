// A long compile's line on the terminal. When stderr is a terminal and a
// compile has run for 2 s, "bronze: compiling quantized.metal (3 of 16
// parts built, 12 s)" is written there and rewritten in place every half
// second by a thread of the compile's own, and cleared when it ends. One
// compile's line at a time: the first of concurrent ones.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <string>
#include <thread>

namespace bronze::jit {

class CompileProgress {
 public:
  // what: "compiling quantized.metal"; parts: built in parallel (1: not said).
  CompileProgress(std::string what, std::size_t parts);
  ~CompileProgress();
  CompileProgress(const CompileProgress&) = delete;
  CompileProgress& operator=(const CompileProgress&) = delete;
  void part_done() { done_.fetch_add(1, std::memory_order_relaxed); }

 private:
  void show();
  const std::string what_;
  const std::size_t parts_;
  std::atomic<std::size_t> done_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool finished_ = false;
  std::thread ticker_;
};

}  // namespace bronze::jit
