#include "runtime/allocator.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <thread>

#include "backends/cpu/cpu_stream.hpp"
#include "bronze/bronze.hpp"

using bronze::runtime::AllocatorHooks;
using bronze::runtime::CachingAllocator;

namespace {
// A driver that counts, over plain malloc; markers never complete until told.
struct FakeDriver {
  int allocs = 0, frees = 0;
  std::size_t live = 0;
  char* last = nullptr;  // the last segment, its size and whether it holds one block
  std::size_t last_bytes = 0;
  bool last_one_block = false;
  AllocatorHooks hooks(std::size_t guarded_from = 0, std::size_t max_guarded = SIZE_MAX) {
    return AllocatorHooks{
        [this](std::size_t n, bool one_block) {
          ++allocs;
          live += n;
          last = static_cast<char*>(std::malloc(n));
          last_bytes = n;
          last_one_block = one_block;
          return last;
        },
        [this](void* p) {
          ++frees;
          std::free(p);
        },
        [] {},
        // These tests never record cross-stream use, so no marker is asked for.
        [](bronze::runtime::StreamImpl&) { return std::unique_ptr<bronze::runtime::EventImpl>(); },
        guarded_from, 4096, max_guarded};
  }
};

std::shared_ptr<bronze::cpu::CpuStream> new_stream() {
  return std::make_shared<bronze::cpu::CpuStream>(bronze::Device());
}
}  // namespace

TEST(Allocator, RoundingAndSegments) {
  EXPECT_EQ(CachingAllocator::round_size(1), 512u);
  EXPECT_EQ(CachingAllocator::round_size(512), 512u);
  EXPECT_EQ(CachingAllocator::round_size(513), 1024u);
  EXPECT_EQ(CachingAllocator::segment_size(1 << 20), 2u << 20);
  EXPECT_EQ(CachingAllocator::segment_size((1 << 20) + 512), 20u << 20);
  EXPECT_EQ(CachingAllocator::segment_size(11u << 20), 12u << 20);
}

TEST(Allocator, SplitReuseMerge) {
  FakeDriver drv;
  CachingAllocator a("test", 1ull << 30, drv.hooks());
  auto s = new_stream();
  auto* b1 = a.allocate(1000, *s);
  auto* b2 = a.allocate(1000, *s);
  EXPECT_EQ(drv.allocs, 1);  // both carved from one 2 MiB segment
  EXPECT_EQ(static_cast<char*>(CachingAllocator::block_ptr(b2)) - static_cast<char*>(CachingAllocator::block_ptr(b1)), 1024);
  auto st = a.stats();
  EXPECT_EQ(st.allocated_bytes, 2048u);
  EXPECT_EQ(st.requested_bytes, 2000u);
  EXPECT_EQ(st.reserved_bytes, 2u << 20);
  EXPECT_EQ(st.cache_misses, 1u);
  EXPECT_EQ(st.cache_hits, 1u);
  a.free(b1);
  a.free(b2);
  EXPECT_EQ(a.stats().allocated_bytes, 0u);
  // Merged back into one free segment, which a 1 MiB request reuses.
  auto* b3 = a.allocate(1 << 20, *s);
  EXPECT_EQ(drv.allocs, 1);
  EXPECT_EQ(CachingAllocator::block_ptr(b3), CachingAllocator::block_ptr(b1));
  a.free(b3);
  a.empty_cache();
  EXPECT_EQ(drv.frees, 1);
  EXPECT_EQ(a.stats().reserved_bytes, 0u);
}

