#include "runtime/allocator.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <tuple>

#include "bronze/error.hpp"
#include "runtime/profiler.hpp"

namespace bronze::runtime {

struct Block {
  std::size_t size = 0;       // bytes this block spans
  std::size_t requested = 0;  // bytes the caller asked for (when allocated)
  void* ptr = nullptr;
  std::size_t offset = 0;     // of the caller's bytes in the block (guarded: against its end)
  std::uint64_t stream = 0;   // the stream the segment belongs to
  bool small = false;
  bool guarded = false;       // a segment of its own, never split
  bool allocated = false;
  bool pending = false;       // freed, waiting on cross-stream markers
  std::size_t segment_bytes = 0;  // set on a segment's first block only
  Block* prev = nullptr;
  Block* next = nullptr;
  std::vector<std::shared_ptr<StreamImpl>> stream_uses;  // kept alive until the free
};

namespace {
std::string human(std::size_t n) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(n);
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.2f %s", v, units[u]);
  return buf;
}
}  // namespace

bool CachingAllocator::BlockLess::operator()(const Block* a, const Block* b) const {
  return std::tie(a->stream, a->size, a->ptr) < std::tie(b->stream, b->size, b->ptr);
}

CachingAllocator::CachingAllocator(std::string device_name, std::size_t recommended_max,
                                   AllocatorHooks hooks)
    : device_name_(std::move(device_name)), recommended_max_(recommended_max),
      hooks_(std::move(hooks)) {}

CachingAllocator::~CachingAllocator() {
  std::vector<Block*> segments;
  {
    std::lock_guard<std::mutex> g(mu_);
    pending_.clear();
    segments = detach_cached();
  }
  release(std::move(segments));
}

std::size_t CachingAllocator::round_size(std::size_t n) {
  if (n < kMinBlock) return kMinBlock;
  return (n + kMinBlock - 1) / kMinBlock * kMinBlock;
}

std::size_t CachingAllocator::segment_size(std::size_t rounded) {
  if (rounded <= kSmallRequest) return kSmallSegment;
  if (rounded < kMinLargeAlloc) return kLargeSegment;
  return (rounded + kRoundLarge - 1) / kRoundLarge * kRoundLarge;
}

std::size_t CachingAllocator::segment_for(std::size_t size) const {
  if (!guarded(size)) return segment_size(size);
  return (size + hooks_.page - 1) / hooks_.page * hooks_.page;
}

void* CachingAllocator::block_ptr(const Block* b) { return static_cast<char*>(b->ptr) + b->offset; }

namespace {
std::string fraction_str(double f) {  // 1e-300 stays 1e-300, not 0.000000
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", f);
  return buf;
}
}  // namespace

std::size_t CachingAllocator::limit_bytes() const {
  if (fraction_ <= 0.0) return std::numeric_limits<std::size_t>::max();
  // A positive fraction is a limit: at least 1 byte, never 0 (which reads as "none").
  const double bytes = fraction_ * static_cast<double>(recommended_max_);
  return bytes < 1.0 ? 1 : static_cast<std::size_t>(bytes);
}

Block* CachingAllocator::take_cached(std::size_t size, std::uint64_t stream) {
  Pool& pool = small(size) ? small_ : large_;
  Block key;
  key.stream = stream;
  key.size = size;
  auto it = pool.lower_bound(&key);
  if (it == pool.end() || (*it)->stream != stream) return nullptr;
  Block* b = *it;
  if (b->guarded && b->size - segment_for(size) > segment_for(size) / 8) return nullptr;
  pool.erase(it);
  return b;
}

