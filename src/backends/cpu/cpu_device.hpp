// The CPU device: host memory from the caching allocator, streams served by
// worker threads, and the CPU tensor kernels.
#pragma once

#include <memory>

#include "runtime/device_impl.hpp"

namespace bronze::cpu {

std::unique_ptr<runtime::DeviceImpl> make_device();

}  // namespace bronze::cpu
