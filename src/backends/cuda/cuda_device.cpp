#include "backends/cuda/cuda_device.hpp"

#include <cstring>
#include <mutex>
#include <vector>

#include "backends/cuda/cublas.hpp"
#include "backends/cuda/cuda_kernels.hpp"
#include "backends/cuda/driver_api.hpp"
#include "backends/cuda/op_timer.hpp"
#include "bronze/error.hpp"
#include "runtime/dtype_dispatch.hpp"
#include "runtime/host_memory.hpp"
#include "runtime/launch_abi.h"
#include "runtime/philox.hpp"
#include "runtime/stream_set.hpp"

namespace bronze::cuda {
namespace {

// Every driver call runs with the device's primary context current.
class Context {
 public:
  explicit Context(int index) {
    const Driver* d = driver();
    check(d->cuDeviceGet(&dev_, index), "cuDeviceGet");
    check(d->cuDevicePrimaryCtxRetain(&ctx_, dev_), "cuDevicePrimaryCtxRetain");
  }
  void make_current() const { check(driver()->cuCtxSetCurrent(ctx_), "cuCtxSetCurrent"); }
  CUdevice device() const { return dev_; }

 private:
  CUdevice dev_ = 0;
  CUcontext ctx_ = nullptr;
};

class CudaStream final : public runtime::StreamImpl {
 public:
  CudaStream(const Context& ctx, Device d) : ctx_(ctx), device_(d), id_(runtime::next_stream_id()) {
    ctx_.make_current();
    check(driver()->cuStreamCreate(&s_, 0), "cuStreamCreate");
  }
  // Another library's stream (PyTorch's current one): used, never destroyed.
  CudaStream(const Context& ctx, Device d, CUstream external)
      : ctx_(ctx), device_(d), id_(runtime::next_stream_id()), s_(external), owned_(false) {}
  ~CudaStream() override {
    if (!owned_) return;
    ctx_.make_current();
    driver()->cuStreamSynchronize(s_);
    driver()->cuStreamDestroy(s_);
  }
  Device device() const override { return device_; }
  std::uint64_t id() const override { return id_; }
  void synchronize() override {
    ctx_.make_current();
    // Asynchronous failures (a faulting kernel) surface here, naming the
    // stream's last kernel (the likely culprit: the error is sticky).
    CUresult rc = driver()->cuStreamSynchronize(s_);
    if (rc == CUDA_SUCCESS) return check_error_record();
    std::string what = "queued work on " + device_.str() + " stream " + std::to_string(id_);
    {
      std::lock_guard<std::mutex> g(mu_);
      if (!last_kernel_.empty()) what += " (last kernel launched there: '" + last_kernel_ + "')";
    }
    check(rc, what.c_str());
  }
  void note_kernel(const char* name) {
    std::lock_guard<std::mutex> g(mu_);
    last_kernel_.assign(name);
  }
  void wait() override {  // a failure is sticky on CUDA: the next synchronize() reports it
    ctx_.make_current();
    (void)driver()->cuStreamSynchronize(s_);
  }
  bool query() override {
    ctx_.make_current();
    // Work that failed has finished too: its error surfaces at synchronize.
    return driver()->cuStreamQuery(s_) != CUDA_ERROR_NOT_READY;
  }
  CUstream handle() const { return s_; }

 private:
  const Context& ctx_;
  Device device_;
  std::uint64_t id_;
  CUstream s_ = nullptr;
  bool owned_ = true;
  std::mutex mu_;  // guards last_kernel_
  std::string last_kernel_;
};

CudaStream& cs(runtime::StreamImpl& s) { return static_cast<CudaStream&>(s); }

class CudaEvent final : public runtime::EventImpl {
 public:
  CudaEvent(const Context& ctx, bool timing) : ctx_(ctx), timing_(timing) {
    ctx_.make_current();
    check(driver()->cuEventCreate(&e_, timing ? CU_EVENT_DEFAULT : CU_EVENT_DISABLE_TIMING), "cuEventCreate");
  }
  ~CudaEvent() override {
    ctx_.make_current();
    driver()->cuEventDestroy(e_);
  }
  void record(runtime::StreamImpl& s) override {
    ctx_.make_current();
    check(driver()->cuEventRecord(e_, cs(s).handle()), "cuEventRecord");
    recorded_ = true;
  }
  void wait(runtime::StreamImpl& s) override {
    ctx_.make_current();
    check(driver()->cuStreamWaitEvent(cs(s).handle(), e_, 0), "cuStreamWaitEvent");
  }
  bool query() override {
    ctx_.make_current();
    return driver()->cuEventQuery(e_) != CUDA_ERROR_NOT_READY;
  }
  void synchronize() override {
    ctx_.make_current();
    check(driver()->cuEventSynchronize(e_), "cuEventSynchronize");
  }
  double elapsed_ms(runtime::EventImpl& end_base) override {
    auto* end = dynamic_cast<CudaEvent*>(&end_base);
    if (!end) throw Error("elapsed_time: events belong to different backends");
    if (!timing_ || !end->timing_) throw Error("elapsed_time needs both events created with enable_timing=True");
    synchronize();
    end->synchronize();
    float ms = 0;
    check(driver()->cuEventElapsedTime(&ms, e_, end->e_), "cuEventElapsedTime");
    if (ms < 0) throw Error("elapsed_time: the end event completed before the start event");
    return ms;
  }
  bool recorded() const override { return recorded_; }

