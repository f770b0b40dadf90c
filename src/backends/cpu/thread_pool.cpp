#include "backends/cpu/thread_pool.hpp"

#include "backends/cpu/spin.hpp"
#include "backends/cpu/worker_memory.hpp"
#include "jit/cpus.hpp"
#include "jit/env.hpp"
#include "runtime/fork_state.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <system_error>

namespace bronze::cpu {

struct ThreadPool::Job {
  const std::function<void(std::int64_t, std::int64_t)>* fn;
  std::int64_t n, chunk;
  std::atomic<std::int64_t> next{0};
  std::atomic<std::int64_t> done{0};
  std::mutex mu;
  std::condition_variable cv;
  std::exception_ptr error;
};

ThreadPool& ThreadPool::instance() {
  static ThreadPool* pool = new ThreadPool(configured_size());  // never destroyed: workers may be busy at exit
  return *pool;
}

int ThreadPool::configured_size() {
  // At most 1024 (more only adds switching); a count the system cannot
  // start stops at the threads it could (below).
  static const int n = static_cast<int>(std::min(jit::env_count("BRONZE_NUM_THREADS", jit::available_cpus(), 1), 1024ll));
  return n;
}

ThreadPool::ThreadPool(int threads) {
  runtime::note_backend_started(DeviceType::CPU);
  try {
    for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { worker(); });
  } catch (const std::system_error&) {  // out of threads: work with those that started
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> g(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::run_chunks(Job& job) {
  for (;;) {
    std::int64_t begin = job.next.fetch_add(job.chunk);
    if (begin >= job.n) return;
    std::int64_t end = std::min(job.n, begin + job.chunk);
    try {
      (*job.fn)(begin, end);
    } catch (...) {
      std::lock_guard<std::mutex> g(job.mu);
      if (!job.error) job.error = std::current_exception();
    }
    if (job.done.fetch_add(end - begin) + (end - begin) == job.n) {
      std::lock_guard<std::mutex> g(job.mu);
      job.cv.notify_all();
    }
  }
}

void ThreadPool::worker() {
  for (;;) {
    std::shared_ptr<Job> job;
    spin_until([&] { return queued_.load(std::memory_order_acquire) > 0; });
    {
      std::unique_lock<std::mutex> lock(mu_);
      auto ready = [&] { return stop_ || !jobs_.empty(); };
      if (!cv_.wait_for(lock, kReleaseAfterIdle, ready)) {  // idle a while: its kernel memory goes back
        lock.unlock();
        release_own_worker_memory();
        lock.lock();
        cv_.wait(lock, ready);
      }
      if (stop_) return;
      job = jobs_.front();
      // A job whose chunks are all taken leaves the queue; its stragglers finish.
      if (job->next.load() + job->chunk >= job->n) {
        jobs_.pop_front();
        queued_.store(static_cast<int>(jobs_.size()), std::memory_order_release);
      }
    }
    run_chunks(*job);
  }
}

void ThreadPool::parallel_for(std::int64_t n, std::int64_t grain,
                              const std::function<void(std::int64_t, std::int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<std::int64_t>(1, grain);
  if (workers_.empty() || n <= grain) {
    fn(0, n);
    return;
  }
  auto job = std::make_shared<Job>();
  job->fn = &fn;
  job->n = n;
  // A few chunks per thread balance uneven work without much overhead.
  std::int64_t chunks = std::min<std::int64_t>(n / grain, 4 * size());
  job->chunk = (n + chunks - 1) / chunks;
  {
    std::lock_guard<std::mutex> g(mu_);
    jobs_.push_back(job);
    queued_.store(static_cast<int>(jobs_.size()), std::memory_order_release);
  }
  cv_.notify_all();
  run_chunks(*job);
  {
    std::unique_lock<std::mutex> lock(job->mu);
    job->cv.wait(lock, [&] { return job->done.load() == job->n; });
  }
  {
    std::lock_guard<std::mutex> g(mu_);
    auto it = std::find(jobs_.begin(), jobs_.end(), job);
    if (it != jobs_.end()) jobs_.erase(it);
    queued_.store(static_cast<int>(jobs_.size()), std::memory_order_release);
  }
  if (job->error) std::rethrow_exception(job->error);
}

}  // namespace bronze::cpu
