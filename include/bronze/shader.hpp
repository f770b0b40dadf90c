// Metal compute shaders compiled at run time, called like functions.
//
//   auto lib = bronze::compile_shader(R"(
//     kernel void full(device float* out, constant float& val,
//                      uint idx [[thread_position_in_grid]]) { out[idx] = val; })");
//   auto t = bronze::empty({16});
//   lib.kernel("full").dispatch({t, 3.14f});
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "bronze/device.hpp"
#include "bronze/stream.hpp"
#include "bronze/tensor.hpp"

namespace bronze {

enum class ParamKind { Buffer, Scalar, Attribute, ThreadgroupBuffer };

// Reflection of one kernel parameter.
struct KernelParam {
  std::string name;
  ParamKind kind = ParamKind::Buffer;
  std::string type;        // element type (buffers) or value type, as written: "float", "float4", "Params"
  bool read_only = false;  // constant address space or const-qualified
  int binding = -1;        // position among the call's arguments (buffers and scalars)
  int index = -1;          // [[buffer(n)]] / [[threadgroup(n)]] slot
  std::string attribute;   // thread-position attribute name, for ParamKind::Attribute
  std::size_t size = 0;    // sizeof(type) in bytes, as the compiler laid it out
  bool by_value = false;   // the kernel takes a copy of the bytes (constant T&, T), not a pointer
  int line = 0;
};

struct KernelInfo {
  std::string name;  // the host name
  std::vector<KernelParam> params;
  bool cooperative = false;  // uses barriers or simdgroup functions
  int line = 0;
  std::vector<int> bound;    // params index of each call argument, in binding order
  int bindings() const { return static_cast<int>(bound.size()); }
  const KernelParam& binding(int i) const { return params[bound[i]]; }
  // Throws TypeError unless a call passes exactly bindings() arguments.
  void check_arity(std::size_t n) const;
};

// One argument of a dispatch: a tensor for buffers, a number or raw bytes
// (a struct, a vector, an array) for scalars. A tensor argument refers to the
// caller's tensor, which must live until dispatch() returns (the queued
// launch then holds its memory), so no tensor is copied per call.
class KernelArg {
 public:
  KernelArg(const Tensor& t) : v_(&t) {}  // NOLINT: implicit, as in dispatch({t, 1.0f})
  KernelArg(Tensor&&) = delete;           // a temporary would dangle
  KernelArg(Scalar s) : v_(s) {}          // NOLINT
  KernelArg(std::vector<std::uint8_t> bytes) : v_(std::move(bytes)) {}  // NOLINT
  // An argument buffer: a parameter that is a struct of device pointers (or
  // a metal::array of them) gets these tensors' addresses, in order.
  KernelArg(const std::vector<Tensor>& tensors) : v_(&tensors) {}  // NOLINT
  KernelArg(std::vector<Tensor>&&) = delete;                        // a temporary would dangle
  const Tensor* tensor() const { auto* p = std::get_if<const Tensor*>(&v_); return p ? *p : nullptr; }
  const Scalar* scalar() const { return std::get_if<Scalar>(&v_); }
  const std::vector<std::uint8_t>* bytes() const { return std::get_if<std::vector<std::uint8_t>>(&v_); }
  const std::vector<Tensor>* tensors() const {
    auto* p = std::get_if<const std::vector<Tensor>*>(&v_);
    return p ? *p : nullptr;
  }

 private:
  std::variant<const Tensor*, Scalar, std::vector<std::uint8_t>, const std::vector<Tensor>*> v_;
};

struct Dim3 {
  std::uint32_t x = 1, y = 1, z = 1;
  std::uint64_t count() const { return static_cast<std::uint64_t>(x) * y * z; }
};

struct DispatchOptions {
  std::optional<Dim3> threads;     // default: numel of the first tensor argument
  std::optional<Dim3> group_size;  // default: chosen from the kernel's limits
  std::vector<std::uint64_t> threadgroup_memory;  // bytes of each [[threadgroup(n)]] buffer
  std::optional<Stream> stream;    // default: the current stream of the device
  // torch.mps's error_buf_idx: the [[buffer(n)]] slot of a `device
  // c10::metal::ErrorMessages*` parameter. The stream's error buffer is bound
  // there (the call's arguments take the other bindings, in order), and the
  // first message a kernel reports into it with TORCH_REPORT_ERROR is raised
  // as DeviceError at the stream's next synchronize.
  std::optional<unsigned> error_buf_idx;
};

// The binding that error_buf_idx `slot` names in ki: ValueError unless it is
// the slot of a writable device buffer parameter.
int error_buffer_binding(const KernelInfo& ki, unsigned slot);

namespace detail {
struct LibraryImpl;
}

class Kernel {
 public:
  // A library's kernels are built on first use: a call, info() or a
  // property below (compile_shader checks a big unit whole and builds none
  // of its kernels). warmup() builds this one now; it throws
  // ShaderCompileError where the build fails, as the first use would.
  void warmup() const;
  bool is_built() const;
  const KernelInfo& info() const;
  const std::string& name() const;  // known without a build
  int max_threads_per_threadgroup() const;
  int thread_execution_width() const;
  std::size_t static_thread_group_memory_length() const;
  // Checks every argument and queues the grid; throws TypeError/ValueError
  // before anything runs when an argument does not fit.
  void dispatch(const std::vector<KernelArg>& args, const DispatchOptions& opts = {}) const;