 private:
  const Context& ctx_;
  bool timing_;
  bool recorded_ = false;
  CUevent e_ = nullptr;
};

CUdeviceptr dptr(const void* p) { return reinterpret_cast<CUdeviceptr>(p); }

class CudaDevice final : public runtime::DeviceImpl {
 public:
  explicit CudaDevice(int index)
      : index_(index), ctx_(index),
        allocator_("cuda:" + std::to_string(index), total_memory(),
                   runtime::AllocatorHooks{
                       [this](std::size_t n, bool) -> void* {
                         ctx_.make_current();
                         CUdeviceptr p = 0;
                         return driver()->cuMemAlloc(&p, n) == CUDA_SUCCESS ? reinterpret_cast<void*>(p) : nullptr;
                       },
                       [this](void* p) {
                         ctx_.make_current();
                         driver()->cuMemFree(dptr(p));
                       },
                       [this] { wait_all(); },
                       [this](runtime::StreamImpl& s) { return marker(s); }}),
        // Pinned and mapped into every context; with unified addressing the
        // device address is the host address, so kernels take it as is.
        host_allocator_("cuda:" + std::to_string(index) + " host-visible", runtime::host_memory_limit(),
                        runtime::AllocatorHooks{
                            [this](std::size_t n, bool) -> void* {
                              ctx_.make_current();
                              void* p = nullptr;
                              if (driver()->cuMemHostAlloc(&p, n, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP) !=
                                  CUDA_SUCCESS)
                                return nullptr;
                              CUdeviceptr dp = 0;
                              if (driver()->cuMemHostGetDevicePointer(&dp, p, 0) != CUDA_SUCCESS || dp != dptr(p)) {
                                driver()->cuMemFreeHost(p);
                                throw NotSupportedError("host-visible memory needs unified addressing on this device");
                              }
                              return p;
                            },
                            [this](void* p) {
                              ctx_.make_current();
                              driver()->cuMemFreeHost(p);
                            },
                            [this] { wait_all(); },
                            [this](runtime::StreamImpl& s) { return marker(s); }}) {}

  Device device() const override { return Device(DeviceType::CUDA, index_); }

  DeviceProperties properties() override {
    const Driver* d = driver();
    DeviceProperties p;
    char name[256] = {};
    check(d->cuDeviceGetName(name, sizeof name, ctx_.device()), "cuDeviceGetName");
    p.name = name;
    p.device = device();
    p.total_memory = total_memory();
    p.recommended_max_memory = allocator_.recommended_max();
    d->cuDeviceGetAttribute(&p.multiprocessor_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, ctx_.device());
    d->cuDeviceGetAttribute(&p.max_threads_per_threadgroup, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, ctx_.device());
    d->cuDeviceGetAttribute(&p.simd_width, CU_DEVICE_ATTRIBUTE_WARP_SIZE, ctx_.device());
    p.host_visible = false;
    return p;
  }

  runtime::CachingAllocator& allocator() override { return allocator_; }
  runtime::CachingAllocator& host_visible_allocator() override { return host_allocator_; }

  std::shared_ptr<runtime::StreamImpl> default_stream() override {
    std::lock_guard<std::mutex> g(mu_);
    if (!default_) {
      default_ = std::make_shared<CudaStream>(ctx_, device());
      streams_.add(default_);
    }
    return default_;
  }

  std::shared_ptr<runtime::StreamImpl> create_stream() override {
    auto s = std::make_shared<CudaStream>(ctx_, device());
    streams_.add(s);
    return s;
  }

