// The CPU device: host memory from the caching allocator, streams served by
// worker threads, and the CPU tensor kernels.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/device_impl.hpp"

namespace bronze::cpu {

std::unique_ptr<runtime::DeviceImpl> make_device();
// Bytes of memory this process may use: MemTotal, capped by a cgroup limit.
std::size_t host_memory_limit();
// The same from given files (a /proc/meminfo and cgroup limit files; "max"
// or a missing file means no limit).
std::size_t memory_limit_from(const std::string& meminfo, const std::vector<std::string>& cgroup_limits);

}  // namespace bronze::cpu
