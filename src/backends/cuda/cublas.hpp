// cuBLAS, loaded at run time, for mm on CUDA devices.
#pragma once

#include <string>

#include "backends/cuda/driver_api.hpp"
#include "runtime/view.hpp"

namespace bronze::cuda {

std::string cublas_status();
// out (m x n) = a (m x k) @ b (k x n), row-major views of one floating
// dtype, queued on `s`; the device's context must be current. Throws
// NotSupportedError without cuBLAS.
void gemm(int device, CUstream s, const runtime::View& out, const runtime::View& a, const runtime::View& b);

}  // namespace bronze::cuda