  std::shared_ptr<runtime::StreamImpl> external_stream(std::uintptr_t handle) override {
    auto s = std::make_shared<CudaStream>(ctx_, device(), reinterpret_cast<CUstream>(handle));
    streams_.add(s);  // device synchronize() waits for bronze's work on it too
    return s;
  }

  void synchronize() override { streams_.synchronize_all(); }
  void wait_all() override { streams_.wait_all(); }
  bool query() override { return streams_.query_all(); }

  std::unique_ptr<runtime::EventImpl> create_event(bool timing) override {
    return std::make_unique<CudaEvent>(ctx_, timing);
  }

  void fill(runtime::StreamImpl& s, const runtime::View& dst, Scalar v) override {
    ctx_.make_current();
    OpTimer timer(timeline_, cs(s).handle(), s.id(), "fill", "fill");
    const std::size_t n = static_cast<std::size_t>(dst.numel()), es = element_size(dst.dtype);
    std::uint8_t bytes[8] = {};
    runtime::dispatch(dst.dtype, [&](auto tag) {
      using T = decltype(tag);
      T value = std::is_integral_v<T> && !std::is_same_v<T, bool> ? static_cast<T>(v.to_int())
                                                                  : runtime::convert<T>(v.to_double());
      std::memcpy(bytes, &value, sizeof(T));
    });
    CUstream st = cs(s).handle();
    if (!dst.contiguous()) return fill_kernel(st, dst, bytes);
    if (es == 1) return check(driver()->cuMemsetD8Async(dptr(dst.data), bytes[0], n, st), "cuMemsetD8Async");
    if (es == 2) {
      std::uint16_t w;
      std::memcpy(&w, bytes, 2);
      return check(driver()->cuMemsetD16Async(dptr(dst.data), w, n, st), "cuMemsetD16Async");
    }
    std::uint32_t lo, hi;
    std::memcpy(&lo, bytes, 4);
    std::memcpy(&hi, bytes + 4, 4);
    if (es == 4 || lo == hi) return check(driver()->cuMemsetD32Async(dptr(dst.data), lo, n * es / 4, st), "cuMemsetD32Async");
    fill_kernel(st, dst, bytes);  // 8-byte values with distinct halves (1.0 as float64)
  }

