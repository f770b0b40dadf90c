// Devices: "cpu" (the embedded backend, always present) and "cuda:N".
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace bronze {

enum class DeviceType : std::uint8_t { CPU, CUDA };

struct Device {
  DeviceType type = DeviceType::CPU;
  int index = 0;

  Device() = default;
  Device(DeviceType t, int i = 0) : type(t), index(i) {}
  // "cpu", "cpu:0", "cuda", "cuda:1"; "mps" (or "mps:0", as torch.mps code
  // names its GPU) is the default accelerator: cuda:0 where there is a CUDA
  // device, else cpu:0, said once as a warning. ValueError on anything else.
  static Device parse(const std::string& spec);
  std::string str() const;
  bool operator==(const Device& o) const { return type == o.type && index == o.index; }
  bool operator!=(const Device& o) const { return !(*this == o); }
};

struct DeviceProperties {
  std::string name;
  Device device;
  std::size_t total_memory = 0;
  std::size_t recommended_max_memory = 0;
  int multiprocessor_count = 0;  // CPU: worker threads
  int max_threads_per_threadgroup = 0;
  int simd_width = 0;
  bool host_visible = false;  // device memory is directly readable by the host
};

// True when a device of `type` can run work (compiled in, driver found, at
// least one device). Without a type: whether any bronze device works, which
// is always true because the CPU backend is built in.
bool is_available(std::optional<DeviceType> type = std::nullopt);
// Number of devices of `type`, or of the current device's type.
int device_count(std::optional<DeviceType> type = std::nullopt);
// Every usable device, CPU first.
std::vector<Device> devices();

// The device used when none is named. Starts as $BRONZE_DEVICE, else the
// CPU (CUDA becomes the default once its tensor kernels and shaders land).
Device current_device();
void set_device(const Device& d);

DeviceProperties get_device_properties(std::optional<Device> d = std::nullopt);

// Why CUDA is or is not available: the driver version and device count, or
// the reason (no driver, cuInit failed, BRONZE_DISABLE_CUDA set).
std::string cuda_status();

// Waits for all work queued on every stream of the device; rethrows the first
// failure of queued work as DeviceError.
void synchronize(std::optional<Device> d = std::nullopt);
// True when every stream of the device has finished its queued work.
bool query(std::optional<Device> d = std::nullopt);

}  // namespace bronze
