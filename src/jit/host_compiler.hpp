// The host C++ compiler: its preprocessor, which every Metal source goes
// through first, and the shared objects it builds from rewritten kernels
// (the CPU backend's JIT), with the cached build around them.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace bronze::jit {

struct HostCompiler {
  std::string path;      // resolved from $BRONZE_CXX, $CXX, c++, g++, clang++
  std::string identity;  // path, size and mtime: a cache key that changes with upgrades
  std::string status;    // why none was found
  bool clang = false;    // Clang's driver, else GCC's (their flags differ at the edges)
  bool available() const { return !path.empty(); }
  static const HostCompiler& get();
};

struct PreprocessResult {
  bool ok = false;
  std::string output;       // the preprocessed text, with line markers
  std::string diagnostics;  // the preprocessor's messages
};

// The C preprocessor: the host compiler's, else GCC's `cpp` alone (enough
// for CUDA, where NVRTC compiles); "" when there is none.
std::string preprocessor_path();

// Runs the C preprocessor (`-E` plus `flags`) over `main_file` with `dir` as
// the working directory, so line markers name the files as `flags` and the
// includes reach them. Throws NotSupportedError when there is none.
PreprocessResult run_preprocessor(const std::string& dir, const std::string& main_file,
                                  const std::vector<std::string>& flags);

struct BuildResult {
  std::string so_path;      // empty on failure
  std::string diagnostics;  // the compiler's output on failure
  bool cache_hit = false;
};

// Compiles `source` with `headers` (name, text) beside it into a shared
// object, through the disk cache. Successes only are cached. With
// check_stack, the compiler also reports every function's stack frame
// (-fstack-usage: "file:line[:col]:function<TAB>bytes<TAB>qualifier" lines,
// GCC's and Clang's form), and that report goes to check_stack before the
// object is cached: what it throws propagates and leaves nothing cached.
BuildResult build_shared_object(const std::string& source,
                                const std::vector<std::pair<std::string, std::string>>& headers,
                                std::vector<std::string> flags,
                                const std::function<void(const std::string& stack_usage)>& check_stack = {});

}  // namespace bronze::jit
