// The caching allocator, shared by every backend (the backend supplies the
// raw "driver" allocation, device synchronization and stream markers).
//
// Sizes round up to 512 bytes. Requests up to 1 MiB come from 2 MiB segments
// (the small pool); larger ones from segments of 20 MiB or the request
// rounded to 2 MiB (the large pool). Blocks split on allocation and merge
// with free neighbours on free. A cached block is reused only by the stream it
// was allocated on, which orders the reuse after earlier work; a block used
// on other streams (record_stream) returns to the cache only when markers
// recorded on those streams at free time have completed.
//
// Guarded placement (AllocatorHooks::guarded_from, the CPU's): requests of at
// least that size get a segment of their own, rounded to the page, never
// split, and their bytes end where the segment ends (to 16 bytes), against
// the inaccessible guard the backend maps there: a kernel that runs past
// such a buffer faults at its first byte past it (to within those 16)
// instead of writing over other tensors. A cached guarded segment serves a
// request only if it wastes at most an eighth of it. Past max_guarded
// segments (each costs the process kernel mappings, which are limited),
// requests of the small pool's sizes share its segments again.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "bronze/memory.hpp"
#include "runtime/stream_impl.hpp"

namespace bronze::runtime {

struct Block;

struct AllocatorHooks {
  // Returns nullptr when the driver has no memory left. `one_block`: the
  // segment will hold a single block, placed against its end (guarded).
  std::function<void*(std::size_t, bool one_block)> raw_alloc;
  std::function<void(void*)> raw_free;
  // Waits for all work on the device (before memory goes back to the
  // driver), its failures left to the streams' owners.
  std::function<void()> synchronize;
  // An event recorded now on `s` (for deferred reuse after cross-stream use).
  std::function<std::unique_ptr<EventImpl>(StreamImpl& s)> record_marker;
  std::size_t guarded_from = 0;  // 0: no guarded placement
  std::size_t page = 4096;       // guarded segments round to it
  std::size_t max_guarded = 0;   // guarded segments held at once, for small-pool sizes
};

class CachingAllocator {
 public:
  static constexpr std::size_t kMinBlock = 512;
  static constexpr std::size_t kSmallRequest = 1 << 20;  // 1 MiB
  static constexpr std::size_t kSmallSegment = 2 << 20;  // 2 MiB
  static constexpr std::size_t kLargeSegment = 20 << 20;  // 20 MiB
  static constexpr std::size_t kMinLargeAlloc = 10 << 20;
  static constexpr std::size_t kRoundLarge = 2 << 20;

  CachingAllocator(std::string device_name, std::size_t recommended_max, AllocatorHooks hooks);
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // Throws OutOfMemoryError over the limit (after emptying the cache once).
  Block* allocate(std::size_t nbytes, StreamImpl& stream);
  void free(Block* b);
  void record_stream(Block* b, const std::shared_ptr<StreamImpl>& s);
  static void* block_ptr(const Block* b);

  void empty_cache();
  MemoryStats stats() const;
  void reset_peak_stats();
  void set_memory_fraction(double fraction);  // validated by the caller
  double memory_fraction() const;
  std::size_t recommended_max() const { return recommended_max_; }

  static std::size_t round_size(std::size_t n);
  static std::size_t segment_size(std::size_t rounded);
  static constexpr std::size_t kGuardedAlign = 16;  // a guarded block's bytes start so aligned

 private:
  struct BlockLess {
    bool operator()(const Block* a, const Block* b) const;
  };
  using Pool = std::set<Block*, BlockLess>;
  struct PendingFree {
    Block* block;
    std::vector<std::unique_ptr<EventImpl>> markers;
  };

  bool guarded(std::size_t size) const {  // needs mu_
    return hooks_.guarded_from && size >= hooks_.guarded_from &&
           (size > kSmallRequest || guarded_segments_ < hooks_.max_guarded);
  }
  bool small(std::size_t size) const { return hooks_.guarded_from ? !guarded(size) : size <= kSmallRequest; }
  std::size_t segment_for(std::size_t size) const;
  Block* take_cached(std::size_t size, std::uint64_t stream);  // needs mu_
  Block* new_segment(std::size_t size, std::uint64_t stream);  // needs mu_
  Block* split(Block* b, std::size_t size);                    // needs mu_
  void return_to_pool(Block* b);                               // needs mu_
  // Cached blocks that are whole segments, taken out of the pools so no new
  // work can be queued on them (needs mu_); then given back to the driver
  // once the device is idle, since work queued on them before they left the
  // pool may still be running (without mu_: queued work may free memory).
  std::vector<Block*> detach_cached();                         // needs mu_
  void release(std::vector<Block*> segments);
  void process_pending();                                      // needs mu_
  std::size_t limit_bytes() const;                             // needs mu_
  [[noreturn]] void throw_oom(std::size_t requested, std::size_t segment);  // needs mu_

  std::string device_name_;
  std::size_t recommended_max_;
  AllocatorHooks hooks_;
  mutable std::mutex mu_;
  Pool small_, large_;
  std::vector<PendingFree> pending_;
  double fraction_ = 0.0;
  std::size_t guarded_segments_ = 0;
  MemoryStats st_;
};

}  // namespace bronze::runtime
