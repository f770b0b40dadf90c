// Runtime latencies against their plain-C++ peers (Google Benchmark):
//   build/test/bench/bench_runtime
// Allocation: the caching allocator's alloc+free against malloc+free.
// Queue: launch-to-completion of an empty op against a bare std::thread hand-off.
#include <benchmark/benchmark.h>

#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "backends/cpu/cpu_stream.hpp"
#include "bronze/bronze.hpp"

namespace {

void BM_AllocFree_Bronze(benchmark::State& st) {
  const std::size_t n = static_cast<std::size_t>(st.range(0));
  for (auto _ : st) {
    bronze::Tensor t = bronze::empty({static_cast<std::int64_t>(n / 4)});
    benchmark::DoNotOptimize(t.data_ptr());
  }
}
BENCHMARK(BM_AllocFree_Bronze)->Arg(256)->Arg(1 << 20)->Arg(64 << 20);

void BM_AllocFree_Malloc(benchmark::State& st) {
  const std::size_t n = static_cast<std::size_t>(st.range(0));
  for (auto _ : st) {
    void* p = std::malloc(n);
    benchmark::DoNotOptimize(p);
    std::free(p);
  }
}
BENCHMARK(BM_AllocFree_Malloc)->Arg(256)->Arg(1 << 20)->Arg(64 << 20);

void BM_EmptyOpLaunchToCompletion_Bronze(benchmark::State& st) {
  bronze::Stream s;
  auto& q = static_cast<bronze::cpu::CpuStream&>(s.impl());
  for (auto _ : st) {
    q.enqueue("noop", "bench", [] {});
    s.synchronize();
  }
}
BENCHMARK(BM_EmptyOpLaunchToCompletion_Bronze)->UseRealTime();

// The peer: one hand-off to a waiting thread and back through a mutex and
// condition variables, the least any queue on another thread can cost.
void BM_EmptyOpLaunchToCompletion_ThreadHandoff(benchmark::State& st) {
  std::mutex mu;
  std::condition_variable cv;
  int posted = 0, done = 0;
  bool stop = false;
  std::thread worker([&] {
    std::unique_lock<std::mutex> l(mu);
    for (;;) {
      cv.wait(l, [&] { return stop || posted > done; });
      if (stop) return;
      ++done;
      cv.notify_all();
    }
  });
  for (auto _ : st) {
    std::unique_lock<std::mutex> l(mu);
    ++posted;
    cv.notify_all();
    cv.wait(l, [&] { return done == posted; });
  }
  {
    std::lock_guard<std::mutex> g(mu);
    stop = true;
  }
  cv.notify_all();
  worker.join();
}
BENCHMARK(BM_EmptyOpLaunchToCompletion_ThreadHandoff)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
