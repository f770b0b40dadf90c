#include "backends/cpu/cpu_stream.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <nlohmann/json.hpp>
#include <system_error>
#include <thread>

#include "backends/cpu/spin.hpp"
#include "backends/cpu/worker_memory.hpp"
#include "bronze/error.hpp"
#include "jit/cpus.hpp"
#include "runtime/capture.hpp"
#include "runtime/fork_state.hpp"
#include "runtime/nvtx.hpp"
#include "runtime/profiler.hpp"

namespace bronze::cpu {
namespace {
// Ops a stream runs in a row while another stream waits for a thread.
constexpr int kFairShare = 16;
thread_local bool t_executor = false;  // this thread is an executor
}  // namespace

// The threads that run the streams: started as streams with work find none
// free, up to one per CPU (at least 2). A stream's ops run on one executor at
// a time, in order; waits at gates (event waits) hold none.
class Executor {
 public:
  static Executor& instance() {
    static Executor* e = new Executor;  // never destroyed: queued work may run during exit
    return *e;
  }
  // Queues a stream for a thread, starting one where none is free.
  void post(std::shared_ptr<CpuStream> s) {
    bool start;
    {
      std::lock_guard<std::mutex> g(mu_);
      ready_.push_back(std::move(s));
      waiting_.store(static_cast<int>(ready_.size()), std::memory_order_release);
      start = idle_ < static_cast<int>(ready_.size()) && threads_ < max_threads_;
      if (start) ++threads_, ++idle_;
    }
    if (start) start_thread();  // out of threads: the stream waits for those running
    cv_.notify_one();
  }
  // A stream waits for a thread.
  bool waiting() const { return waiting_.load(std::memory_order_relaxed) > 0; }

 private:
  Executor() : max_threads_(std::max(2, jit::available_cpus())) {
    threads_ = idle_ = 1;
    if (!start_thread()) throw Error("cannot start a thread to run the CPU streams: " + std::string(std::strerror(EAGAIN)));
  }

  bool start_thread() {
    try {
      std::thread([this] { loop(); }).detach();
      return true;
    } catch (const std::system_error&) {
      std::lock_guard<std::mutex> g(mu_);
      --threads_, --idle_;
      return false;
    }
  }

  void loop() {
    t_executor = true;
    for (;;) {
      std::shared_ptr<CpuStream> s;
      spin_until([&] { return waiting_.load(std::memory_order_acquire) > 0; });
      {
        std::unique_lock<std::mutex> lock(mu_);
        auto ready = [&] { return !ready_.empty(); };
        if (!cv_.wait_for(lock, kReleaseAfterIdle, ready)) {  // idle a while: its kernel memory goes back
          lock.unlock();
          release_own_worker_memory();
          lock.lock();
          cv_.wait(lock, ready);
        }
        s = std::move(ready_.front());
        ready_.pop_front();
        waiting_.store(static_cast<int>(ready_.size()), std::memory_order_release);
        --idle_;
      }
      s->drain(s);
      s.reset();  // the last reference may be this one: the stream's user dropped it
      std::lock_guard<std::mutex> g(mu_);
      ++idle_;
    }
  }