TEST(Allocator, GuardedPlacementEndsEachLargeBlockWithItsSegment) {
  FakeDriver drv;
  CachingAllocator a("test", 1ull << 30, drv.hooks(64 << 10));
  auto s = new_stream();
  auto end = [](const FakeDriver& d) { return d.last + d.last_bytes; };
  // 100,004 bytes: a segment of 25 pages, the bytes 16-aligned against its end.
  auto* big = a.allocate(100004, *s);
  EXPECT_TRUE(drv.last_one_block);
  EXPECT_EQ(drv.last_bytes, 25u * 4096);
  EXPECT_EQ(static_cast<char*>(CachingAllocator::block_ptr(big)) + 100016, end(drv));
  char* big_segment = drv.last;
  // The same size again: a segment of its own, never a split of another.
  auto* twin = a.allocate(100004, *s);
  EXPECT_EQ(drv.allocs, 2);
  EXPECT_EQ(static_cast<char*>(CachingAllocator::block_ptr(twin)) + 100016, end(drv));
  // Under the threshold: the shared small pool, as before.
  auto* small = a.allocate(1000, *s);
  EXPECT_FALSE(drv.last_one_block);
  EXPECT_EQ(drv.last_bytes, 2u << 20);
  a.free(big);
  // A cached guarded segment serves a request that wastes at most an eighth
  // of it (92 KiB in 100 KiB), placed against the same end...
  auto* near = a.allocate(92 << 10, *s);
  EXPECT_EQ(drv.allocs, 3);
  EXPECT_EQ(static_cast<char*>(CachingAllocator::block_ptr(near)) + (92 << 10), big_segment + 25 * 4096);
  a.free(near);
  // ...and not one that would waste more.
  auto* far = a.allocate(70 << 10, *s);
  EXPECT_EQ(drv.allocs, 4);
  EXPECT_EQ(a.stats().allocated_bytes, (25u + 18) * 4096 + 1024);  // twin, far (page-rounded), small
  for (auto* b : {twin, small, far}) a.free(b);
  a.empty_cache();
  EXPECT_EQ(drv.frees, 4);
  EXPECT_EQ(a.stats().reserved_bytes, 0u);
}

TEST(Allocator, GuardedPlacementStopsAtItsLimitForSmallSizes) {
  FakeDriver drv;
  CachingAllocator a("test", 1ull << 30, drv.hooks(1, 2));
  auto s = new_stream();
  auto* g1 = a.allocate(100, *s);
  auto* g2 = a.allocate(100, *s);
  EXPECT_TRUE(drv.last_one_block);
  EXPECT_EQ(drv.last_bytes, 4096u);
  // Two guarded segments held: the next small request shares a segment...
  auto* shared = a.allocate(100, *s);
  EXPECT_FALSE(drv.last_one_block);
  EXPECT_EQ(drv.last_bytes, 2u << 20);
  // ...a large one is still guarded.
  auto* large = a.allocate(3u << 20, *s);
  EXPECT_TRUE(drv.last_one_block);
  EXPECT_EQ(drv.last_bytes, 3u << 20);
  // Freed and cached, the guarded segments still count; given back, they don't.
  for (auto* b : {g1, g2, large}) a.free(b);
  a.empty_cache();
  auto* again = a.allocate(100, *s);
  EXPECT_TRUE(drv.last_one_block);
  for (auto* b : {shared, again}) a.free(b);
}

TEST(Allocator, EmptyCacheKeepsSegmentsInUse) {
  FakeDriver drv;
  CachingAllocator a("test", 1ull << 30, drv.hooks());
  auto s = new_stream();
  auto* live = a.allocate(100, *s);
  auto* dead = a.allocate(30 << 20, *s);
  a.free(dead);
  a.empty_cache();
  EXPECT_EQ(drv.frees, 1);  // the large segment only
  EXPECT_EQ(a.stats().reserved_bytes, 2u << 20);
  a.free(live);
}

TEST(Allocator, StreamsDoNotShareCachedBlocks) {
  FakeDriver drv;
  CachingAllocator a("test", 1ull << 30, drv.hooks());
  auto s1 = new_stream(), s2 = new_stream();
  auto* b = a.allocate(4096, *s1);
  void* p = CachingAllocator::block_ptr(b);
  a.free(b);
  auto* c = a.allocate(4096, *s2);
  EXPECT_NE(CachingAllocator::block_ptr(c), p);
  EXPECT_EQ(drv.allocs, 2);
  auto* d = a.allocate(4096, *s1);
  EXPECT_EQ(CachingAllocator::block_ptr(d), p);
  a.free(c);
  a.free(d);
}

