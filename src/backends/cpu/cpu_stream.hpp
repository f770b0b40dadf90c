// A CPU stream: a FIFO of host closures run in order by one worker thread
// (which may fan out to the thread pool). Failures are kept and rethrown at
// the next synchronize(), like asynchronous device errors.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "runtime/stream_impl.hpp"

namespace bronze::cpu {

class CpuStream final : public runtime::StreamImpl {
 public:
  explicit CpuStream(Device d);
  ~CpuStream() override;  // drains the queue

  Device device() const override { return device_; }
  std::uint64_t id() const override { return id_; }
  void synchronize() override;
  void wait() override;
  bool query() override;

  // Queues `fn`. `name` and `category` label it in profiles and errors; both
  // must stay valid until the op has run (literals, or names the op keeps alive).
  void enqueue(const char* name, const char* category, std::function<void()> fn);

 private:
  struct Op {
    const char* name;
    const char* category;
    std::function<void()> fn;
  };
  void run();
  void wait_idle(std::unique_lock<std::mutex>& lock);

  Device device_;
  std::uint64_t id_;
  std::mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  std::deque<Op> queue_;
  // Written under mu_, read without it by the short spins that keep
  // launch-to-completion latency off the futex path.
  std::atomic<std::uint64_t> submitted_{0}, completed_{0};
  int waiters_ = 0;  // threads in wait_idle (the worker signals only then)
  std::string first_error_;
  std::uint64_t error_count_ = 0;
  bool stop_ = false;
  std::thread worker_;
};

}  // namespace bronze::cpu
