#include "bronze/memory.hpp"

#include <cmath>

#include "bronze/error.hpp"
#include "runtime/device_impl.hpp"

namespace bronze {
namespace {
runtime::CachingAllocator& alloc(const std::optional<Device>& d) {
  return runtime::device_impl(runtime::resolve(d)).allocator();
}
}  // namespace

std::size_t current_allocated_memory(std::optional<Device> d) { return alloc(d).stats().allocated_bytes; }
std::size_t driver_allocated_memory(std::optional<Device> d) { return alloc(d).stats().reserved_bytes; }
std::size_t recommended_max_memory(std::optional<Device> d) { return alloc(d).recommended_max(); }

void set_per_process_memory_fraction(double fraction, std::optional<Device> d) {
  if (!std::isfinite(fraction) || fraction < 0.0 || fraction > 2.0)
    throw ValueError("invalid memory fraction " + std::to_string(fraction) +
                     ": it must be between 0 and 2 (0 means no limit)");
  alloc(d).set_memory_fraction(fraction);
}
double get_per_process_memory_fraction(std::optional<Device> d) { return alloc(d).memory_fraction(); }
void empty_cache(std::optional<Device> d) {
  auto& dev = runtime::device_impl(runtime::resolve(d));
  dev.allocator().empty_cache();
  if (!dev.memory_is_host_visible()) dev.host_visible_allocator().empty_cache();
  dev.release_idle_memory();
}
MemoryStats memory_stats(std::optional<Device> d) { return alloc(d).stats(); }
MemoryStats host_visible_memory_stats(std::optional<Device> d) {
  return runtime::device_impl(runtime::resolve(d)).host_visible_allocator().stats();
}
void reset_peak_memory_stats(std::optional<Device> d) { alloc(d).reset_peak_stats(); }

}  // namespace bronze
