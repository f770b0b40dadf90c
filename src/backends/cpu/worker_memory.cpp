#include "backends/cpu/worker_memory.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <boost/context/detail/fcontext.hpp>
#include <cstddef>
#include <cstdlib>
#include <mutex>
#include <type_traits>
#include <vector>

#include "runtime/shader_module.hpp"

namespace bronze::cpu {
namespace {

// The fibers' stacks, kFiberStack bytes each, kStackStride apart with an
// inaccessible guard below each. The build refuses kernels with a frame over
// kMaxPrivateBytes (shader/diagnostics.cpp); the 64 KiB over it hold the runtime's
// frames, and the guard makes anything that still outgrows its stack fault at
// once rather than overwrite its neighbour's frames. A guard is 1 MiB, so an
// index up to that far past a private array (idx 20000 into float[8] is
// 80 KiB) faults rather than leap a guard into the next fiber's frames; the
// last stack has 64 MiB above it, as the plain path's stack (kernel_guard).
// The region is only reserved (address space, no memory); pages are
// committed as frames touch them.
constexpr std::size_t kFiberStack = runtime::kMaxPrivateBytes + 64 * 1024, kStackGuard = 1024 * 1024,
                      kStackStride = kFiberStack + kStackGuard, kTopGuard = 64 * 1024 * 1024;

struct StackRegion {
  char* p = nullptr;
  std::size_t n = 0;    // stacks
  bool mapped = false;  // else malloc's, without guards (mmap refused)
  void free() {
    if (mapped) ::munmap(p, n * kStackStride + kTopGuard);
    else std::free(p);
    p = nullptr;
    n = 0;
  }
  char* get(std::size_t stacks) {  // the lowest stack's base (just above its guard)
    if (stacks > n) {
      free();
      // One more guard above the last stack: an index past the end of a
      // private array in its thread runs into it, not into another mapping.
      void* m = ::mmap(nullptr, stacks * kStackStride + kTopGuard, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      mapped = m != MAP_FAILED;
      p = mapped ? static_cast<char*>(m) : static_cast<char*>(std::malloc(stacks * kStackStride));
      n = stacks;
      for (std::size_t k = 0; mapped && k < stacks; ++k) ::mprotect(p + k * kStackStride, kStackGuard, PROT_NONE);
      if (mapped) ::mprotect(p + stacks * kStackStride, kTopGuard, PROT_NONE);
    }
    return p + kStackGuard;
  }
  // Its pages go back; the reservation and its guards stay.
  void release() {
    if (mapped) ::madvise(p, n * kStackStride, MADV_DONTNEED);
    else free();
  }
};

// Grown as needed; malloc's.
struct Scratch {
  char* p = nullptr;
  std::size_t n = 0;
  void* get(std::size_t bytes) {
    if (bytes > n) {
      release();
      p = static_cast<char*>(std::malloc(bytes));
      n = bytes;
    }
    return p;
  }
  void release() {
    std::free(p);
    p = nullptr;
    n = 0;
  }
};

// A threadgroup buffer: it ends against an inaccessible page (and one more
// guards its start), so a kernel that uses more than threadgroup_memory= gave
// it faults at once (kernel_guard) instead of writing over the C heap. The
// start is 16-byte aligned, so up to 15 bytes past a size that is not a
// multiple of 16 go unseen.
struct GuardedBuffer {
  char* map = nullptr;
  std::size_t body = 0;  // accessible bytes between the guards
  static constexpr std::size_t kPage = 64 * 1024;  // a multiple of any page size up to 64 KiB
  Scratch fallback;      // no mappings left: unguarded
  void free() {
    if (map) ::munmap(map, body + 2 * kPage);
    map = nullptr;
    body = 0;
  }
  void* get(std::size_t bytes) {
    if (bytes > body || !map) {
      free();
      std::size_t want = std::max<std::size_t>(kPage, (bytes + kPage - 1) / kPage * kPage);
      void* m = ::mmap(nullptr, want + 2 * kPage, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (m == MAP_FAILED) return fallback.get(bytes);
      if (::mprotect(static_cast<char*>(m) + kPage, want, PROT_READ | PROT_WRITE) != 0) {
        ::munmap(m, want + 2 * kPage);
        return fallback.get(bytes);
      }
      map = static_cast<char*>(m);
      body = want;
    }
    return reinterpret_cast<void*>(reinterpret_cast<std::uintptr_t>(map + kPage + body - bytes) & ~std::uintptr_t(15));
  }
  void release() {
    if (map) ::madvise(map + kPage, body, MADV_DONTNEED);
    fallback.release();
  }
};

struct ThreadMemory;
thread_local ThreadMemory* t_memory = nullptr;  // this thread's, once it asked

// Every thread's memory, for release_idle_worker_memory.
struct Registry {
  std::mutex mu;
  std::vector<ThreadMemory*> all;
};
Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: threads may exit after static destructors
  return *r;
}

struct ThreadMemory {
  // Held by the owning thread from its first request in an entry call to the
  // call's end, and by whoever releases the memory.
  std::mutex mu;
  bool held = false;   // the owner holds mu (owner only)
  bool dirty = false;  // pages may be resident since the last release (under mu)
  GuardedBuffer tg[8];
  Scratch scratch;
  StackRegion stacks;

