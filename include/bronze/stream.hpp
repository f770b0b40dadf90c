// Streams: ordered queues of device work. Each device has a default stream;
// more can be created. The current stream is per thread and per device.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "bronze/device.hpp"

namespace bronze {
namespace runtime {
class StreamImpl;
}

class Stream {
 public:
  // A new stream on `d` (the current device by default).
  explicit Stream(std::optional<Device> d = std::nullopt);
  explicit Stream(std::shared_ptr<runtime::StreamImpl> impl) : impl_(std::move(impl)) {}

  static Stream default_stream(std::optional<Device> d = std::nullopt);
  static Stream current(std::optional<Device> d = std::nullopt);
  static void set_current(const Stream& s);
  // Another library's stream on `d` (a CUstream, as PyTorch's
  // torch.cuda.current_stream().cuda_stream gives it; 0 is the legacy default
  // stream): bronze queues work on it and never destroys it, so the handle
  // must stay valid while the returned Stream lives. CUDA devices only.
  static Stream external(std::uintptr_t handle, std::optional<Device> d = std::nullopt);

  Device device() const;
  std::uint64_t id() const;
  void synchronize() const;
  bool query() const;  // true when all queued work has finished
  runtime::StreamImpl& impl() const { return *impl_; }
  const std::shared_ptr<runtime::StreamImpl>& shared_impl() const { return impl_; }

  bool operator==(const Stream& o) const { return impl_ == o.impl_; }
  bool operator!=(const Stream& o) const { return impl_ != o.impl_; }

 private:
  std::shared_ptr<runtime::StreamImpl> impl_;
};

// Makes `s` the current stream of its device for the guard's lifetime.
class StreamGuard {
 public:
  explicit StreamGuard(const Stream& s);
  ~StreamGuard();
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;

 private:
  Stream previous_;
};

}  // namespace bronze