  void copy(runtime::StreamImpl& s, const runtime::View& dst, const runtime::View& src) override {
    ctx_.make_current();
    OpTimer timer(timeline_, cs(s).handle(), s.id(), "copy", "copy");
    if (dst.dtype == src.dtype && dst.contiguous() && src.contiguous() && dst.numel() == src.numel() &&
        src.strides == runtime::contiguous_strides(src.shape)) {
      check(driver()->cuMemcpyDtoDAsync(dptr(dst.data), dptr(src.data), dst.numel() * element_size(dst.dtype),
                                        cs(s).handle()),
            "cuMemcpyDtoDAsync");
      return;
    }
    Geometry g = geometry({&dst, &src});
    void* d = dst.data;
    void* p = src.data;
    void* args[] = {&d, &p, &g};
    CUfunction f = kernels_.get(KernelCache::key(KernelCache::kCopy, unsigned(dst.dtype), unsigned(src.dtype)),
                                [&] { return copy_source(dst.dtype, src.dtype); });
    kernels_.launch_1d(f, g.n, cs(s).handle(), args);
  }
  void binary(runtime::StreamImpl& s, runtime::BinaryOp op, const runtime::View& out, const runtime::View& a,
              const runtime::View& b) override {
    elementwise(s, op, out, a, &b, 0.0, 0);
  }
  void binary_scalar(runtime::StreamImpl& s, runtime::BinaryOp op, const runtime::View& out, const runtime::View& a,
                     Scalar b) override {
    elementwise(s, op, out, a, nullptr, b.to_double(), b.to_int());
  }
  void arange(runtime::StreamImpl& s, const runtime::View& out, Scalar start, Scalar step) override {
    ctx_.make_current();
    OpTimer timer(timeline_, cs(s).handle(), s.id(), "arange", "fill");
    Geometry g = geometry({&out});
    void* o = out.data;
    const bool exact = start.is_integral() && step.is_integral() && !is_floating(out.dtype);
    double fa = start.to_double(), fby = step.to_double();
    std::int64_t ia = start.to_int(), iby = step.to_int();
    void* args[] = {&o, exact ? static_cast<void*>(&ia) : &fa, exact ? static_cast<void*>(&iby) : &fby, &g};
    CUfunction f = kernels_.get(KernelCache::key(KernelCache::kArange, unsigned(out.dtype), exact),
                                [&] { return arange_source(out.dtype, exact); });
    kernels_.launch_1d(f, g.n, cs(s).handle(), args);
  }
  void random(runtime::StreamImpl& s, const runtime::View& out, const runtime::RandomParams& p) override {
    ctx_.make_current();
    OpTimer timer(timeline_, cs(s).handle(), s.id(), "philox", "random");
    const bool wide = p.wide(out.dtype);
    Geometry g = geometry({&out});
    void* o = out.data;
    unsigned long long seed = p.philox.seed, base = p.philox.offset;
    double a = p.a, b = p.b, cap = p.cap;
    long long low = p.low, high = p.high;
    philox::RoundKeys keys = philox::round_keys(seed);
    void* args[] = {&o, &seed, &base, &a, &b, &cap, &low, &high, &g, &keys};
    // Exact floating point (no FMA contraction): the CPU's numbers, bit for bit.
    const bool standard = p.standard();
    CUfunction f = kernels_.get(KernelCache::key(KernelCache::kRandom, unsigned(out.dtype), unsigned(p.kind), wide, standard),
                                [&] { return random_source(out.dtype, p.kind, wide, standard); }, true);
    const long long per = p.per_block(out.dtype);
    // Four waves of resident blocks: blocks of the normal kernel end unevenly (their queues drain
    // last) and later waves fill the gaps (H200, 64M floats, 8 chains: 2480 GB/s in two waves,
    // 2524 in four, 2374 in eight).
    kernels_.launch_1d(f, (g.n + per - 1) / per, cs(s).handle(), args, 4 * kernels_.resident_blocks(f));
  }
  void matmul(runtime::StreamImpl& s, const runtime::View& out, const runtime::View& a,
              const runtime::View& b) override {
    ctx_.make_current();
    OpTimer timer(timeline_, cs(s).handle(), s.id(), "mm", "kernel");
    gemm(index_, cs(s).handle(), out, a, b);
  }
  void launch(runtime::StreamImpl& s, runtime::KernelLaunch&& l) override;
  int gpu_arch() const override { return kernels_.arch(); }
  std::shared_ptr<void> load_module(const runtime::ModuleObject& object, std::vector<runtime::ModuleKernel>& kernels,
                                    const runtime::ModuleCheck& check) override;

  void copy_from_host(runtime::StreamImpl& s, void* dst, const void* src, std::size_t n,
                      std::shared_ptr<void> keep) override {
    ctx_.make_current();
    OpTimer timer(timeline_, cs(s).handle(), s.id(), "copy_h2d", "copy");
    check(driver()->cuMemcpyHtoDAsync(dptr(dst), src, n, cs(s).handle()), "cuMemcpyHtoDAsync");
    // From pageable memory the driver has consumed `src` when the call
    // returns; pinned staging (truly asynchronous) comes with host_alias.
    (void)keep;
  }
  void copy_to_host(runtime::StreamImpl& s, void* dst, const void* src, std::size_t n,
                    std::shared_ptr<void> keep) override {
    ctx_.make_current();
    OpTimer timer(timeline_, cs(s).handle(), s.id(), "copy_d2h", "copy");
    check(driver()->cuMemcpyDtoHAsync(dst, dptr(src), n, cs(s).handle()), "cuMemcpyDtoHAsync");
    (void)keep;  // the caller synchronizes the stream before using `dst`
  }

