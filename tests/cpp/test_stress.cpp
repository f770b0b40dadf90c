// Many threads compiling, launching, allocating, freeing and recording
// events at once for a bounded time, with every result checked. Run under
// ThreadSanitizer by scripts/sanitize.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <atomic>
#include <cstdlib>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "bronze/bronze.hpp"

extern char** environ;

TEST(Stress, ThreadsCompileLaunchAllocateAndRecordEvents) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(1500);
  std::atomic<int> failures{0}, rounds{0};
  auto start_alloc = bronze::current_allocated_memory();
  auto worker = [&](int id) {
    bronze::Stream s;  // each thread on its own stream
    bronze::StreamGuard g(s);
    int round = 0;
    // A bounded time, and a few rounds however loaded the machine is.
    while (round < 2 || std::chrono::steady_clock::now() < until) {
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
    while (made < 200 || std::chrono::steady_clock::now() < until) {  // however loaded the machine is
      bronze::Tensor t = bronze::ones({100});
      ++made;
    }
  });
  std::thread empty([&] {
    while (made < 200 || std::chrono::steady_clock::now() < until) bronze::empty_cache();
  });
  churn.join();
  empty.join();
  bronze::synchronize();
  EXPECT_GT(made.load(), 100);
  bronze::Tensor t = bronze::ones({100});
  for (double v : t.to_double_vector()) EXPECT_EQ(v, 1.0);
}

// A big unit's kernels are built on first use: threads using the same
// kernels at once (a call, its reflection), listing the library and
// building all of it meanwhile each see every kernel built once and right.
TEST(Stress, ThreadsFirstUsingALibrarysKernelsAtOnce) {
  constexpr int kKernels = 12;  // more than compile_shader builds whole at once
  std::string src;
  for (int k = 0; k < kKernels; ++k)
    src += "kernel void k" + std::to_string(k) + "(device float* o, uint i [[thread_position_in_grid]]) { o[i] = " +
           std::to_string(k) + ".0f; }\n";
  auto lib = bronze::compile_shader(src);
  std::atomic<bool> go{false};
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      while (!go) std::this_thread::yield();
      if (t == 7) {
        lib.warmup();
        return;
      }
      for (int r = 0; r < 3; ++r) {
        const int k = (t + r) % 4;  // two threads on each kernel at once
        bronze::Kernel kernel = lib.kernel("k" + std::to_string(k));
        if (kernel.info().params[0].size != 4 || lib.kernel_names().size() != kKernels) ++wrong;
        bronze::Tensor o = bronze::zeros({64});
        kernel.dispatch({o});
        for (double v : o.to_double_vector()) wrong += v != k;
      }
    });
  go = true;
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  for (int k = 0; k < kKernels; ++k) EXPECT_TRUE(lib.kernel("k" + std::to_string(k)).is_built()) << k;
}

