// The CPU backend's compute threads. parallel_for splits [0, n) into chunks
// that the pool's workers and the calling thread take in turn; several
// callers (one per stream) may use the pool at once.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace bronze::cpu {

class ThreadPool {
 public:
  // Sized by configured_size().
  static ThreadPool& instance();
  // The CPUs this process may run on, or $BRONZE_NUM_THREADS (a whole number
  // >= 1, else a ValueError naming it), at most 1024. Read without starting
  // the pool.
  static int configured_size();
  explicit ThreadPool(int threads);
  ~ThreadPool();

  int size() const { return static_cast<int>(workers_.size()) + 1; }
  // Runs fn(begin, end) over [0, n) in chunks of at least `grain`; rethrows
  // the first exception a chunk threw.
  void parallel_for(std::int64_t n, std::int64_t grain,
                    const std::function<void(std::int64_t, std::int64_t)>& fn);

 private:
  struct Job;
  void worker();
  static void run_chunks(Job& job);

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> jobs_;
  std::atomic<int> queued_{0};  // jobs_.size(), for workers polling without the lock
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace bronze::cpu