  ThreadMemory() {
    Registry& r = registry();
    std::lock_guard<std::mutex> g(r.mu);
    r.all.push_back(this);
  }
  ~ThreadMemory() {
    t_memory = nullptr;
    {
      Registry& r = registry();
      std::lock_guard<std::mutex> g(r.mu);
      r.all.erase(std::find(r.all.begin(), r.all.end(), this));
    }
    std::lock_guard<std::mutex> g(mu);
    for (auto& b : tg) {
      b.free();
      b.fallback.release();
    }
    scratch.release();
    stacks.free();
  }
  void release() {  // under mu
    if (!dirty) return;
    for (auto& b : tg) b.release();
    scratch.release();
    stacks.release();
    dirty = false;
  }
};

// The calling thread's memory, held for the rest of its entry call.
ThreadMemory& acquire() {
  static thread_local ThreadMemory mine;
  ThreadMemory& m = mine;
  if (!m.held) {
    m.mu.lock();
    m.held = true;
    m.dirty = true;
    t_memory = &m;
  }
  return m;
}

// index: 0 to 7 (the build refuses others)
void* threadgroup(int index, unsigned long long bytes) { return acquire().tg[index].get(static_cast<std::size_t>(bytes)); }
void* scratch(unsigned long long bytes) { return acquire().scratch.get(static_cast<std::size_t>(bytes)); }
char* stacks(unsigned long long count) { return acquire().stacks.get(static_cast<std::size_t>(count)); }

// Boost.Context's own functions, not wrappers: a switch is one indirect
// call. The ABI spells fcontext's types in C for the kernels: the same
// layout, so the same calls (through void (*)(), the cast GCC allows).
using boost::context::detail::transfer_t;
static_assert(sizeof(bronze_fiber_transfer) == sizeof(transfer_t) &&
              offsetof(bronze_fiber_transfer, fctx) == offsetof(transfer_t, fctx) &&
              offsetof(bronze_fiber_transfer, data) == offsetof(transfer_t, data));
static_assert(std::is_same_v<unsigned long, std::size_t>);
template <class To, class From>
To as_abi(From* f) {
  return reinterpret_cast<To>(reinterpret_cast<void (*)()>(f));
}
const bronze_cpu_memory kMemory = {
    threadgroup, scratch, stacks, kFiberStack, kStackStride,
    as_abi<decltype(bronze_cpu_memory::make_fiber)>(&boost::context::detail::make_fcontext),
    as_abi<decltype(bronze_cpu_memory::jump_fiber)>(&boost::context::detail::jump_fcontext)};

}  // namespace

const bronze_cpu_memory* worker_memory() { return &kMemory; }

void end_entry_call() {
  ThreadMemory* m = t_memory;
  if (m && m->held) {
    m->held = false;
    m->mu.unlock();
  }
}

void release_own_worker_memory() {
  ThreadMemory* m = t_memory;
  if (!m) return;
  std::lock_guard<std::mutex> g(m->mu);
  m->release();
}

void release_idle_worker_memory() {
  Registry& r = registry();
  std::lock_guard<std::mutex> g(r.mu);
  for (ThreadMemory* m : r.all) {
    std::unique_lock<std::mutex> lock(m->mu, std::try_to_lock);
    if (lock) m->release();  // else inside an entry call: it keeps its memory
  }
}

}  // namespace bronze::cpu