// Eight threads, each a random mix of the whole public API for a bounded
// time: creation, ops, copies, host reads, streams, events, record_stream,
// kernels, empty_cache, memory figures, RNG state, the profiler. Every
// deterministic result is checked; the calls that may legitimately refuse
// while another thread holds a global (the profiler) are the only ones whose
// errors are expected.
TEST(Stress, EightThreadsMixTheWholeApi) {
  std::atomic<int> failures{0};
  std::atomic<long> calls{0};
  const auto start_alloc = bronze::current_allocated_memory();
  auto lib = bronze::compile_shader(
      "kernel void axpb(device float* o, device const float* x, constant float& a, constant float& b,\n"
      "                 uint i [[thread_position_in_grid]]) { o[i] = a * x[i] + b; }\n"
      "kernel void sum(device const float* x, device float* o, uint i [[thread_position_in_grid]],\n"
      "                uint lane [[thread_index_in_simdgroup]]) {\n"
      "  float s = simd_sum(x[i]);\n  if (lane == 0) o[i / 32] = s;\n}\n");
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(2500);  // after the compile
  auto check = [&](bool ok) {
    if (!ok) ++failures;
  };
  auto worker = [&](int id) {
    std::uint32_t rng = 0x9e3779b9u * (id + 1);
    auto next = [&] { return rng = rng * 1664525u + 1013904223u; };
    bronze::Stream own;
    std::vector<bronze::Tensor> kept;
    for (int round = 0; round < 12 || std::chrono::steady_clock::now() < until; ++round) {  // however loaded
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

namespace {
// Stress.EightThreadsMixTheApiWithFaults's children: processes compiling
// into the parent's shader cache until the parent kills them.
constexpr const char* kChildEnv = "BRONZE_STRESS_CHILD";
constexpr int kSharedKernels = 8;  // the values both parent and children compile kernels for

// The same unit for one `k` whatever the salt (a comment), so the parent's
// compiles go past its in-process memo to the cache the children write.
std::string put_kernel(int k, long salt) {
  return "kernel void put(device int* o, uint i [[thread_position_in_grid]]) { o[i] = " + std::to_string(k) +
         "; }\n// " + std::to_string(salt) + "\n";
}

bool puts_value(const bronze::Library& lib, int k) {
  bronze::Tensor o = bronze::zeros({64}, bronze::DType::Int32);
  lib.kernel("put").dispatch({o});
  for (double v : o.to_double_vector())
    if (v != k) return false;
  return true;
}

pid_t spawn_child(long seed) {
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) env_strings.emplace_back(*e);
  env_strings.push_back(std::string(kChildEnv) + "=" + std::to_string(seed));
  std::vector<char*> envp, argv;
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string self = "/proc/self/exe", filter = "--gtest_filter=StressChild.*";
  argv = {self.data(), filter.data(), nullptr};
  pid_t pid = -1;
  return posix_spawn(&pid, self.c_str(), nullptr, nullptr, argv.data(), envp.data()) == 0 ? pid : -1;
}
}  // namespace

// Runs only as a child of the test below.
TEST(StressChild, CompilesIntoTheSharedCacheUntilKilled) {
  const char* seed = std::getenv(kChildEnv);
  if (!seed) GTEST_SKIP() << "runs as a child of Stress.EightThreadsMixTheApiWithFaults";
  for (long salt = std::atol(seed);; ++salt) {
    const int k = static_cast<int>(salt % kSharedKernels);
    ASSERT_TRUE(puts_value(bronze::compile_shader(put_kernel(k, salt)), k));
  }
}

// The whole API from eight threads again, now with the faults users meet:
// kernels that write past their buffer, through a wild pointer or past a
// private array (each a DeviceError naming the kernel at its stream's
// synchronize, never another thread's), or divide by zero (no fault, as on
// a GPU); waits abandoned with work in flight whose tensors are already
// dropped; compiles racing child processes that compile the same kernels
// into the same cache and are killed mid-build. Every result is checked,
// and the runtime, the cache and the memory figures end where they began.
// Run under ASan and TSan by scripts/sanitize.
TEST(Stress, EightThreadsMixTheApiWithFaults) {
  std::atomic<int> failures{0};
  std::atomic<long> calls{0}, faults{0}, killed{0};
  const auto start_alloc = bronze::current_allocated_memory();
  auto lib = bronze::compile_shader(
      "kernel void wild(device int* o, uint i [[thread_position_in_grid]]) { *(device int*)(64 + i) = 1; }\n"
      "kernel void past(device float* o, uint i [[thread_position_in_grid]]) { o[i] = 1.0f; }\n"
      "kernel void priv(device float* o, device const int* idx, uint i [[thread_position_in_grid]]) {\n"
      "  float tmp[8] = {0};\n  tmp[idx[i]] = 1.0f;\n  o[i] = tmp[0];\n}\n"
      "kernel void quot(device int* o, constant int& d, uint i [[thread_position_in_grid]]) { o[i] = 7 / d; }\n"
      "kernel void busy(device float* o, uint i [[thread_position_in_grid]]) {\n"
      "  float s = 0;\n  for (int k = 0; k < 20000; ++k) s += float(k % 7);\n  o[i] = s;\n}\n"
      "kernel void axpb(device float* o, device const float* x, constant float& a, constant float& b,\n"
      "                 uint i [[thread_position_in_grid]]) { o[i] = a * x[i] + b; }\n");
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(3000);  // after the compile
  auto check = [&](bool ok, const std::string& what) {
    if (!ok) {
      ++failures;
      ADD_FAILURE() << what;
    }
  };
  // A kernel that must fail its launch, and only its launch.
  auto expect_fault = [&](bronze::Stream& s, const char* kernel, auto launch) {
    launch();
    try {
      s.synchronize();
      check(false, std::string(kernel) + " did not fail");
    } catch (const bronze::DeviceError& e) {
      check(std::string(e.what()).find(std::string("kernel '") + kernel + "'") != std::string::npos, e.what());
      ++faults;
    }
  };
  auto worker = [&](int id) {
    std::uint32_t rng = 0x85ebca6bu * (id + 1);
    auto next = [&] { return rng = rng * 1664525u + 1013904223u; };
    bronze::Stream own;
    bronze::StreamGuard guard(own);  // a fault is reported to the thread that made it
    long salt = id * 1000000L;
    for (int round = 0; round < 12 || std::chrono::steady_clock::now() < until; ++round) {  // however loaded
      const std::int64_t n = 1 + next() % 2000;
      const float v = static_cast<float>(next() % 100);
      try {
        switch (next() % 9) {
          case 0: {
            bronze::Tensor t = bronze::zeros({8}, bronze::DType::Int32);
            expect_fault(own, "wild", [&] { lib.kernel("wild").dispatch({t}); });
            break;
          }
          case 1: {  // a grid past its buffer, no tail guard (16 MiB: a segment of its own, so the
                     // writes reach its guard page before any other tensor)
            bronze::Tensor t = bronze::empty({1 << 22});
            bronze::DispatchOptions o;
            o.threads = bronze::Dim3{5u << 20};
            expect_fault(own, "past", [&] { lib.kernel("past").dispatch({t}, o); });
            break;
          }
          case 2: {
#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
            // Past a private array: kernels run on a stack of their own (not
            // under sanitizers, which track the thread's one stack).
            bronze::Tensor out = bronze::empty({64}), idx = bronze::full({64}, 1 << 20, bronze::DType::Int32);
            expect_fault(own, "priv", [&] { lib.kernel("priv").dispatch({out, idx}); });
#else
            bronze::Tensor t = bronze::zeros({8}, bronze::DType::Int32);
            expect_fault(own, "wild", [&] { lib.kernel("wild").dispatch({t}); });
#endif
            break;
          }
          case 3: {  // integer division by zero does not fault, as on a GPU: the quotient is the dividend
            bronze::Tensor t = bronze::empty({n}, bronze::DType::Int32);
            lib.kernel("quot").dispatch({t, bronze::Scalar(0)});
            auto host = t.to_double_vector();
            check(host[0] == 7 && host[n - 1] == 7, "7 / 0");
            break;
          }
          case 4: {  // a wait abandoned: the work goes on, its tensors already dropped
            {
              bronze::Tensor t = bronze::empty({4096});
              lib.kernel("busy").dispatch({t});
            }
            (void)own.query();
            break;
          }
          case 5:
          case 6: {  // the kernels the children build, from the cache they write
            const int k = static_cast<int>(next() % kSharedKernels);
            check(puts_value(bronze::compile_shader(put_kernel(k, ++salt)), k), "a cached kernel computed wrongly");
            break;
          }
          case 7: {  // a kernel right after a fault on the same stream
            bronze::Tensor x = bronze::full({n}, v), o = bronze::empty({n});
            lib.kernel("axpb").dispatch({o, x, bronze::Scalar(2.0), bronze::Scalar(1.0)});
            auto host = o.to_double_vector();
            check(host[0] == 2.0 * v + 1.0 && host[n - 1] == 2.0 * v + 1.0, "axpb");
            break;
          }
          case 8:
            bronze::empty_cache();
            (void)bronze::memory_stats();
            break;
        }
      } catch (const std::exception& e) {
        check(false, std::string("thread ") + std::to_string(id) + ": " + e.what());
      }
      ++calls;
    }
    own.synchronize();
  };
  // Children compiling into the same cache, each killed at a random moment.
  auto killer = [&] {
    std::uint32_t rng = 12345;
    for (long seed = 0; seed == 0 || std::chrono::steady_clock::now() < until; seed += 7) {  // one, at least
      pid_t pid = spawn_child(seed);
      if (pid < 0) return check(false, "posix_spawn failed");
      rng = rng * 1664525u + 1013904223u;
      std::this_thread::sleep_for(std::chrono::milliseconds(50 + rng % 400));
      kill(pid, SIGKILL);
      int status = 0;
      waitpid(pid, &status, 0);
      killed += WIFSIGNALED(status);
    }
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) threads.emplace_back(worker, i);
  threads.emplace_back(killer);
  for (auto& t : threads) t.join();
  bronze::synchronize();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_GT(faults.load(), 8);
  EXPECT_GT(killed.load(), 0);
  EXPECT_GT(calls.load(), 40);
  // The cache serves every kernel the killed children built, right.
  for (int k = 0; k < kSharedKernels; ++k) EXPECT_TRUE(puts_value(bronze::compile_shader(put_kernel(k, -1)), k)) << k;
  EXPECT_EQ(bronze::current_allocated_memory(), start_alloc);
}
