// AIR (an Apple .metallib function) lowered for CUDA through LLVM's NVPTX
// backend: the module's constant address space (2, which NVPTX has no
// pointers of) made generic; its threadgroup variables (3) are NVPTX's
// shared memory as they are; emitted as PTX, which build_module links
// (nvJitLink) with the entry and the runtime functions NVRTC builds from
// C++ over bronze_metal_cuda.h (backends/air_lowering), so AIR kernels
// compute on CUDA as compiled Metal source does.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "air/air_module.hpp"
#include "air/metallib.hpp"
#include "runtime/shader_module.hpp"

namespace bronze::cuda {

// LLVM's version and the PTX target: what lower_air's PTX is built for.
std::string air_target();

// The entry (runtime::kAirEntrySymbol) and runtime functions as CUDA C++,
// the kernel's PTX as an object (build_module links them for the device's
// gpu_arch, which the caller sets). Throws as the CPU's lower_air does, and
// NotSupportedError when the LLVM loaded lacks the NVPTX target.
runtime::ModuleSource lower_air(const air::Function& f, const air::AirFunction& reflection,
                                const std::vector<std::pair<std::string, std::string>>& constants);

}  // namespace bronze::cuda
