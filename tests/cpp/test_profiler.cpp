#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "bronze/bronze.hpp"

namespace {
std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}
}  // namespace

TEST(Profiler, ModesAreValidated) {
  EXPECT_THROW(bronze::profiler::start("intervals"), bronze::ValueError);
  EXPECT_THROW(bronze::profiler::stop(), bronze::Error);
  bronze::profiler::start(" Interval , Event ");
  EXPECT_TRUE(bronze::profiler::is_running());
  EXPECT_THROW(bronze::profiler::start(), bronze::Error);
  bronze::profiler::stop(::testing::TempDir() + "/modes.json");
  EXPECT_FALSE(bronze::profiler::is_running());
}

TEST(Profiler, TraceHoldsIntervalsOfQueuedOps) {
  std::string path = ::testing::TempDir() + "/trace.json";
  bronze::profiler::start("interval");
  auto t = bronze::full({1 << 16}, 1.0);
  auto u = bronze::rand({1 << 16});
  auto w = t + u;
  EXPECT_EQ(bronze::profiler::stop(path), path);
  std::string trace = slurp(path);
  EXPECT_NE(trace.find("\"traceEvents\""), std::string::npos);
  for (const char* name : {"\"fill\"", "\"philox\"", "\"add\""})
    EXPECT_NE(trace.find(name), std::string::npos) << name;
  EXPECT_NE(trace.find("\"ph\":\"X\""), std::string::npos);
  EXPECT_EQ(trace.find("completed"), std::string::npos);  // no events in interval mode
  EXPECT_NE(trace.find("\"memory\""), std::string::npos);  // allocator counter track
}

TEST(Profiler, EventModeAndEnvPath) {
  std::string path = ::testing::TempDir() + "/env_trace.json";
  setenv("BRONZE_TRACE_FILE", path.c_str(), 1);
  bronze::profiler::start("event", true);
  bronze::zeros({10});
  EXPECT_EQ(bronze::profiler::stop(), path);
  unsetenv("BRONZE_TRACE_FILE");
  std::string trace = slurp(path);
  EXPECT_NE(trace.find("fill completed"), std::string::npos);
  EXPECT_EQ(trace.find("\"ph\":\"X\""), std::string::npos);
}

TEST(Capture, NeedsEnableAndRecordsCommands) {
  unsetenv("BRONZE_CAPTURE_ENABLED");
  unsetenv("MTL_CAPTURE_ENABLED");
  EXPECT_FALSE(bronze::profiler::is_capture_enabled());
  std::string path = ::testing::TempDir() + "/cap.jsonl";
  EXPECT_THROW(bronze::profiler::start_capture(path), bronze::Error);
  setenv("MTL_CAPTURE_ENABLED", "1", 1);
  EXPECT_TRUE(bronze::profiler::is_capture_enabled());
  bronze::profiler::start_capture(path);
  EXPECT_TRUE(bronze::profiler::is_capturing());
  bronze::ones({4});
  bronze::profiler::stop_capture();
  EXPECT_FALSE(bronze::profiler::is_capturing());
  EXPECT_THROW(bronze::profiler::stop_capture(), bronze::Error);
  unsetenv("MTL_CAPTURE_ENABLED");
  std::string cap = slurp(path);
  EXPECT_NE(cap.find("\"bronze_capture\":1"), std::string::npos);
  EXPECT_NE(cap.find("\"op\":\"fill\""), std::string::npos);
}
