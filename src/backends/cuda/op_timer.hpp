// Profiling of CUDA ops on the GPU timeline. While bronze's profiler runs,
// each op is bracketed by two timing events on its stream; stop() waits for
// them and places the interval on the profiler's clock through a reference
// event recorded (and waited for) once per session and device.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "backends/cuda/driver_api.hpp"
#include "runtime/nvtx.hpp"

namespace bronze::cuda {

class Timeline {
 public:
  Timeline(std::string device, std::function<void()> make_current)
      : device_(std::move(device)), make_current_(std::move(make_current)) {}
  const std::string& device() const { return device_; }
  void make_current() const { make_current_(); }
  // The session's reference: an event and the host time it completed at.
  struct Ref {
    CUevent event = nullptr;
    std::int64_t host_ns = 0;
  };
  std::shared_ptr<const Ref> reference(CUstream s);

 private:
  std::string device_;
  std::function<void()> make_current_;
  std::mutex mu_;
  std::int64_t session_ = -1;
  std::shared_ptr<const Ref> ref_;
};

// RAII around one op queued on `stream`: its GPU interval and an NVTX range
// around the host-side launch (Nsight projects it onto the kernels). Does
// nothing when not profiling.
class OpTimer {
 public:
  OpTimer(Timeline& t, CUstream stream, std::uint64_t stream_id, const char* name, const char* category);
  ~OpTimer();
  OpTimer(const OpTimer&) = delete;
  OpTimer& operator=(const OpTimer&) = delete;

 private:
  Timeline* timeline_ = nullptr;  // null: not profiling
  CUstream stream_ = nullptr;
  std::uint64_t stream_id_ = 0;
  std::string name_;
  const char* category_ = "";
  CUevent begin_ = nullptr;
  std::shared_ptr<const Timeline::Ref> ref_;
  runtime::nvtx::Range range_;  // popped after the end event is queued
};

}  // namespace bronze::cuda
