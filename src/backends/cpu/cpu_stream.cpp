#include "backends/cpu/cpu_stream.hpp"

#include <exception>

#include "backends/cpu/spin.hpp"
#include "bronze/error.hpp"
#include "runtime/capture.hpp"
#include "runtime/fork_state.hpp"
#include "runtime/json_util.hpp"
#include "runtime/nvtx.hpp"
#include "runtime/profiler.hpp"

namespace bronze::cpu {

CpuStream::CpuStream(Device d) : device_(d), id_(runtime::next_stream_id()) {
  runtime::note_backend_started(DeviceType::CPU);
  worker_ = std::thread([this] { run(); });
}

CpuStream::~CpuStream() {
  {
    std::unique_lock<std::mutex> lock(mu_);
    wait_idle(lock);
    stop_ = true;
  }
  work_cv_.notify_all();
  worker_.join();
}

void CpuStream::enqueue(const char* name, const char* category, std::function<void()> fn) {
  runtime::check_not_forked(DeviceType::CPU);
  // Shader dispatches are captured by the shader layer, with their arguments.
  if (runtime::capture::active() && std::string(category) != "shader")
    runtime::capture::record("\"op\":" + runtime::json_quote(name) + ",\"category\":" +
                             runtime::json_quote(category) + ",\"device\":" +
                             runtime::json_quote(device_.str()) + ",\"stream\":" +
                             std::to_string(id_));
  bool serialize = runtime::prof::active() && runtime::prof::mode().serialize;
  {
    std::lock_guard<std::mutex> g(mu_);
    queue_.push_back(Op{name, category, std::move(fn)});
    ++submitted_;
  }
  work_cv_.notify_one();
  if (serialize) {
    std::unique_lock<std::mutex> lock(mu_);
    wait_idle(lock);
  }
}

void CpuStream::run() {
  const std::string dev = device_.str();
  for (;;) {
    Op op;
    spin_until([&] { return submitted_.load(std::memory_order_acquire) != completed_.load(std::memory_order_relaxed); });
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stop_ and drained
      op = std::move(queue_.front());
      queue_.pop_front();
    }
    const bool profiling = runtime::prof::active();
    std::int64_t begin = profiling ? runtime::prof::now_ns() : 0;
    std::string error;
    {
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
    if (profiling) runtime::prof::record_op({op.name, op.category, dev, id_, begin, runtime::prof::now_ns()});
    std::string failure;
    if (!error.empty())
      failure = std::string("'") + op.name + "' failed on " + dev + " stream " + std::to_string(id_) + ": " + error;
    op.fn = nullptr;  // release captured buffers (and the op's name) before signalling completion
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
