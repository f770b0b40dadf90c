#include "bronze/device.hpp"

#include <cctype>
#include <mutex>

#include "bronze/error.hpp"
#include "backends/cuda/cublas.hpp"
#include "backends/cuda/driver_api.hpp"
#include "backends/cuda/nvjitlink.hpp"
#include "backends/cuda/nvrtc.hpp"
#include "jit/warnings.hpp"
#include "runtime/device_impl.hpp"
#include "runtime/nvtx.hpp"

namespace bronze {

Device Device::parse(const std::string& spec) {
  std::string type = spec, index;
  auto colon = spec.find(':');
  if (colon != std::string::npos) {
    type = spec.substr(0, colon);
    index = spec.substr(colon + 1);
  }
  bool digits = !index.empty() && index.size() < 6;
  for (char c : index) digits = digits && std::isdigit(static_cast<unsigned char>(c));
  if (colon != std::string::npos && !digits)
    throw ValueError("invalid device '" + spec + "': the index must be a number, as in 'cuda:0'");
  int i = index.empty() ? 0 : std::stoi(index);
  if (type == "cpu") return Device(DeviceType::CPU, i);
  if (type == "cuda") return Device(DeviceType::CUDA, i);
  if (type == "mps") {  // torch.mps code's one GPU: bronze's default accelerator
    if (i != 0) throw ValueError("invalid device '" + spec + "': torch.mps has one device, 'mps' (or 'mps:0')");
    const Device d = cuda::device_count() > 0 ? Device(DeviceType::CUDA, 0) : Device(DeviceType::CPU, 0);
    static std::once_flag said;
    std::call_once(said, [&] {
      jit::warn("bronze: device 'mps' is " + d.str() + " here, bronze's default accelerator (the first CUDA device, "
                "else the CPU)");
    });
    return d;
  }
  throw ValueError("invalid device '" + spec + "': expected 'cpu', 'cuda', 'cuda:N' or 'mps'");
}

std::string Device::str() const {
  return (type == DeviceType::CPU ? "cpu:" : "cuda:") + std::to_string(index);
}

bool is_available(std::optional<DeviceType> type) {
  return !type || device_count(type) > 0;
}

int device_count(std::optional<DeviceType> type) {
  DeviceType t = type ? *type : current_device().type;
  return t == DeviceType::CPU ? 1 : cuda::device_count();
}

std::vector<Device> devices() {
  std::vector<Device> out{Device(DeviceType::CPU, 0)};
  for (int i = 0; i < device_count(DeviceType::CUDA); ++i) out.emplace_back(DeviceType::CUDA, i);
  return out;
}

Device current_device() { return runtime::resolve(std::nullopt); }
void set_device(const Device& d) { runtime::set_current_device(d); }

DeviceProperties get_device_properties(std::optional<Device> d) {
  return runtime::device_impl(runtime::resolve(d)).properties();
}

std::string cuda_status() {
  std::string s = cuda::status();
  if (cuda::driver())
    s += "; " + cuda::nvrtc_status() + "; " + cuda::cublas_status() + "; " + cuda::nvjitlink_status() +
         " for Apple .metallib kernels";
  return s + "; " + runtime::nvtx::status();
}

void synchronize(std::optional<Device> d) { runtime::device_impl(runtime::resolve(d)).synchronize(); }
bool query(std::optional<Device> d) { return runtime::device_impl(runtime::resolve(d)).query(); }

}  // namespace bronze
