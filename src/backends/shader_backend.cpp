#include "backends/shader_backend.hpp"

#include "backends/air_lowering.hpp"
#include "backends/cpu/air/cpu_air.hpp"
#include "backends/cpu/cpu_module.hpp"
#include "backends/cpu/metal/cpu_codegen.hpp"
#include "backends/cuda/cuda_module.hpp"
#include "backends/cuda/metal/cuda_codegen.hpp"
#include "backends/cuda/nvrtc.hpp"
#include "bronze/error.hpp"
#include "jit/host_compiler.hpp"

namespace bronze::backends {

namespace {
constexpr const char* kCudaAir = "Apple .metallib kernels run on the CPU so far, not on CUDA";
}  // namespace

const ShaderBackend& shader_backend(DeviceType type) {
  static const ShaderBackend cpu_backend{&cpu::generate, &cpu::build_module, &cpu::cached_module,
                                         [] { return jit::HostCompiler::get().identity; }, &cpu::lower_air,
                                         &backends::air_unsupported, &cpu::air_target};
  static const ShaderBackend cuda_backend{
      &cuda::generate, &cuda::build_module, &cuda::cached_module, &cuda::nvrtc_status,
      [](const air::Function& f, const air::AirFunction&,
         const std::vector<std::pair<std::string, std::string>>&) -> runtime::ModuleSource {
        throw NotSupportedError("'" + f.name + "': " + kCudaAir);
      },
      [](const air::AirFunction&) { return std::string(kCudaAir); }, [] { return std::string("cuda"); }};
  return type == DeviceType::CUDA ? cuda_backend : cpu_backend;
}

}  // namespace bronze::backends