  Kernel(std::shared_ptr<detail::LibraryImpl> lib, int index) : lib_(std::move(lib)), index_(index) {}

 private:
  void mismatched_dtype(const KernelParam& p, std::size_t binding, DType t) const;
  std::shared_ptr<detail::LibraryImpl> lib_;
  int index_;
};

struct CompileOptions {
  std::string language = "metal";  // "metal" (or "cuda" on the CUDA backend)
  std::optional<Device> device;    // default: the current device
  std::string filename = "shader.metal";  // names the source in errors; its folder is searched for "x.h"
  // Metal source runs through a C preprocessor first (the host compiler's):
  // `#include "x.h"` looks beside the including file, then in `headers`
  // (name -> text), then in include_dirs; <c10/metal/...> resolves in
  // torch_include_dir (an installed torch's include folder; Python fills
  // it in when torch is importable). Every included file's content is part
  // of the compile cache's key.
  std::vector<std::string> include_dirs;
  std::vector<std::pair<std::string, std::string>> headers;
  std::vector<std::pair<std::string, std::string>> defines;  // as MTLCompileOptions.preprocessorMacros
  std::string torch_include_dir;
  // Function constant values by name or index ("has_mask" or "3") as C++
  // expressions ("true", "4", "0.5f"), as MTLFunctionConstantValues gives
  // them; an undefined constant is zero and is_function_constant_defined is
  // false for it, and a parameter guarded by a false constant takes no
  // argument.
  std::vector<std::pair<std::string, std::string>> constants;
  // As MTLCompileOptions.mathMode, whose default is fast: "fast" (fast::
  // functions, approximate division and square root, reassociation),
  // "relaxed" (the same without reassociation) or "safe" (IEEE: precise::
  // functions). precise:: and fast:: stay what they say in every mode, and
  // infinities and NaNs are honoured in every mode on both backends.
  std::string math_mode = "fast";
  // Bounds-check every buffer access; an access out of range fails the
  // launch (DeviceError at the next synchronize, naming kernel, parameter
  // and index) instead of touching memory. Slower: for debugging.
  bool validate = false;
  // compile_library: also embed cubins for these GPU architectures (90 for
  // sm_90) and PTX for the oldest of them; needs NVRTC, not a GPU.
  std::vector<int> cuda_archs;
};

class Library {
 public:
  std::vector<std::string> kernel_names() const;
  bool has_kernel(const std::string& name) const;
  // Throws KernelNotFoundError listing the kernels when there is none so named.
  Kernel kernel(const std::string& name) const;
  // The kernel built with these function constant values (name or index ->
  // C++ expression, as CompileOptions::constants), over the library's own:
  // MTLLibrary's newFunctionWithName:constantValues:. Each kernel and set is
  // built once per library, from the unit the library carries, and only that
  // kernel is built.
  Kernel specialize(const std::string& name, const std::vector<std::pair<std::string, std::string>>& constants) const;
  // Builds every kernel not built yet, in parts over the machine's cores,
  // as compile_library does: ahead of time, what first uses would build.
  void warmup() const;
  const std::string& hash() const;  // content hash of the compiled library
  Device device() const;

  explicit Library(std::shared_ptr<detail::LibraryImpl> impl) : impl_(std::move(impl)) {}

 private:
  std::shared_ptr<detail::LibraryImpl> impl_;
};

// Throws ShaderCompileError with the user's line and column on a bad shader.
// A source of more than a few kernels is checked whole (the compiler's
// semantic analysis of every kernel and instantiation: every error a build
// would report is reported here) and each kernel is built when first used,
// alone, and cached on disk; Library::warmup builds them all ahead of time.
Library compile_shader(const std::string& source, const CompileOptions& options = {});

// The host names of the kernels a Metal source defines, found by the front
// end (preprocessor and parser) without building anything; throws
// ShaderCompileError where the front end cannot read the source.
std::vector<std::string> find_kernels(const std::string& source, const CompileOptions& options = {});

// Ahead-of-time compilation to bronze's library format (.bronzelib): the
// source plus the compiled object for this host.
std::vector<std::uint8_t> compile_library(const std::string& source, const CompileOptions& options = {});
// Loads a .bronzelib (an object for another host is rebuilt from the source
// it carries), or on a CUDA device a raw cubin, PTX or fatbin: its kernels'
// parameters from `signatures` (CUDA C++ declarations, e.g.
// "__global__ void saxpy(float* y, const float* x, float a);"), which PTX
// may leave out (read from its .entry lines). Throws ValueError on anything
// else, naming Apple .metallib files. A .bronzelib's objects are native code
// run in the process; `rebuild` ignores them and builds the source it
// carries instead (a raw module has none: ValueError).
Library load_metallib(const std::vector<std::uint8_t>& bytes, std::optional<Device> device = std::nullopt,
                      const std::string& signatures = {}, bool rebuild = false);
Library load_metallib_file(const std::string& path, std::optional<Device> device = std::nullopt,
                           const std::string& signatures = {}, bool rebuild = false);

// Seconds one kernel launch may run on the CPU backend before it is stopped
// and fails (DeviceError at the next synchronize), as Metal's GPU timeout
// stops a command buffer; the device goes on serving new work. 0 means no
// limit, the default unless $BRONZE_KERNEL_TIME_LIMIT says otherwise. A CUDA
// kernel cannot be stopped without losing its context: the limit does not
// apply there.
void set_kernel_time_limit(double seconds);
double kernel_time_limit();

}  // namespace bronze
