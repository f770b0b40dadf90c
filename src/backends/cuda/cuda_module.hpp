// The CUDA backend's shader modules: generated or user CUDA C++ compiled by
// NVRTC (loaded at run time; a cubin for sm_XY or PTX, cached on disk), for
// any architecture without a GPU. Loading is the device's (cuModuleLoadData).
// Kernel threads run on the code of metal/bronze_metal_cuda.h.
#pragma once

#include <optional>
#include <string>

#include "runtime/shader_module.hpp"

namespace bronze::embedded {
extern const char* const bronze_metal_cuda_h;  // backends/cuda/metal/bronze_metal_cuda.h
}  // namespace bronze::embedded

namespace bronze::cuda {

runtime::ModuleObject build_module(const runtime::ModuleSource& src);
// The image build_module cached under (key, suffix), if the cache has it.
std::optional<runtime::ModuleObject> cached_module(const std::string& key, const std::string& suffix);

}  // namespace bronze::cuda