Block* CachingAllocator::new_segment(std::size_t size, std::uint64_t stream) {
  std::size_t seg = segment_for(size);
  if (st_.reserved_bytes + seg > limit_bytes()) return nullptr;
  void* p = hooks_.raw_alloc(seg, guarded(size));
  if (!p) return nullptr;
  auto* b = new Block;
  b->size = seg;
  b->ptr = p;
  b->stream = stream;
  b->guarded = guarded(size);
  b->small = !b->guarded && size <= kSmallRequest;
  guarded_segments_ += b->guarded;
  b->segment_bytes = seg;
  st_.reserved_bytes += seg;
  st_.reserved_bytes_peak = std::max(st_.reserved_bytes_peak, st_.reserved_bytes);
  st_.segments++;
  st_.num_device_allocs++;
  return b;
}

Block* CachingAllocator::split(Block* b, std::size_t size) {
  if (b->guarded) return b;
  std::size_t remaining = b->size - size;
  bool worth = b->small ? remaining >= kMinBlock : remaining > kSmallRequest;
  if (!worth) return b;
  auto* rest = new Block;
  rest->size = remaining;
  rest->ptr = static_cast<char*>(b->ptr) + size;
  rest->stream = b->stream;
  rest->small = b->small;
  rest->prev = b;
  rest->next = b->next;
  if (b->next) b->next->prev = rest;
  b->next = rest;
  b->size = size;
  (b->small ? small_ : large_).insert(rest);
  return b;
}

Block* CachingAllocator::allocate(std::size_t nbytes, StreamImpl& stream) {
  const std::size_t size = round_size(nbytes);
  const std::uint64_t sid = stream.id();
  std::unique_lock<std::mutex> lock(mu_);
  process_pending();
  Block* b = take_cached(size, sid);
  bool hit = b != nullptr;
  if (!b) b = new_segment(size, sid);
  if (!b) {
    // Over the limit or out of driver memory: give the cache back and retry.
    // The device must be idle first, and queued work may free blocks, so the
    // lock is dropped while waiting.
    lock.unlock();
    hooks_.synchronize();
    lock.lock();
    process_pending();
    b = take_cached(size, sid);
    hit = b != nullptr;
    if (!b) {
      std::vector<Block*> segments = detach_cached();
      lock.unlock();
      release(std::move(segments));
      lock.lock();
      b = new_segment(size, sid);
    }
    if (!b) throw_oom(nbytes, segment_for(size));
  }
  (hit ? st_.cache_hits : st_.cache_misses)++;
  b = split(b, size);
  b->offset = b->guarded ? b->size - (nbytes + kGuardedAlign - 1) / kGuardedAlign * kGuardedAlign : 0;
  b->allocated = true;
  b->requested = nbytes;
  st_.allocated_bytes += b->size;
  st_.allocated_bytes_peak = std::max(st_.allocated_bytes_peak, st_.allocated_bytes);
  st_.requested_bytes += nbytes;
  st_.active_blocks++;
  st_.num_allocs++;
  if (prof::active()) prof::memory_event(device_name_, "alloc", nbytes, st_.allocated_bytes, st_.reserved_bytes);
  return b;
}

void CachingAllocator::throw_oom(std::size_t requested, std::size_t segment) {
  st_.num_ooms++;
  std::size_t limit = limit_bytes();
  std::string lim = fraction_ > 0.0
                        ? human(limit) + " (memory fraction " + fraction_str(fraction_) +
                              " of recommended " + human(recommended_max_) + ")"
                        : std::string("none (device memory exhausted)");
  std::string msg = "bronze: out of memory on " + device_name_ + ": tried to allocate " +
                    human(requested) + " (" + std::to_string(requested) +
                    " bytes, segment " + human(segment) + "); allocated " +
                    human(st_.allocated_bytes) + ", reserved " + human(st_.reserved_bytes) +
                    ", limit " + lim +
                    ". Free tensors, call empty_cache(), or raise the limit with "
                    "set_per_process_memory_fraction().";
  throw OutOfMemoryError(msg, requested, st_.allocated_bytes, st_.reserved_bytes,
                         fraction_ > 0.0 ? limit : 0);
}

