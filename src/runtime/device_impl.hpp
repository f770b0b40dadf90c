// One device of one backend: its allocator, generator, streams, events and
// the handful of tensor kernels the tensor layer needs.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bronze/device.hpp"
#include "bronze/scalar.hpp"
#include "runtime/allocator.hpp"
#include "runtime/generator.hpp"
#include "runtime/shader_module.hpp"
#include "runtime/stream_impl.hpp"
#include "runtime/view.hpp"

namespace bronze::runtime {

enum class BinaryOp { Add, Sub, Mul, Div, RSub, RDiv };
const char* binary_op_name(BinaryOp op);

enum class RandomKind { Uniform, Normal, Int };
struct RandomParams {
  RandomKind kind = RandomKind::Uniform;
  double a = 0.0, b = 1.0;       // uniform [a, b) / normal (mean a, std b)
  double cap = 1.0;              // uniform: the largest value of the dtype below b; values above it become it
  std::int64_t low = 0, high = 0;  // integers in [low, high)
  PhiloxState philox;
  // Each element takes 64 bits of its Philox block (two a block) for float64
  // and for integer ranges over 2^32, else 32 (four a block): the mapping
  // every backend follows (philox.hpp).
  bool wide(DType t) const {
    return t == DType::Float64 ||
           (kind == RandomKind::Int && static_cast<std::uint64_t>(high - low) > 0xffffffffull);
  }
  unsigned per_block(DType t) const { return wide(t) ? 2 : 4; }
  // Normals of mean 0 and std 1 are z itself, not 0 + 1 * z, on every
  // backend: a multiply and an add less per element, and -0 stays -0.
  // Uniforms on [0, 1) are u itself, which 0 + u * (1 - 0) equals exactly:
  // the same numbers without the double arithmetic.
  bool standard() const { return kind != RandomKind::Int && a == 0.0 && b == 1.0; }
};

// A compiled kernel's launch, filled by the shader layer. Buffers point at
// device memory; scalars are bytes in `inline_bytes`, referenced by offset.
struct KernelLaunch {
  const char* name = "";        // owned by the library in `keepalive`
  const void* entry = nullptr;  // the backend's compiled function
  bool cooperative = false;     // threads of a group must run together
  // GPU: the entry takes bronze's launch record (grid size, threadgroup
  // buffer offsets) first, as Metal entries do; CUDA C++ kernels do not.
  bool launch_record = true;
  bool validate = false;  // a validate=True build (CPU): buffers are fenced too
  struct Arg {
    const char* name = "";  // the parameter's, owned by the library
    void* ptr = nullptr;
    std::size_t inline_offset = SIZE_MAX;  // set: the argument is inline bytes
    std::size_t bytes = 0;                 // its size (bounds checks)
    bool by_value = false;  // GPU: inline bytes passed as the parameter itself, not a pointer to them
  };
  std::vector<Arg> args;
  std::vector<std::uint8_t> inline_bytes;
  // Appends n bytes (zeros where data is null) to inline_bytes, 16-byte
  // aligned for vectors and structs; returns their offset.
  std::size_t add_inline(const void* data, std::size_t n) {
    const std::size_t off = (inline_bytes.size() + 15) & ~std::size_t(15);
    inline_bytes.resize(off + n);
    if (data && n) std::memcpy(inline_bytes.data() + off, data, n);
    return off;
  }
  std::uint32_t grid[3] = {1, 1, 1};
  std::uint32_t group[3] = {1, 1, 1};
  // Threadgroups along d, the last one partial (in 64 bits: a grid near
  // 2^32 would wrap to none).
  std::uint32_t groups(int d) const {
    return static_cast<std::uint32_t>((static_cast<std::uint64_t>(grid[d]) + group[d] - 1) / group[d]);
  }
  std::uint64_t threadgroup_bytes[8] = {};
  std::size_t carved_shared_bytes = 0;  // CUDA: the kernel's arrays in dynamic shared memory, before the buffers
  std::vector<std::shared_ptr<void>> keepalive;  // buffers and the library
};

class DeviceImpl {
 public:
  virtual ~DeviceImpl() = default;
  virtual Device device() const = 0;
  virtual DeviceProperties properties() = 0;
  virtual CachingAllocator& allocator() = 0;
  // Memory the host reads and writes directly and kernels use in place: on
  // CUDA pinned, mapped host memory (its own pool); on the CPU allocator().
  virtual CachingAllocator& host_visible_allocator() = 0;
  // Returns what the backend keeps for running kernels and does not use now
  // (the CPU's kernel threads' stacks and buffers); empty_cache() calls it.
  virtual void release_idle_memory() {}
  // Every allocation of this device is host-visible (one pool: the CPU).
  bool memory_is_host_visible() { return &host_visible_allocator() == &allocator(); }
  Generator& generator() { return generator_; }

