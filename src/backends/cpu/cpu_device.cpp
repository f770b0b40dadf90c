#include "backends/cpu/cpu_device.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "backends/cpu/blas.hpp"
#include "backends/cpu/cpu_event.hpp"
#include "backends/cpu/cpu_kernels.hpp"
#include "backends/cpu/cpu_module.hpp"
#include "backends/cpu/cpu_stream.hpp"
#include "backends/cpu/thread_pool.hpp"
#include "backends/cpu/worker_memory.hpp"
#include "bronze/error.hpp"
#include "runtime/fork_state.hpp"
#include "runtime/host_memory.hpp"
#include "runtime/stream_set.hpp"

namespace bronze::cpu {
namespace {

std::size_t page_size() {
  static const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  return page;
}

constexpr std::size_t kMinGuard = std::size_t(64) << 20, kMaxGuard = std::size_t(16) << 30;

// Mapped segments by their first byte.
struct Segments {
  struct Segment {
    std::size_t bytes;
    std::size_t guard;  // inaccessible bytes on each side
    bool one_block;
  };
  std::mutex mu;
  std::map<std::uintptr_t, Segment> map;
};
Segments& segments() {
  static Segments* s = new Segments;  // never destroyed: tensors may outlive statics
  return *s;
}

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto p = line.find(':');
      if (p != std::string::npos) return line.substr(p + 2);
    }
  }
  return "host CPU";
}

// KernelLaunch objects the streams have finished with.
class LaunchPool {
 public:
  runtime::KernelLaunch* take() {
    std::lock_guard<std::mutex> lock(mu_);
    if (free_.empty()) return new runtime::KernelLaunch;
    runtime::KernelLaunch* l = free_.back();
    free_.pop_back();
    return l;
  }
  void give(runtime::KernelLaunch* l) {
    l->keepalive.clear();  // the buffers and library it held are released now, not at its next use
    std::lock_guard<std::mutex> lock(mu_);
    if (free_.size() < kMax) {
      free_.push_back(l);
      return;
    }
    delete l;
  }

 private:
  static constexpr std::size_t kMax = 256;  // launches in flight beyond this are freed
  std::mutex mu_;
  std::vector<runtime::KernelLaunch*> free_;
};
LaunchPool& launch_pool() {
  static LaunchPool* pool = new LaunchPool;  // never destroyed: streams may finish launches during exit
  return *pool;
}

class CpuDevice final : public runtime::DeviceImpl {
 public:
  CpuDevice()
      : allocator_("cpu:0", runtime::host_memory_limit(),
                   runtime::AllocatorHooks{
                       [](std::size_t n, bool one_block) -> void* { return map_segment(n, one_block); },
                       [](void* p) { unmap_segment(p); },
                       [this] { wait_all(); },
                       [](runtime::StreamImpl& s) {
                         auto e = std::make_unique<CpuEvent>(false);
                         e->mark(s);
                         return std::unique_ptr<runtime::EventImpl>(std::move(e));
                       },
                       /*guarded_from=*/1, page_size(), kMaxGuardedTensors}) {
    // The settings its workers read, read here first: a bad $BRONZE_NUM_THREADS
    // or $BRONZE_KERNEL_TIME_LIMIT is the error of the call that needed the
    // device, never of queued work.
    ThreadPool::configured_size();
    runtime::kernel_time_limit();
  }

  Device device() const override { return Device(DeviceType::CPU, 0); }

  DeviceProperties properties() override {
    DeviceProperties p;
    p.name = cpu_model();
    p.device = device();
    p.total_memory = runtime::host_memory_limit();
    p.recommended_max_memory = allocator_.recommended_max();
    p.multiprocessor_count = ThreadPool::instance().size();
    p.max_threads_per_threadgroup = 1024;
    p.simd_width = 32;
    p.host_visible = true;
    return p;
  }

