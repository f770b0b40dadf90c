// Runs with NVTX_INJECTION64_PATH naming nvtx_probe (see CMakeLists.txt), so
// NVTX hands bronze's ranges to the probe as it would to Nsight Systems.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "bronze/bronze.hpp"

namespace {
// What the probe saw since the last call; the probe is the library NVTX
// loaded, so dlopen of the same path returns that instance.
std::string take_probe_log() {
  const char* path = std::getenv("NVTX_INJECTION64_PATH");
  if (!path) return "";
  void* h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  if (!h) return "";
  auto take = reinterpret_cast<const char* (*)()>(dlsym(h, "nvtx_probe_take"));
  std::string out = take ? take() : "";
  dlclose(h);
  return out;
}

std::size_t count(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (auto p = s.find(what); p != std::string::npos; p = s.find(what, p + what.size())) ++n;
  return n;
}

void expect_ranges_while_profiling(const bronze::Device& d) {
  ASSERT_NE(std::getenv("NVTX_INJECTION64_PATH"), nullptr);
  bronze::full({1024}, 1.0, bronze::DType::Float32, d);  // not profiling: no ranges
  bronze::synchronize(d);
  std::string before = take_probe_log();
  EXPECT_EQ(count(before, "+"), 0u) << before;

  bronze::profiler::start("interval");
  auto t = bronze::full({1024}, 2.0, bronze::DType::Float32, d);
  auto u = bronze::rand({1024}, bronze::DType::Float32, d);
  auto w = t + u;
  bronze::synchronize(d);
  bronze::profiler::stop(::testing::TempDir() + "/nvtx_trace.json");
  std::string log = before + take_probe_log();

  EXPECT_NE(log.find("D:bronze;"), std::string::npos) << "NVTX loaded the probe? " << log;
  for (const char* op : {"+bronze/fill;", "+bronze/philox;", "+bronze/add;"})
    EXPECT_NE(log.find(op), std::string::npos) << op << " in " << log;
  EXPECT_EQ(count(log, "+"), count(log, "-;")) << "every push popped: " << log;
}
}  // namespace

TEST(Nvtx, BuiltInAndReported) {
  EXPECT_NE(bronze::cuda_status().find("NVTX ranges while profiling"), std::string::npos)
      << bronze::cuda_status();
}

TEST(Nvtx, CpuOpsPushRangesOnlyWhileProfiling) { expect_ranges_while_profiling(bronze::Device(bronze::DeviceType::CPU)); }

TEST(Nvtx, CudaOpsPushRangesOnlyWhileProfiling) {
  if (!bronze::is_available(bronze::DeviceType::CUDA)) GTEST_SKIP() << bronze::cuda_status();
  expect_ranges_while_profiling(bronze::Device(bronze::DeviceType::CUDA, 0));
}
