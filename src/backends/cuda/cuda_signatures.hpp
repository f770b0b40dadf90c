// Kernel signatures in CUDA C++ source (compile_shader(language="cuda"),
// and the signatures given for raw cubins): the __global__ functions, their
// parameters as bronze's reflection (pointers are buffers, values scalars),
// and whether each is extern "C" (its symbol is its name).
#pragma once

#include <string>
#include <vector>

#include "bronze/shader.hpp"

namespace bronze::cuda {

struct CudaKernel {
  KernelInfo info;
  bool extern_c = false;
};

// Throws ShaderCompileError (file:line) on a kernel it cannot read, and
// when there is no non-template __global__ function at all.
std::vector<CudaKernel> parse_cuda_kernels(const std::string& source, const std::string& filename);

}  // namespace bronze::cuda