  const int max_threads_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<CpuStream>> ready_;
  std::atomic<int> waiting_{0};  // ready_.size(), for threads polling without the lock
  int threads_ = 0, idle_ = 0;   // started, and not running a stream
};

CpuStream::CpuStream(Device d) : device_(d), id_(runtime::next_stream_id()), device_name_(d.str()) {
  runtime::note_backend_started(DeviceType::CPU);
  Executor::instance();
}

void CpuStream::enqueue(const char* name, const char* category, std::function<void()> fn) {
  wait_for_room();
  push(name, category, std::move(fn));
}

void CpuStream::enqueue_gate(const char* name, const char* category, Gate ready) {
  wait_for_room();
  push_op(Op{name, category, nullptr, nullptr, nullptr, std::make_unique<GateOp>(GateOp{std::move(ready)})});
}

void CpuStream::push(const char* name, const char* category, std::function<void()> fn, void (*release)(void*),
                     void* arg) {
  push_op(Op{name, category, std::move(fn), release, arg, nullptr});
}

void CpuStream::push_op(Op&& op) {
  runtime::check_not_forked(DeviceType::CPU);
  // Shader dispatches are captured by the shader layer, with their arguments.
  if (runtime::capture::active() && std::string(op.category) != "shader")
    runtime::capture::record({{"op", op.name}, {"category", op.category}, {"device", device_name_}, {"stream", id_}});
  bool serialize = runtime::prof::active() && runtime::prof::mode().serialize;
  bool post;
  {
    std::lock_guard<std::mutex> g(mu_);
    queue_.push_back(std::move(op));
    ++submitted_;
    post = !scheduled_ && !parked_;
    if (post) scheduled_ = true;
  }
  if (post) Executor::instance().post(shared_from_this());
  if (serialize) {
    std::unique_lock<std::mutex> lock(mu_);
    wait_idle(lock);
  }
}

void CpuStream::wait_for_room() {
  if (submitted_.load(std::memory_order_relaxed) - completed_.load(std::memory_order_relaxed) < runtime::kMaxQueuedOps ||
      t_executor)
    return;
  auto drained = [this] {
    return submitted_.load(std::memory_order_acquire) - completed_.load(std::memory_order_acquire) <=
           runtime::kMaxQueuedOps / 2;
  };
  if (runtime::queue_wait(drained)) return;
  std::unique_lock<std::mutex> lock(mu_);
  ++waiters_;
  done_cv_.wait(lock, drained);
  --waiters_;
}

void CpuStream::resume() {
  {
    std::lock_guard<std::mutex> g(mu_);
    if (!parked_) {  // the executor has not parked it yet: it tries the gate again
      woken_ = true;
      return;
    }
    parked_ = false;
    scheduled_ = true;
  }
  Executor::instance().post(shared_from_this());
}

void CpuStream::drain(const std::shared_ptr<CpuStream>& self) {
  Executor& ex = Executor::instance();
  for (int ran = 0;; ++ran) {
    Op op;
    if (at_gate_) {
      op = std::move(*at_gate_);
      at_gate_.reset();
    } else {
      spin_until([&] {
        return submitted_.load(std::memory_order_acquire) != completed_.load(std::memory_order_relaxed) || ex.waiting();
      });
      std::unique_lock<std::mutex> lock(mu_);
      if (queue_.empty() || (ran >= kFairShare && ex.waiting())) {
        const bool more = !queue_.empty();
        scheduled_ = more;
        lock.unlock();
        if (more) ex.post(self);  // behind the streams that waited
        return;
      }
      op = std::move(queue_.front());
      queue_.pop_front();
    }
    const bool profiling = runtime::prof::active();
    std::int64_t begin = profiling ? runtime::prof::now_ns() : 0;
    if (op.gate) {
      if (!op.gate->begin) op.gate->begin = begin;  // a wait lasts from its first try
      begin = op.gate->begin;
      if (!op.gate->ready(self)) {
        std::lock_guard<std::mutex> g(mu_);
        at_gate_ = std::move(op);
        if (!woken_) {
          parked_ = true;
          scheduled_ = false;
          return;
        }
        woken_ = false;  // ready by now: tried again
        continue;
      }
    }
    std::string error;
    if (op.fn) {
      runtime::nvtx::Range range;
      if (profiling) range.start(op.name);
      try {
        op.fn();
      } catch (const std::exception& e) {
        error = e.what();
      } catch (...) {
        error = "unknown exception";
      }
    }
    if (profiling) runtime::prof::record_op({op.name, op.category, device_name_, id_, begin, runtime::prof::now_ns()});
    std::string failure;
    if (!error.empty())
      failure = std::string("'") + op.name + "' failed on " + device_name_ + " stream " + std::to_string(id_) + ": " + error;
    // Release captured buffers (and the op's name) before signalling completion.
    op.fn = nullptr;
    op.gate.reset();
    if (op.release) op.release(op.arg);
    {
      std::lock_guard<std::mutex> g(mu_);
      if (!failure.empty() && error_count_++ == 0) first_error_ = std::move(failure);
      ++completed_;
      if (waiters_ == 0) continue;
    }
    done_cv_.notify_all();
  }
}

void CpuStream::wait_idle(std::unique_lock<std::mutex>& lock) {
  ++waiters_;
  done_cv_.wait(lock, [&] { return completed_ == submitted_; });
  --waiters_;
}

void CpuStream::wait() {
  runtime::check_not_forked(DeviceType::CPU);
  std::uint64_t target = submitted_.load(std::memory_order_acquire);
  spin_until([&] { return completed_.load(std::memory_order_acquire) >= target; });
  std::unique_lock<std::mutex> lock(mu_);
  wait_idle(lock);
}

void CpuStream::synchronize() {
  wait();
  std::unique_lock<std::mutex> lock(mu_);
  if (error_count_ == 0) return check_error_record();
  std::string msg = "queued work " + first_error_;
  if (error_count_ > 1) msg += " (and " + std::to_string(error_count_ - 1) + " later failures)";
  first_error_.clear();
  error_count_ = 0;
  throw DeviceError(msg);
}

bool CpuStream::query() {
  runtime::check_not_forked(DeviceType::CPU);
  std::lock_guard<std::mutex> g(mu_);
  return completed_ == submitted_;
}

}  // namespace bronze::cpu
