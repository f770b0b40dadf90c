// What a compiled shader library holds, and how each backend builds one:
// build_cpu.cpp (host C++ compiler -> shared object) and build_cuda.cpp
// (NVRTC -> cubin -> loaded module).
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bronze/shader.hpp"
#include "shader/parser.hpp"
#include "shader/preprocess.hpp"

namespace bronze::detail {
struct LibraryImpl;
// The builds of one library compiled without naming a device: it follows
// its tensors, built for another device on first use there (as CuPy's and
// Warp's kernels do).
struct LibraryFamily {
  shader::TranslationUnit unit;
  bool validate = false;
  std::mutex mu;
  std::vector<std::shared_ptr<LibraryImpl>> builds;  // one per device
};

struct LibraryImpl {
  Device device;
  std::string hash;
  std::string source;                // the preprocessed unit: self-contained
  std::vector<KernelInfo> kernels;
  std::vector<std::size_t> static_tg_bytes;
  std::vector<int> max_threads;      // per kernel: threads per threadgroup it can launch with
  std::vector<const void*> entries;  // the backend's function per kernel
  bool launch_record = true;         // entries take bronze's launch record (Metal); CUDA C++ kernels do not
  bool captured = false;             // source written to the running capture
  // Empty: bound to `device`. Weak: the family owns its builds, and the
  // process's library cache owns the family.
  std::weak_ptr<LibraryFamily> family;
};
}  // namespace bronze::detail

namespace bronze::shader {

// Throws ShaderCompileError with the compiler's first error in a user file
// (the unit's #line directives name them), its source line with a caret
// when `files` holds that file, and a few more errors. Reads the GCC/Clang
// ("f:12:5: error: ...") and the NVRTC ("f(12): error: ...", caret line
// below) formats.
[[noreturn]] void raise_compile_error(const std::string& diagnostics, const std::vector<SourceFile>& files);

// CPU: throws ShaderCompileError at the first function of the user's files
// whose frame in the compiler's stack-usage report (GCC's or Clang's form) is
// over the 512 KiB a kernel's thread may have: its threads would run off
// their stacks.
void check_stack_usage(const std::string& usage, const std::vector<SourceFile>& files);

// CPU: compiles for the host (the shared object's path) and loads it.
std::string compile_cpu_object(const TranslationUnit& tu, const ParsedSource& ps, bool validate = false);
std::shared_ptr<detail::LibraryImpl> load_cpu_object(const std::string& unit, const ParsedSource& ps,
                                                     const std::string& so_path);

// CUDA: a Metal unit -> cubin for sm_<arch> (or PTX for compute_<arch>).
std::vector<char> compile_cuda_image(const TranslationUnit& tu, const ParsedSource& ps, int arch, bool ptx = false);
// Loads a module built from a Metal unit on `device`.
std::shared_ptr<detail::LibraryImpl> load_cuda_module(const Device& device, const std::string& unit,
                                                      const ParsedSource& ps, const std::vector<char>& image);
// CUDA C++ source: its __global__ kernels, compiled and loaded on `device`.
std::shared_ptr<detail::LibraryImpl> build_cuda_source(const Device& device, const std::string& source,
                                                       const std::string& filename);

}  // namespace bronze::shader