  // A stream dropped in a forked child is left alone: the threads that ran
  // it and the waits on its condition variables stayed in the parent.
  std::shared_ptr<CpuStream> new_stream() {
    return std::shared_ptr<CpuStream>(new CpuStream(device()), [](CpuStream* s) {
      if (!runtime::forked_after_start(DeviceType::CPU)) delete s;
    });
  }

  runtime::CachingAllocator& allocator() override { return allocator_; }
  runtime::CachingAllocator& host_visible_allocator() override { return allocator_; }
  void release_idle_memory() override {
    // A forked child has the memory but not the threads, nor locks they held.
    if (!runtime::forked_after_start(DeviceType::CPU)) release_idle_worker_memory();
  }

  std::shared_ptr<runtime::StreamImpl> default_stream() override {
    std::lock_guard<std::mutex> g(mu_);
    if (!default_) {
      default_ = new_stream();
      streams_.add(default_);
    }
    return default_;
  }

  std::shared_ptr<runtime::StreamImpl> create_stream() override {
    auto s = new_stream();
    streams_.add(s);
    return s;
  }

  void synchronize() override { streams_.synchronize_all(); }
  void wait_all() override { streams_.wait_all(); }
  bool query() override { return streams_.query_all(); }

  std::unique_ptr<runtime::EventImpl> create_event(bool timing) override {
    return std::make_unique<CpuEvent>(timing);
  }

  void fill(runtime::StreamImpl& s, const runtime::View& dst, Scalar v) override {
    q(s).enqueue("fill", "fill", [dst, v] { kernels::fill(dst, v); });
  }
  void copy(runtime::StreamImpl& s, const runtime::View& dst, const runtime::View& src) override {
    q(s).enqueue("copy", "copy", [dst, src] { kernels::copy(dst, src); });
  }
  void binary(runtime::StreamImpl& s, runtime::BinaryOp op, const runtime::View& out,
              const runtime::View& a, const runtime::View& b) override {
    q(s).enqueue(runtime::binary_op_name(op), "kernel",
                 [op, out, a, b] { kernels::binary(op, out, a, b); });
  }
  void binary_scalar(runtime::StreamImpl& s, runtime::BinaryOp op, const runtime::View& out,
                     const runtime::View& a, Scalar b) override {
    q(s).enqueue(runtime::binary_op_name(op), "kernel",
                 [op, out, a, b] { kernels::binary_scalar(op, out, a, b); });
  }
  void arange(runtime::StreamImpl& s, const runtime::View& out, Scalar start, Scalar step) override {
    q(s).enqueue("arange", "fill", [out, start, step] { kernels::arange(out, start, step); });
  }
  void random(runtime::StreamImpl& s, const runtime::View& out, const runtime::RandomParams& p) override {
    q(s).enqueue("philox", "random", [out, p] { kernels::random(out, p); });
  }
  void matmul(runtime::StreamImpl& s, const runtime::View& out, const runtime::View& a,
              const runtime::View& b) override {
    blas::require();  // no BLAS is the caller's error, not the queued work's
    q(s).enqueue("mm", "kernel", [out, a, b] { kernels::matmul(out, a, b); });
  }
  std::shared_ptr<void> load_module(const runtime::ModuleObject& object, std::vector<runtime::ModuleKernel>& kernels,
                                    const runtime::ModuleCheck& check) override {
    return cpu::load_module(object, kernels, check);
  }
  void launch(runtime::StreamImpl& s, runtime::KernelLaunch&& l) override {
    CpuStream& stream = q(s);
    stream.wait_for_room();  // first: an interrupted wait leaves nothing taken
    // A bare pointer keeps the closure within std::function's inline storage
    // (no allocation). The stream hands the launch back to a pool rather than
    // freeing it: memory malloc'ed on this thread and freed on the worker
    // contends for malloc's arena lock (a quarter of a launch's time).
    runtime::KernelLaunch* launch = launch_pool().take();
    *launch = std::move(l);  // the recycled buffers are freed here, where they were made
    // The name lives in the library the launch holds, which the pool lets go
    // of after the stream is done with the op.
    stream.push(launch->name, "shader", [launch] { kernels::run_jit_kernel(*launch); },
                [](void* p) { launch_pool().give(static_cast<runtime::KernelLaunch*>(p)); }, launch);
  }
  void copy_from_host(runtime::StreamImpl& s, void* dst, const void* src, std::size_t n,
                      std::shared_ptr<void> keep) override {
    q(s).enqueue("copy_h2d", "copy", [dst, src, n, keep] { std::memcpy(dst, src, n); });
  }
  void copy_to_host(runtime::StreamImpl& s, void* dst, const void* src, std::size_t n,
                    std::shared_ptr<void> keep) override {
    q(s).enqueue("copy_d2h", "copy", [dst, src, n, keep] { std::memcpy(dst, src, n); });
  }

