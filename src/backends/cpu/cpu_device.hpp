// The CPU device: host memory from the caching allocator, streams served by
// worker threads, and the CPU tensor kernels.
#pragma once

#include <memory>

#include "runtime/device_impl.hpp"

namespace bronze::cpu {

std::unique_ptr<runtime::DeviceImpl> make_device();
// Bytes of memory this process may use: MemTotal, capped by a cgroup limit.
std::size_t host_memory_limit();

}  // namespace bronze::cpu
