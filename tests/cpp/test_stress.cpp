// Many threads compiling, launching, allocating, freeing and recording
// events at once for a bounded time, with every result checked. Run under
// ThreadSanitizer by scripts/sanitize.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "bronze/bronze.hpp"

TEST(Stress, ThreadsCompileLaunchAllocateAndRecordEvents) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(1500);
  std::atomic<int> failures{0}, rounds{0};
  auto start_alloc = bronze::current_allocated_memory();
  auto worker = [&](int id) {
    bronze::Stream s;  // each thread on its own stream
    bronze::StreamGuard g(s);
    int round = 0;
    while (std::chrono::steady_clock::now() < until) {
      // A few distinct libraries, compiled concurrently and cached.
      int variant = (id + round) % 3;
      auto lib = bronze::compile_shader(
          "kernel void k(device float* o, constant float& v, uint i [[thread_position_in_grid]]) { o[i] = v + " +
          std::to_string(variant) + ".0f; }");
      bronze::Tensor t = bronze::empty({1 + (round % 7) * 1000});
      bronze::Event a(true), b(true);
      a.record();
      lib.kernel("k").dispatch({t, bronze::Scalar(static_cast<double>(id))});
      bronze::Tensor u = bronze::add(t, 1.0);
      b.record();
      auto host = u.to_double_vector();
      for (double v : host)
        if (v != id + variant + 1.0) {
          ++failures;
          break;
        }
      if (a.elapsed_time(b) < 0) ++failures;
      ++round;
      ++rounds;
    }
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < 6; ++i) threads.emplace_back(worker, i);
  for (auto& t : threads) t.join();
  bronze::synchronize();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_GT(rounds.load(), 6);
  EXPECT_EQ(bronze::current_allocated_memory(), start_alloc);  // nothing leaked
}

// empty_cache() in one thread while another makes and drops tensors whose
// fill is still queued: a cached block must never go back to the driver
// while queued work writes it (this crashed within seconds before).
TEST(Stress, EmptyCacheWhileTensorsComeAndGo) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(1500);
  std::atomic<long> made{0};
  std::thread churn([&] {
    while (std::chrono::steady_clock::now() < until) {
      bronze::Tensor t = bronze::ones({100});
      ++made;
    }
  });
  std::thread empty([&] {
    while (std::chrono::steady_clock::now() < until) bronze::empty_cache();
  });
  churn.join();
  empty.join();
  bronze::synchronize();
  EXPECT_GT(made.load(), 100);
  bronze::Tensor t = bronze::ones({100});
  for (double v : t.to_double_vector()) EXPECT_EQ(v, 1.0);
}
