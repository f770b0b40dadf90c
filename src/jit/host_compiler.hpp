// The host C++ compiler that turns rewritten kernels into shared objects
// (the CPU backend's JIT), and the cached build around it.
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
  bool available() const { return !path.empty(); }
  static const HostCompiler& get();
};

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