TEST(Allocator, LimitFreesCacheThenRaises) {
  FakeDriver drv;
  CachingAllocator a("test", 100u << 20, drv.hooks());
  a.set_memory_fraction(0.5);  // 50 MiB
  auto s = new_stream();
  auto* big = a.allocate(30 << 20, *s);
  a.free(big);  // cached: 30 MiB reserved
  // 40 MiB does not fit beside the cached 30 MiB, but does once it is freed.
  auto* b = a.allocate(40 << 20, *s);
  EXPECT_EQ(drv.frees, 1);
  try {
    a.allocate(20 << 20, *s);
    FAIL() << "expected OutOfMemoryError";
  } catch (const bronze::OutOfMemoryError& e) {
    EXPECT_EQ(e.requested(), 20u << 20);
    EXPECT_EQ(e.allocated(), 40u << 20);
    EXPECT_EQ(e.limit(), 50u << 20);
    EXPECT_NE(std::string(e.what()).find("limit 50.00 MiB"), std::string::npos) << e.what();
  }
  EXPECT_EQ(a.stats().num_ooms, 1u);
  a.free(b);
  auto* again = a.allocate(20 << 20, *s);  // usable after the error
  a.free(again);
}

TEST(Allocator, CrossStreamUseDefersReuse) {
  // Real CPU streams: a block used on s2 is not reused by s1 until s2's work
  // queued before the free has run.
  bronze::Stream s1, s2;
  bronze::Tensor t;
  {
    bronze::StreamGuard g(s1);
    t = bronze::empty({1024});
  }
  void* p = t.data_ptr();
  // Block s2 until released, then record use of t there.
  std::atomic<bool> go{false};
  {
    bronze::StreamGuard g(s2);
    t.record_stream(s2);
  }
  auto& impl = static_cast<bronze::cpu::CpuStream&>(s2.impl());
  impl.enqueue("hold", "test", [&] {
    while (!go.load()) std::this_thread::yield();
  });
  t = bronze::Tensor();  // free while s2 still "uses" it
  bronze::Tensor u;
  {
    bronze::StreamGuard g(s1);
    u = bronze::empty({1024});
  }
  EXPECT_NE(u.data_ptr(), p);
  go = true;
  s2.synchronize();
  bronze::Tensor w;
  {
    bronze::StreamGuard g(s1);
    w = bronze::empty({1024});
  }
  EXPECT_EQ(w.data_ptr(), p);
}

TEST(Allocator, TensorLifetimesMoveFigures) {
  bronze::synchronize();
  bronze::empty_cache();
  auto before = bronze::current_allocated_memory();
  {
    auto t = bronze::empty({1000});  // 4000 bytes -> 4096
    EXPECT_EQ(bronze::current_allocated_memory(), before + 4096);
    EXPECT_GE(bronze::driver_allocated_memory(), bronze::current_allocated_memory());
  }
  EXPECT_EQ(bronze::current_allocated_memory(), before);
  auto st = bronze::memory_stats();
  EXPECT_GE(st.allocated_bytes_peak, before + 4096);
  bronze::reset_peak_memory_stats();
  EXPECT_EQ(bronze::memory_stats().allocated_bytes_peak, before);
}

TEST(Allocator, FractionValidation) {
  EXPECT_THROW(bronze::set_per_process_memory_fraction(-0.1), bronze::ValueError);
  EXPECT_THROW(bronze::set_per_process_memory_fraction(2.5), bronze::ValueError);
  bronze::set_per_process_memory_fraction(0.0);
  EXPECT_EQ(bronze::memory_stats().limit_bytes, 0u);
  EXPECT_GT(bronze::recommended_max_memory(), 0u);
}