 private:
  static CpuStream& q(runtime::StreamImpl& s) { return static_cast<CpuStream&>(s); }

  runtime::CachingAllocator allocator_;
  std::mutex mu_;  // guards default_
  std::shared_ptr<CpuStream> default_;
  runtime::StreamSet<CpuStream> streams_;
};

}  // namespace

void* map_segment(std::size_t bytes, bool one_block) {
  // [guard][the segment, page-aligned][guard]: reserved inaccessible, then
  // the segment opened. Address space is cheap and an inaccessible
  // reservation takes no memory, so the guards are wide: a kernel's threads
  // run in parallel, and one far past the end (a grid four times its buffer)
  // must land in this segment's guard, never in another mapping, before the
  // first past the end has stopped the launch.
  const std::size_t page = page_size(), body = (bytes + page - 1) / page * page;
  std::size_t guard = std::min(std::max(kMinGuard, 4 * body), kMaxGuard);
  auto reserve = [&] { return ::mmap(nullptr, body + 2 * guard, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0); };
  void* m = reserve();
  if (m == MAP_FAILED) {  // address space limited (ulimit -v): a page each side
    guard = page;
    m = reserve();
  }
  if (m == MAP_FAILED) return nullptr;
  char* p = static_cast<char*>(m) + guard;
  if (::mprotect(p, body, PROT_READ | PROT_WRITE) != 0) {
    ::munmap(m, body + 2 * guard);
    return nullptr;
  }
  Segments& s = segments();
  std::lock_guard<std::mutex> g(s.mu);
  s.map[reinterpret_cast<std::uintptr_t>(p)] = {body, guard, one_block};
  return p;
}

void unmap_segment(void* p) {
  Segments::Segment seg;
  {
    Segments& s = segments();
    std::lock_guard<std::mutex> g(s.mu);
    auto it = s.map.find(reinterpret_cast<std::uintptr_t>(p));
    if (it == s.map.end()) return;
    seg = it->second;
    s.map.erase(it);
  }
  ::munmap(static_cast<char*>(p) - seg.guard, seg.bytes + 2 * seg.guard);
}

std::optional<SegmentFault> segment_guard(std::uintptr_t address) {
  Segments& s = segments();
  std::lock_guard<std::mutex> g(s.mu);
  auto it = s.map.upper_bound(address);  // the first segment above
  if (it != s.map.end() && address >= it->first - it->second.guard)
    return SegmentFault{it->first, it->second.bytes, it->second.one_block, false};
  if (it == s.map.begin()) return std::nullopt;
  --it;
  if (address >= it->first + it->second.bytes && address < it->first + it->second.bytes + it->second.guard)
    return SegmentFault{it->first, it->second.bytes, it->second.one_block, true};
  return std::nullopt;
}

std::unique_ptr<runtime::DeviceImpl> make_device() { return std::make_unique<CpuDevice>(); }

}  // namespace bronze::cpu
