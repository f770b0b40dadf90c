// The CUDA device: memory from cuMemAlloc through the caching allocator,
// streams and events on the driver's, host transfers. Tensor kernels and
// shaders on CUDA are the next step (they raise NotSupportedError meanwhile).
#pragma once

#include <memory>

#include "runtime/device_impl.hpp"

namespace bronze::cuda {

std::unique_ptr<runtime::DeviceImpl> make_device(int index);

}  // namespace bronze::cuda
