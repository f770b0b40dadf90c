// Which devices exist, the current device, and each thread's current streams.
#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "backends/cpu/cpu_device.hpp"
#include "backends/cuda/cuda_device.hpp"
#include "backends/cuda/driver_api.hpp"
#include "bronze/error.hpp"
#include "runtime/device_impl.hpp"
#include "jit/env.hpp"
#include "runtime/fork_state.hpp"

namespace bronze::runtime {
namespace {
std::mutex g_mu;

DeviceImpl& cpu_device() {
  static DeviceImpl* d = cpu::make_device().release();  // lives for the process
  return *d;
}

Device& current_slot() {
  // A bad $BRONZE_DEVICE is the error of each call that needs the current
  // device (never the CPU silently); importing bronze needs none.
  static Device d = [] {
    const char* env = std::getenv("BRONZE_DEVICE");
    if (!env || !*env) return Device(DeviceType::CPU, 0);
    try {
      return Device::parse(env);
    } catch (const ValueError& e) {
      throw ValueError(std::string("$BRONZE_DEVICE='") + env + "' is not a device: " + e.what());
    }
  }();
  return d;
}

// Per thread: the stream chosen for each device (absent: the default stream).
thread_local std::map<std::pair<int, int>, std::shared_ptr<StreamImpl>> t_streams;
}  // namespace

namespace {
// -1: not read from the environment yet.
std::atomic<double> g_time_limit{-1.0};
}  // namespace

double kernel_time_limit() {
  double v = g_time_limit.load(std::memory_order_relaxed);
  if (v >= 0) return v;
  v = jit::env_seconds("BRONZE_KERNEL_TIME_LIMIT", 0, 1e9);
  double expected = -1.0;
  g_time_limit.compare_exchange_strong(expected, v);  // set_kernel_time_limit may have come first
  return g_time_limit.load(std::memory_order_relaxed);
}

void set_kernel_time_limit(double seconds) { g_time_limit.store(seconds, std::memory_order_relaxed); }

std::uint64_t next_stream_id() {
  static std::atomic<std::uint64_t> next{1};
  return next.fetch_add(1);
}

namespace {
std::atomic<QueueWait> g_queue_wait{nullptr};
}  // namespace

void set_queue_wait(QueueWait wait) { g_queue_wait.store(wait); }

bool queue_wait(const std::function<bool()>& ready) {
  QueueWait w = g_queue_wait.load();
  return w && w(ready);
}

const char* binary_op_name(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add: return "add";
    case BinaryOp::Sub: return "sub";
    case BinaryOp::Mul: return "mul";
    case BinaryOp::Div: return "div";
    case BinaryOp::RSub: return "rsub";
    case BinaryOp::RDiv: return "rdiv";
  }
  return "binary";
}

DeviceImpl& device_impl(const Device& d) {
  check_not_forked(d.type);
  if (d.type == DeviceType::CPU) {
    if (d.index != 0) throw ValueError("there is one CPU device, cpu:0; got " + d.str());
    return cpu_device();
  }
  if (d.index < 0 || d.index >= cuda::device_count())
    throw NotSupportedError("no CUDA device " + d.str() + " (" + cuda::status() + ")");
  // Created on first use and kept for the process, like the CPU device.
  static std::mutex mu;
  static std::vector<DeviceImpl*> cuda_devices(cuda::device_count(), nullptr);
  std::lock_guard<std::mutex> g(mu);
  if (!cuda_devices[d.index]) cuda_devices[d.index] = cuda::make_device(d.index).release();
  return *cuda_devices[d.index];
}

Device resolve(const std::optional<Device>& d) {
  if (d) return *d;
  std::lock_guard<std::mutex> g(g_mu);
  return current_slot();
}

void set_current_device(const Device& d) {
  device_impl(d);  // validates
  std::lock_guard<std::mutex> g(g_mu);
  current_slot() = d;
}

std::shared_ptr<StreamImpl> current_stream(const Device& d) {
  auto it = t_streams.find({static_cast<int>(d.type), d.index});
  if (it != t_streams.end()) return it->second;
  return device_impl(d).default_stream();
}

void set_current_stream(const std::shared_ptr<StreamImpl>& s) {
  Device d = s->device();
  t_streams[{static_cast<int>(d.type), d.index}] = s;
}

}  // namespace bronze::runtime
