// The CPU device: host memory from the caching allocator, streams served by
// worker threads, and the CPU tensor kernels.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

#include "runtime/device_impl.hpp"

namespace bronze::cpu {

std::unique_ptr<runtime::DeviceImpl> make_device();

// The CPU allocator's segments are mapped with a wide inaccessible guard on
// each side (64 MiB or four times the segment), so a kernel that runs past
// the end (or before the start) of the memory its tensors live in faults at
// once (kernel_guard) instead of writing over other mappings of the process:
// bronze's own state, the C heap. Each tensor gets a segment of its own, its
// bytes against the segment's end (the allocator's guarded placement), so a
// grid past a tensor faults at its first byte past it and reaches no other
// tensor. Past kMaxGuardedTensors such segments held at once (each costs two
// of the process's limited kernel mappings), tensors under 1 MiB share 2 MiB
// segments, where an overrun into a neighbour is not seen (validate=True
// fences each buffer).
inline constexpr std::size_t kMaxGuardedTensors = 16384;
void* map_segment(std::size_t bytes, bool one_block);
void unmap_segment(void* p);
struct SegmentFault {
  std::uintptr_t base;  // the segment's first byte
  std::size_t bytes;
  bool one_block;       // it holds one tensor's memory, placed against its end
  bool after;           // in the guard past its end (else before its start)
};
// The segment whose guard page `address` is in, if any.
std::optional<SegmentFault> segment_guard(std::uintptr_t address);

}  // namespace bronze::cpu
