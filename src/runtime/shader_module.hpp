// The door between the shader front end and the backends: a backend builds
// a module from a generated translation unit with its own toolchain (the
// host compiler on the CPU, NVRTC on CUDA) and loads it (dlopen,
// cuModuleLoadData). The front end knows no backend; a backend's module door
// knows no Metal (its code generator, backends/*/metal, does): what passes
// through it is code, headers and symbols.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "bronze/device.hpp"

namespace bronze::runtime {

// The stack a kernel's thread may take for its private arrays and locals:
// CUDA's limit on a thread's local memory, so a kernel that builds on the
// CPU fits on CUDA too.
constexpr std::size_t kMaxPrivateBytes = 512 * 1024;

enum class MathMode { Safe, Relaxed, Fast };

struct ModuleSource {
  std::string code;
  std::string filename = "bronze-shader.cu";  // as the compiler names the code (units name their files by #line)
  std::vector<std::pair<std::string, std::string>> headers;  // (name, text) beside the code
  // CUDA C++ kernels that are not extern "C": their names, lowered by NVRTC.
  std::vector<std::string> name_expressions;
  int gpu_arch = 0;   // CUDA: sm_XY as XY
  bool ptx = false;   // CUDA: PTX for compute_XY instead of a cubin
  // CPU: a checked build (validate=True): bounds and division by zero.
  bool validate = false;
  // Metal's math mode (module_source sets a unit's): the compiler's
  // floating-point options, and BRONZE_FAST_MATH (metal:: math is fast::)
  // unless Safe. CUDA C++ sources keep NVRTC's own defaults: Safe.
  MathMode math_mode = MathMode::Safe;
  // The compiler's semantic analysis alone, no object: a library's check
  // of its whole unit before each kernel is built on first use. A pass
  // is an ok ModuleObject without a path or image.
  bool check_only = false;
  // Built at the same time as other parts of its unit: a backend whose
  // compiler runs one build at a time per process (NVRTC) builds it in a
  // process of its own.
  bool one_of_many = false;
  // CPU: called with the compiler's stack-usage report before the object is
  // cached; what it throws leaves nothing cached.
  std::function<void(const std::string&)> check_stack;
  // Code LLVM built from an Apple .metallib kernel, linked with the code:
  // CPU, object files (".o", by the host compiler; backends/cpu/air); CUDA,
  // PTX (".ptx", by nvJitLink with NVRTC's relocatable output; backends/cuda/air).
  std::vector<std::pair<std::string, std::string>> objects;
};

// A built module: a shared object's path (CPU: built here or found in the
// compile cache) or an image (a CPU shared object from a .bronzelib, checked
// before it is cached and loaded; cubin, PTX, fatbin), or the compiler's
// messages.
struct ModuleObject {
  bool ok = false;
  std::string diagnostics;
  std::string path;
  std::vector<char> image;
  std::vector<std::string> lowered;  // one per name expression
  // The compile cache's entry it is (key, suffix), where it was cached: a
  // later process finds it by these (ShaderBackend::cached) without
  // generating its code again.
  std::string cache_key, cache_suffix;
  // CUDA: not built because a function declares more static shared memory
  // than CUDA allows (48 KiB); dynamic shared memory has no such limit.
  bool static_shared_overflow = false;
};

// A kernel of a loaded module: the symbols asked for, what was found.
struct ModuleKernel {
  std::string symbol;        // in: the entry's (lowered) name
  std::string table_symbol;  // in, optional: an array of table_words uint64 (a kernel's layout table)
  std::size_t table_words = 0;
  // in, optional: a uint64, the kernel's threadgroup arrays' bytes. CPU:
  // required; CUDA: present where they are carved from dynamic shared memory.
  std::string tgmem_symbol;
  // in, optional (CPU): a uint64, the kernel's declared limit of threads a
  // group ([[max_total_threads_per_threadgroup]]; 0 or absent: none).
  std::string max_threads_symbol;
  const void* entry = nullptr;  // out: the backend's function handle
  int max_threads = 0;          // out: threads per group it can launch with
  std::size_t static_shared_bytes = 0;  // out: with the carved bytes
  std::size_t carved_shared_bytes = 0;  // out (CUDA): dynamic shared memory before the threadgroup buffers
  std::vector<std::uint64_t> table;      // out: the table's words
  std::vector<std::size_t> param_sizes;  // out: each parameter's bytes, where the driver tells
};

// The module of an Apple .metallib kernel (one kernel, lowered from its
// AIR by a backend's ShaderBackend::lower_air): its entry's and threadgroup
// bytes' symbols.
inline constexpr const char* kAirEntrySymbol = "bronze_air_entry";
inline constexpr const char* kAirTgmemSymbol = "bronze_air_tgmem";
// CPU: a uint64, its declared limit of threads a group (ModuleKernel::max_threads_symbol).
inline constexpr const char* kAirMaxThreadsSymbol = "bronze_air_max_threads";

// Checks a module's kernels, their tables and threadgroup bytes filled,
// before any of the module's code can run (CPU: read from the object's file,
// before dlopen); what it throws refuses the module.
using ModuleCheck = std::function<void(const std::vector<ModuleKernel>&)>;

}  // namespace bronze::runtime
