// How much host memory this process may use: the limit of the CPU device's
// allocator and of the CUDA devices' host-visible (pinned) pools.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace bronze::runtime {

// Bytes of memory this process may use: MemTotal, capped by a cgroup limit.
std::size_t host_memory_limit();
// The same from given files (a /proc/meminfo and cgroup limit files; "max"
// or a missing file means no limit).
std::size_t memory_limit_from(const std::string& meminfo, const std::vector<std::string>& cgroup_limits);

}  // namespace bronze::runtime