 private:
  // dst's elements (any strides) = the element_size(dst.dtype) bytes of `value`.
  void fill_kernel(CUstream st, const runtime::View& dst, const std::uint8_t* value) {
    std::uint64_t pattern = 0;  // little-endian: the element in the low bytes
    const unsigned es = static_cast<unsigned>(element_size(dst.dtype));
    std::memcpy(&pattern, value, es);
    Geometry g = geometry({&dst});
    void* d = dst.data;
    void* args[] = {&d, &pattern, &g};
    CUfunction f = kernels_.get(KernelCache::key(KernelCache::kFill, es), [es] { return fill_source(es); });
    kernels_.launch_1d(f, g.n, st, args);
  }
  // out = a (op) b, or a (op) scalar when b is null; views already broadcast.
  void elementwise(runtime::StreamImpl& s, runtime::BinaryOp op, const runtime::View& out, const runtime::View& a,
                   const runtime::View* b, double yf, long long yi) {
    ctx_.make_current();
    OpTimer timer(timeline_, cs(s).handle(), s.id(), runtime::binary_op_name(op), "kernel");  // the CPU's names
    Geometry g = b ? geometry({&out, &a, b}) : geometry({&out, &a});
    void* o = out.data;
    void* x = a.data;
    void* y = b ? b->data : nullptr;
    auto aligned = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; };
    const bool vec = g.nd == 1 && aligned(o) && aligned(x) && (!b || aligned(y));
    void* args[] = {&o, &x, &y, &yf, &yi, &g};
    const std::int64_t per_thread = vec ? 16 / static_cast<std::int64_t>(element_size(out.dtype)) : 1;
    const bool scalar = b == nullptr;
    CUfunction f = kernels_.get(KernelCache::key(KernelCache::kBinary, unsigned(out.dtype), unsigned(op), scalar, vec),
                                [&] { return binary_source(out.dtype, op, scalar, vec); });
    kernels_.launch_1d(f, (g.n + per_thread - 1) / per_thread, cs(s).handle(), args);
  }

  static int multiprocessors_of(const Context& ctx) {
    int sms = 0;
    driver()->cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, ctx.device());
    return sms;
  }

  std::unique_ptr<runtime::EventImpl> marker(runtime::StreamImpl& s) {
    auto e = std::make_unique<CudaEvent>(ctx_, false);
    e->record(s);
    return e;
  }

  static int arch_of(const Context& ctx) {
    int major = 0, minor = 0;
    driver()->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, ctx.device());
    driver()->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, ctx.device());
    return major * 10 + minor;
  }

  std::size_t total_memory() const {
    std::size_t bytes = 0;
    check(driver()->cuDeviceTotalMem(&bytes, ctx_.device()), "cuDeviceTotalMem");
    return bytes;
  }

  int index_;
  Context ctx_;
  runtime::CachingAllocator allocator_;
  runtime::CachingAllocator host_allocator_;
  KernelCache kernels_{arch_of(ctx_), multiprocessors_of(ctx_)};
  Timeline timeline_{"cuda:" + std::to_string(index_), [this] { ctx_.make_current(); }};
  std::mutex mu_;  // guards default_
  std::shared_ptr<CudaStream> default_;
  runtime::StreamSet<CudaStream> streams_;
};

void CudaDevice::launch(runtime::StreamImpl& s, runtime::KernelLaunch&& l) {
  ctx_.make_current();
  CudaStream& stream = cs(s);
  OpTimer timer(timeline_, stream.handle(), s.id(), l.name, "shader");
  auto f = static_cast<CUfunction>(const_cast<void*>(l.entry));
  const std::size_t n = l.args.size();
  // Inline bytes behind pointer parameters (constant arrays, lists) are
  // staged in device memory; the block is freed right after the launch,
  // which the allocator hands out again only to later work on this stream.
  runtime::Block* staged = nullptr;
  for (const auto& a : l.args)
    if (a.inline_offset != SIZE_MAX && !a.by_value) {
      staged = allocator_.allocate(l.inline_bytes.size(), s);
      check(driver()->cuMemcpyHtoDAsync(dptr(runtime::CachingAllocator::block_ptr(staged)), l.inline_bytes.data(),
                                        l.inline_bytes.size(), stream.handle()),
            "cuMemcpyHtoDAsync");
      break;
    }
  std::uint8_t* stage = staged ? static_cast<std::uint8_t*>(runtime::CachingAllocator::block_ptr(staged)) : nullptr;
  bronze_gpu_launch rec{};
  std::size_t dynamic_smem = l.carved_shared_bytes;  // the kernel's own arrays first
  for (int k = 0; k < 8; ++k) {
    rec.tg_offset[k] = static_cast<std::uint32_t>(dynamic_smem);
    dynamic_smem += (l.threadgroup_bytes[k] + 15) & ~std::uint64_t(15);
  }
  std::memcpy(rec.grid, l.grid, sizeof rec.grid);
  void* small_ptrs[16];
  void* small_params[17];
  std::vector<void*> big_ptrs, big_params;
  void** ptrs = small_ptrs;
  void** params = small_params;
  if (n > 16) {
    big_ptrs.resize(n);
    big_params.resize(n + 1);
    ptrs = big_ptrs.data();
    params = big_params.data();
  }
  std::size_t np = 0;
  if (l.launch_record) params[np++] = &rec;
  for (std::size_t i = 0; i < n; ++i) {
    const auto& a = l.args[i];
    if (a.inline_offset == SIZE_MAX) {
      ptrs[i] = a.ptr;
      params[np++] = &ptrs[i];
    } else if (a.by_value) {
      params[np++] = l.inline_bytes.data() + a.inline_offset;
    } else {
      ptrs[i] = stage + a.inline_offset;
      params[np++] = &ptrs[i];
    }
  }
  unsigned blocks[3];
  for (int d = 0; d < 3; ++d) blocks[d] = l.groups(d);
  if (blocks[0] > 0x7fffffffu || blocks[1] > 65535 || blocks[2] > 65535) {
    if (staged) allocator_.free(staged);
    throw ValueError("kernel '" + std::string(l.name) + "': " + std::to_string(blocks[0]) + " x " +
                     std::to_string(blocks[1]) + " x " + std::to_string(blocks[2]) +
                     " threadgroups is over CUDA's grid limits (2^31-1 x 65535 x 65535)");
  }
  if (dynamic_smem > 48 * 1024)  // above 48 KiB, CUDA wants an opt-in per function
    driver()->cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, static_cast<int>(dynamic_smem));
  CUresult rc = driver()->cuLaunchKernel(f, blocks[0], blocks[1], blocks[2], l.group[0], l.group[1], l.group[2],
                                         static_cast<unsigned>(dynamic_smem), stream.handle(), params, nullptr);
  if (staged) allocator_.free(staged);
  check(rc, ("cuLaunchKernel of '" + std::string(l.name) + "'").c_str());
  stream.note_kernel(l.name);
}

