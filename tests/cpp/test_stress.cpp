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

// Eight threads, each a random mix of the whole public API for a bounded
// time: creation, ops, copies, host reads, streams, events, record_stream,
// kernels, empty_cache, memory figures, RNG state, the profiler. Every
// deterministic result is checked; the calls that may legitimately refuse
// while another thread holds a global (the profiler) are the only ones whose
// errors are expected.
TEST(Stress, EightThreadsMixTheWholeApi) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(2500);
  std::atomic<int> failures{0};
  std::atomic<long> calls{0};
  const auto start_alloc = bronze::current_allocated_memory();
  auto lib = bronze::compile_shader(
      "kernel void axpb(device float* o, device const float* x, constant float& a, constant float& b,\n"
      "                 uint i [[thread_position_in_grid]]) { o[i] = a * x[i] + b; }\n"
      "kernel void sum(device const float* x, device float* o, uint i [[thread_position_in_grid]],\n"
      "                uint lane [[thread_index_in_simdgroup]]) {\n"
      "  float s = simd_sum(x[i]);\n  if (lane == 0) o[i / 32] = s;\n}\n");
  auto check = [&](bool ok) {
    if (!ok) ++failures;
  };
  auto worker = [&](int id) {
    std::uint32_t rng = 0x9e3779b9u * (id + 1);
    auto next = [&] { return rng = rng * 1664525u + 1013904223u; };
    bronze::Stream own;
    std::vector<bronze::Tensor> kept;
    while (std::chrono::steady_clock::now() < until) {
      const std::int64_t n = 1 + next() % 3000;
      const float v = static_cast<float>(next() % 100);
      try {
        switch (next() % 12) {
          case 0: {  // creation and elementwise ops
            bronze::Tensor a = bronze::full({n}, v), b = bronze::arange(0, static_cast<double>(n));
            auto host = bronze::add(a, bronze::mul(b, 2.0)).to_double_vector();
            for (std::int64_t i = 0; i < n; i += 97) check(host[i] == v + 2.0 * i);
            break;
          }
          case 1: {  // a kernel on this thread's own stream, ordered by an event
            bronze::StreamGuard g(own);
            bronze::Tensor x = bronze::full({n}, v), o = bronze::empty({n});
            lib.kernel("axpb").dispatch({o, x, bronze::Scalar(2.0), bronze::Scalar(1.0)});
            bronze::Event e;
            e.record();
            e.synchronize();
            auto host = o.to_double_vector();
            check(host[0] == 2.0 * v + 1.0 && host[n - 1] == 2.0 * v + 1.0);
            break;
          }
          case 2: {  // a cooperative kernel
            bronze::Tensor x = bronze::ones({256}), o = bronze::zeros({8});
            lib.kernel("sum").dispatch({x, o});
            for (double s : o.to_double_vector()) check(s == 32.0);
            break;
          }
          case 3:
            bronze::empty_cache();
            break;
          case 4: {  // tensors kept across iterations, used on another stream
            kept.push_back(bronze::full({n}, v));
            kept.back().record_stream(own);
            if (kept.size() > 6) kept.erase(kept.begin());
            break;
          }
          case 5: {
            auto st = bronze::memory_stats();
            check(st.reserved_bytes >= st.allocated_bytes);
            (void)bronze::current_allocated_memory();
            (void)bronze::driver_allocated_memory();
            break;
          }
          case 6: {  // RNG: a state restored gives the same numbers
            auto state = bronze::get_rng_state();
            auto r1 = bronze::rand({64}).to_double_vector();
            bronze::set_rng_state(state);
            auto r2 = bronze::rand({64}).to_double_vector();
            // Another thread may draw in between: equal or not, both in [0, 1).
            for (double r : r1) check(r >= 0 && r < 1);
            for (double r : r2) check(r >= 0 && r < 1);
            break;
          }
          case 7: {  // copies, views, transposes, matmul
            bronze::Tensor a = bronze::arange(0, 6).reshape({2, 3}), c = bronze::empty({3, 2});
            c.copy_(a.t());
            auto p = bronze::mm(a, c).to_double_vector();
            check(p.size() == 4 && p[0] == 5 && p[3] == 50);
            break;
          }
          case 8: {  // events with timing across two streams
            bronze::Stream s2;
            bronze::Event a(true), b(true);
            a.record(own);
            { bronze::StreamGuard g(own); bronze::full({n}, v).fill_(1.0); }
            b.record(own);
            b.wait(s2);
            s2.synchronize();
            check(a.elapsed_time(b) >= 0);
            break;
          }
          case 9:
            bronze::synchronize();
            break;
          case 10: {  // the profiler is global: one session at a time
            try {
              bronze::profiler::start();
            } catch (const bronze::Error&) {  // another thread's session is running
              break;
            }
            bronze::full({n}, v).fill_(2.0);
            bronze::profiler::stop("/dev/null");
            break;
          }
          case 11: {  // integer and random fills
            bronze::Tensor r = bronze::empty({n}, bronze::DType::Int64);
            r.random_(0, 10);
            for (double x : r.to_double_vector()) check(x >= 0 && x < 10);
            break;
          }
        }
      } catch (const std::exception& e) {
        ++failures;
        ADD_FAILURE() << "thread " << id << ": " << e.what();
      }
      ++calls;
    }
    own.synchronize();
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) threads.emplace_back(worker, i);
  for (auto& t : threads) t.join();
  bronze::synchronize();
  if (bronze::profiler::has_unwritten_trace()) bronze::profiler::stop("/dev/null");
  EXPECT_EQ(failures.load(), 0);
  EXPECT_GT(calls.load(), 80);
  EXPECT_EQ(bronze::current_allocated_memory(), start_alloc);
}