void CachingAllocator::free(Block* b) {
  std::lock_guard<std::mutex> g(mu_);
  b->allocated = false;
  st_.allocated_bytes -= b->size;
  st_.requested_bytes -= b->requested;
  st_.active_blocks--;
  st_.num_frees++;
  if (prof::active()) prof::memory_event(device_name_, "free", b->requested, st_.allocated_bytes, st_.reserved_bytes);
  b->requested = 0;
  if (!b->stream_uses.empty()) {
    PendingFree pf{b, {}};
    for (const auto& s : b->stream_uses) pf.markers.push_back(hooks_.record_marker(*s));
    b->stream_uses.clear();
    b->pending = true;
    pending_.push_back(std::move(pf));
    return;
  }
  return_to_pool(b);
}

void CachingAllocator::return_to_pool(Block* b) {
  Pool& pool = b->small ? small_ : large_;
  auto mergeable = [](Block* n) { return n && !n->allocated && !n->pending; };
  if (mergeable(b->prev)) {
    Block* p = b->prev;
    pool.erase(p);
    p->size += b->size;
    p->next = b->next;
    if (b->next) b->next->prev = p;
    delete b;
    b = p;
  }
  if (mergeable(b->next)) {
    Block* n = b->next;
    pool.erase(n);
    b->size += n->size;
    b->next = n->next;
    if (n->next) n->next->prev = b;
    delete n;
  }
  pool.insert(b);
}

void CachingAllocator::process_pending() {
  for (auto it = pending_.begin(); it != pending_.end();) {
    bool done = std::all_of(it->markers.begin(), it->markers.end(),
                            [](const std::unique_ptr<EventImpl>& e) { return e->query(); });
    if (!done) {
      ++it;
      continue;
    }
    Block* b = it->block;
    b->pending = false;
    it = pending_.erase(it);
    return_to_pool(b);
  }
}

std::vector<Block*> CachingAllocator::detach_cached() {
  std::vector<Block*> out;
  for (Pool* pool : {&small_, &large_}) {
    for (auto it = pool->begin(); it != pool->end();) {
      Block* b = *it;
      if (b->prev || b->next) {  // part of a segment still in use
        ++it;
        continue;
      }
      it = pool->erase(it);
      out.push_back(b);
    }
  }
  return out;
}

void CachingAllocator::release(std::vector<Block*> segments) {
  if (segments.empty()) return;
  hooks_.synchronize();
  for (Block* b : segments) hooks_.raw_free(b->ptr);
  std::lock_guard<std::mutex> g(mu_);
  for (Block* b : segments) {
    st_.reserved_bytes -= b->segment_bytes;
    guarded_segments_ -= b->guarded;
    st_.segments--;
    st_.num_device_frees++;
    delete b;
  }
}

void CachingAllocator::empty_cache() {
  hooks_.synchronize();  // work that frees blocks on other streams: let it finish first
  std::vector<Block*> segments;
  {
    std::lock_guard<std::mutex> g(mu_);
    process_pending();
    segments = detach_cached();
  }
  release(std::move(segments));
}

void CachingAllocator::record_stream(Block* b, const std::shared_ptr<StreamImpl>& s) {
  std::lock_guard<std::mutex> g(mu_);
  if (s->id() == b->stream) return;
  if (std::find(b->stream_uses.begin(), b->stream_uses.end(), s) == b->stream_uses.end())
    b->stream_uses.push_back(s);
}

MemoryStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> g(mu_);
  MemoryStats s = st_;
  s.limit_bytes = fraction_ > 0.0 ? limit_bytes() : 0;
  return s;
}

void CachingAllocator::reset_peak_stats() {
  std::lock_guard<std::mutex> g(mu_);
  st_.allocated_bytes_peak = st_.allocated_bytes;
  st_.reserved_bytes_peak = st_.reserved_bytes;
}

void CachingAllocator::set_memory_fraction(double fraction) {
  std::lock_guard<std::mutex> g(mu_);
  fraction_ = fraction;
}

double CachingAllocator::memory_fraction() const {
  std::lock_guard<std::mutex> g(mu_);
  return fraction_;
}

}  // namespace bronze::runtime