std::shared_ptr<void> CudaDevice::load_module(const runtime::ModuleObject& object,
                                              std::vector<runtime::ModuleKernel>& kernels,
                                              const runtime::ModuleCheck& check_kernels) {
  ctx_.make_current();
  const Driver* d = driver();
  CUmodule m = nullptr;
  std::vector<char> image = object.image;
  if (image.empty() || image.back() != '\0') image.push_back('\0');  // PTX is read as a C string
  check(d->cuModuleLoadData(&m, image.data()), "cuModuleLoadData");  // stays loaded for the process
  for (auto& k : kernels) {
    CUfunction f = nullptr;
    if (d->cuModuleGetFunction(&f, m, k.symbol.c_str()) != CUDA_SUCCESS)
      throw KernelNotFoundError("the CUDA module has no kernel '" + k.symbol + "'");
    k.entry = f;
    int v = 0;
    check(d->cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f), "cuFuncGetAttribute");
    k.max_threads = v;
    check(d->cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f), "cuFuncGetAttribute");
    k.static_shared_bytes = static_cast<std::size_t>(v);
    if (d->cuFuncGetParamInfo) {
      std::size_t offset = 0, size = 0;
      for (std::size_t i = 0; d->cuFuncGetParamInfo(f, i, &offset, &size) == CUDA_SUCCESS; ++i)
        k.param_sizes.push_back(size);
    }
    CUdeviceptr carved = 0;
    std::size_t carved_size = 0;
    if (!k.tgmem_symbol.empty() && d->cuModuleGetGlobal(&carved, &carved_size, m, k.tgmem_symbol.c_str()) == CUDA_SUCCESS) {
      std::uint64_t bytes = 0;
      check(d->cuMemcpyDtoH(&bytes, carved, sizeof bytes), "cuMemcpyDtoH");
      k.carved_shared_bytes = static_cast<std::size_t>(bytes);
      k.static_shared_bytes += k.carved_shared_bytes;
    }
    if (!k.table_symbol.empty()) {
      CUdeviceptr p = 0;
      std::size_t bytes = 0;
      check(d->cuModuleGetGlobal(&p, &bytes, m, k.table_symbol.c_str()), "cuModuleGetGlobal");
      k.table.resize(k.table_words);
      if (bytes < k.table_words * sizeof(std::uint64_t)) throw Error("bronze's layout table is short in the module");
      check(d->cuMemcpyDtoH(k.table.data(), p, k.table_words * sizeof(std::uint64_t)), "cuMemcpyDtoH");
    }
  }
  if (check_kernels) check_kernels(kernels);  // loading ran none of the module's code
  return nullptr;
}

}  // namespace

std::unique_ptr<runtime::DeviceImpl> make_device(int index) { return std::make_unique<CudaDevice>(index); }

}  // namespace bronze::cuda
