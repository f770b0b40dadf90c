#include "backends/shader_backend.hpp"

#include "backends/air_lowering.hpp"
#include "backends/cpu/air/cpu_air.hpp"
#include "backends/cpu/cpu_module.hpp"
#include "backends/cpu/metal/cpu_codegen.hpp"
#include "backends/cuda/air/cuda_air.hpp"
#include "backends/cuda/cuda_module.hpp"
#include "backends/cuda/metal/cuda_codegen.hpp"
#include "backends/cuda/nvrtc.hpp"
#include "jit/host_compiler.hpp"

namespace bronze::backends {

const ShaderBackend& shader_backend(DeviceType type) {
  static const ShaderBackend cpu_backend{&cpu::generate, &cpu::build_module, &cpu::cached_module,
                                         [] { return jit::HostCompiler::get().identity; }, &cpu::lower_air,
                                         &backends::air_unsupported, &cpu::air_target};
  static const ShaderBackend cuda_backend{&cuda::generate,    &cuda::build_module, &cuda::cached_module,
                                          &cuda::nvrtc_status, &cuda::lower_air,    &backends::air_unsupported,
                                          &cuda::air_target};
  return type == DeviceType::CUDA ? cuda_backend : cpu_backend;
}

}  // namespace bronze::backends
