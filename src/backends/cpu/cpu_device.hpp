// The CPU device: host memory from the caching allocator, streams served by
// worker threads, and the CPU tensor kernels.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "runtime/device_impl.hpp"

namespace bronze::cpu {

std::unique_ptr<runtime::DeviceImpl> make_device();

// The CPU allocator's segments are mapped with an inaccessible guard page on
// each side, so a kernel that runs past the end (or before the start) of the
// memory its tensors live in faults at once (kernel_guard) instead of writing
// over other mappings of the process: bronze's own state, the C heap.
// Overruns into other blocks of the same segment are not seen
// (validate=True fences each buffer).
void* map_segment(std::size_t bytes);
void unmap_segment(void* p);
// The guard page `address` is in, as "after"/"before" a segment of `bytes`,
// or false.
bool segment_guard(std::uintptr_t address, bool& after, std::size_t& bytes);

}  // namespace bronze::cpu