  virtual std::shared_ptr<StreamImpl> default_stream() = 0;
  virtual std::shared_ptr<StreamImpl> create_stream() = 0;
  // A stream another library created (a CUstream on CUDA), which bronze
  // queues work on and never destroys; the handle must stay valid while the
  // returned stream lives.
  virtual std::shared_ptr<StreamImpl> external_stream(std::uintptr_t handle) {
    (void)handle;
    throw NotSupportedError(device().str() + " has no external streams (they are CUDA streams)");
  }
  // Waits for every stream of the device.
  virtual void synchronize() = 0;
  // Every stream's work finished, failures left to each stream's
  // synchronize() (StreamImpl::wait).
  virtual void wait_all() = 0;
  virtual bool query() = 0;  // every stream's work finished
  virtual std::unique_ptr<EventImpl> create_event(bool timing) = 0;

  // Tensor kernels, queued on `s`. Views are on this device; the tensor layer
  // has checked shapes and converted operands to the output dtype.
  virtual void fill(StreamImpl& s, const View& dst, Scalar v) = 0;
  virtual void copy(StreamImpl& s, const View& dst, const View& src) = 0;
  virtual void binary(StreamImpl& s, BinaryOp op, const View& out, const View& a,
                      const View& b) = 0;
  virtual void binary_scalar(StreamImpl& s, BinaryOp op, const View& out, const View& a,
                             Scalar b) = 0;
  // out[i] = start + i * step: in int64 when both are integers and out's
  // dtype is (the tensor layer checked the range), else in double.
  virtual void arange(StreamImpl& s, const View& out, Scalar start, Scalar step) = 0;
  virtual void random(StreamImpl& s, const View& out, const RandomParams& p) = 0;
  // out (m x n) = a (m x k) @ b (k x n), all of one floating dtype.
  virtual void matmul(StreamImpl& s, const View& out, const View& a, const View& b) = 0;
  virtual void launch(StreamImpl& s, KernelLaunch&& l) = 0;
  // GPU backends: sm_XY as XY (0 on the CPU).
  virtual int gpu_arch() const { return 0; }
  // Loads a module the device's backend built (shader_module.hpp), or on a
  // GPU a cubin, PTX or fatbin, after `check` (if any) accepted its kernels.
  // The module stays loaded while a copy of the handle returned lives (a
  // library holds it; a queued launch holds its library); a null handle: it
  // stays loaded for the process (CUDA).
  virtual std::shared_ptr<void> load_module(const ModuleObject& object, std::vector<ModuleKernel>& kernels,
                                            const ModuleCheck& check) = 0;
  // Host <-> device transfers of contiguous bytes, queued on `s`.
  virtual void copy_from_host(StreamImpl& s, void* dst, const void* src, std::size_t n,
                              std::shared_ptr<void> keepalive) = 0;
  virtual void copy_to_host(StreamImpl& s, void* dst, const void* src, std::size_t n,
                            std::shared_ptr<void> keepalive) = 0;

 private:
  Generator generator_;
};

// The device objects live for the whole process (never destroyed, so tensors
// freed during interpreter shutdown still find their allocator).
DeviceImpl& device_impl(const Device& d);
// Resolves "no device given" to the current device.
Device resolve(const std::optional<Device>& d);

// Seconds a CPU kernel launch may run before it is stopped; 0: no limit.
// Starts as $BRONZE_KERNEL_TIME_LIMIT (ValueError when that is not a number
// of seconds). The caller validates what it sets.
double kernel_time_limit();
void set_kernel_time_limit(double seconds);

// Current stream of a device for the calling thread.
std::shared_ptr<StreamImpl> current_stream(const Device& d);
void set_current_stream(const std::shared_ptr<StreamImpl>& s);
void set_current_device(const Device& d);

}  // namespace bronze::runtime
