// A CPU stream: a FIFO of host closures run in order. Streams own no thread:
// a bounded set of executor threads (cpu_stream.cpp) runs the streams that
// have work, one thread per stream at a time, so a process may hold any
// number of streams. A closure may fan out to the thread pool. Failures are
// kept and rethrown at the next synchronize(), like asynchronous device
// errors. A stream holds at most runtime::kMaxQueuedOps unfinished ops: a
// thread queueing more waits for it to drain, as CUDA blocks a launch when
// its queue is full.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "runtime/stream_impl.hpp"

namespace bronze::cpu {

class CpuStream final : public runtime::StreamImpl, public std::enable_shared_from_this<CpuStream> {
 public:
  // Throws when no executor thread can be started at all.
  explicit CpuStream(Device d);

  Device device() const override { return device_; }
  std::uint64_t id() const override { return id_; }
  void synchronize() override;
  void wait() override;
  bool query() override;

  // Queues `fn`, first waiting while the stream is full. `name` and
  // `category` label it in profiles and errors; both must stay valid until
  // the op has run (literals, or names the op keeps alive).
  void enqueue(const char* name, const char* category, std::function<void()> fn);

  // Blocks while the stream holds kMaxQueuedOps unfinished ops, until it has
  // drained to half of that; from Python, Ctrl-C raises there
  // (runtime::queue_wait). Never blocks the executor threads themselves (an
  // op that queues work on some stream, as a freed block's event does).
  void wait_for_room();
  // Queues `fn` at once (after wait_for_room). `release(arg)` runs after the
  // op's completion was recorded in profiles and errors, before it counts as
  // done: what keeps `name` alive may go there.
  void push(const char* name, const char* category, std::function<void()> fn, void (*release)(void*) = nullptr,
            void* arg = nullptr);

  // A wait of the stream's later ops that holds no thread: when it reaches
  // the head, `ready(self)` says whether the stream may go on; if not, it has
  // arranged for resume() to be called once it may (an event's completion).
  using Gate = std::function<bool(const std::shared_ptr<CpuStream>&)>;
  void enqueue_gate(const char* name, const char* category, Gate ready);
  void resume();

 private:
  friend class Executor;
  struct GateOp {
    Gate ready;
    std::int64_t begin = 0;  // profiling: when it was first tried
  };
  struct Op {
    const char* name;
    const char* category;
    std::function<void()> fn;
    void (*release)(void*) = nullptr;
    void* arg = nullptr;
    std::unique_ptr<GateOp> gate;  // a wait (rare): fn is empty
  };
  void push_op(Op&& op);
  // On an executor thread (self is this stream): runs ops until the stream
  // has none (after a short spin), waits at a gate, or owes its thread to a
  // waiting stream.
  void drain(const std::shared_ptr<CpuStream>& self);
  void wait_idle(std::unique_lock<std::mutex>& lock);

  Device device_;
  std::uint64_t id_;
  std::string device_name_;
  std::string first_error_;
  std::uint64_t error_count_ = 0;
  std::optional<Op> at_gate_;  // the executor's: the gate op it parked at
  std::condition_variable done_cv_;
  // What the queueing threads and the executor both touch, each on cache
  // lines of its own: the queue with its lock, then the counters that each
  // side writes and the other side's spin reads.
  alignas(64) std::mutex mu_;
  std::deque<Op> queue_;
  int waiters_ = 0;  // threads in wait_idle or waiting for room (the executor signals only then)
  // Under mu_: an executor runs the stream or will (it is queued for one).
  bool scheduled_ = false;
  bool parked_ = false;  // at a gate, not scheduled; resume() schedules it
  bool woken_ = false;   // resume() came before the executor parked it
  // Written under mu_, read without it by the short spins that keep
  // launch-to-completion latency off the futex path.
  alignas(64) std::atomic<std::uint64_t> submitted_{0};
  alignas(64) std::atomic<std::uint64_t> completed_{0};
};

}  // namespace bronze::cpu
