// The caching allocator's figures and limits, as torch.mps/torch.cuda name them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "bronze/device.hpp"

namespace bronze {

struct MemoryStats {
  std::uint64_t allocated_bytes = 0;  // held by live tensors (block sizes)
  std::uint64_t allocated_bytes_peak = 0;
  std::uint64_t requested_bytes = 0;  // what callers asked for, before rounding
  std::uint64_t reserved_bytes = 0;   // taken from the driver (cached + live)
  std::uint64_t reserved_bytes_peak = 0;
  std::uint64_t active_blocks = 0;
  std::uint64_t segments = 0;
  std::uint64_t num_allocs = 0;
  std::uint64_t num_frees = 0;
  std::uint64_t cache_hits = 0;      // allocations served from cached blocks
  std::uint64_t cache_misses = 0;    // allocations that took a new segment
  std::uint64_t num_device_allocs = 0;
  std::uint64_t num_device_frees = 0;
  std::uint64_t num_ooms = 0;
  std::uint64_t limit_bytes = 0;     // 0: no limit
};

std::size_t current_allocated_memory(std::optional<Device> d = std::nullopt);
std::size_t driver_allocated_memory(std::optional<Device> d = std::nullopt);
std::size_t recommended_max_memory(std::optional<Device> d = std::nullopt);
// Limit = fraction * recommended_max_memory(); 0 means no limit. 0 <= f <= 2.
void set_per_process_memory_fraction(double fraction, std::optional<Device> d = std::nullopt);
double get_per_process_memory_fraction(std::optional<Device> d = std::nullopt);
// Returns cached blocks no tensor uses to the driver (waits for the device).
void empty_cache(std::optional<Device> d = std::nullopt);
MemoryStats memory_stats(std::optional<Device> d = std::nullopt);
// The host-visible pool's figures (on CPU devices the same pool as above).
// empty_cache() empties both pools.
MemoryStats host_visible_memory_stats(std::optional<Device> d = std::nullopt);
void reset_peak_memory_stats(std::optional<Device> d = std::nullopt);

}  // namespace bronze
