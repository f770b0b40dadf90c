// The host C++ compiler: its preprocessor, which every Metal source goes
// through first, and the shared objects it builds from rewritten kernels
// (the CPU backend's JIT), with the cached build around them.
//
// Which compiler: $BRONZE_CXX, else $CXX, else the first of c++, g++,
// clang++ that works. A compiler named by either variable is used or is an
// error that says why; it is never replaced by another one silently. What
// it is (GCC or Clang, and its version) is learnt once per path by running
// it (its predefined macros), never from its file name, and the flags whose
// spelling differs between the two follow from that.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace bronze::jit {

enum class CompilerKind { Unknown, Gcc, Clang };

struct HostCompiler {
  std::string path;       // what is run: the name as found on PATH, or the path given
  std::string chosen_by;  // "$BRONZE_CXX", "$CXX" or "" (the defaults)
  std::string identity;   // path, target's size and mtime: a cache key that changes with upgrades
  CompilerKind kind = CompilerKind::Unknown;
  std::string version;    // "12.2.0", "16.0.6" (its predefined macros)
  int major = 0;
  bool clang = false;     // kind == Clang: its driver's flags differ from GCC's at the edges
  std::string status;     // why there is none or why the one chosen is not a C++ compiler ("" when fine)
  // A C++ compiler was found and identified; whether it builds bronze's
  // kernels is checked by works() (a compile, so only when asked).
  bool available() const { return status.empty() && !path.empty(); }
  std::string kind_name() const;  // "GCC", "Clang" or "unknown"
  std::string describe() const;   // "/usr/bin/clang++-16 (Clang 16.0.6, from $BRONZE_CXX)"
  // Flags that turn off colour and the source excerpt under each message
  // (bronze quotes the user's own files): spelled per kind.
  std::vector<std::string> plain_diagnostics_flags() const;
  // Builds a small C++17 unit with _Float16 into a shared object with
  // -Wl,-z,defs, as every kernel is built: "" when that works, else why not
  // (the compiler's own words). Run once per process, on request.
  const std::string& works() const;
  static const HostCompiler& get();
  // Throws the error that says why there is no usable compiler: ValueError
  // for a $BRONZE_CXX/$CXX that names no C++ compiler, NotSupportedError
  // when none was found or the one found cannot build kernels.
  [[noreturn]] void raise_unusable(const std::string& why) const;
};

// What running `path` tells about it: its kind and version from `-E` over
// its predefined macros. Cached per path for the process, and on disk per
// file (its path, size and time: a replaced compiler is run again). Empty status when
// it is a C or C++ compiler (or GCC's cpp) that preprocesses C++.
struct CompilerProbe {
  CompilerKind kind = CompilerKind::Unknown;
  std::string version;
  int major = 0;
  std::string status;  // why it could not be identified
};
const CompilerProbe& probe_compiler(const std::string& path);

// The unqualified name of a function symbol: Itanium-mangled
// (_ZN10bronze_msl6helperEf -> helper) or as GCC writes it
// (bronze_msl::helper(float) -> helper).
std::string function_name(const std::string& symbol);

struct PreprocessResult {
  bool ok = false;
  std::string output;       // the preprocessed text, with line markers
  std::string diagnostics;  // the preprocessor's messages
};

// The C preprocessor: the host compiler's, else (none chosen and none found)
// GCC's `cpp` alone (enough for CUDA, where NVRTC compiles); "" when there
// is none.
std::string preprocessor_path();

// Runs the C preprocessor (`-E` plus `flags`, plus the kind's flags for
// plain messages) over `main_file` with `dir` as the working directory, so
// line markers name the files as `flags` and the includes reach them.
// Throws NotSupportedError when there is none, ValueError when $BRONZE_CXX
// or $CXX names no compiler.
PreprocessResult run_preprocessor(const std::string& dir, const std::string& main_file,
                                  const std::vector<std::string>& flags);

struct BuildResult {
  std::string so_path;      // empty on failure
  std::string diagnostics;  // the compiler's output on failure
  std::string key;          // its compile cache entry's key (suffix ".so"), where it is cached
  bool cache_hit = false;
};

// Compiles `source` with `headers` (name, text) beside it into a shared
// object, through the disk cache. Successes only are cached. With
// check_stack, the compiler also reports every function's stack frame
// (-fstack-usage: "file:line[:col]:function<TAB>bytes<TAB>qualifier" lines,
// GCC's and Clang's form), and that report goes to check_stack before the
// object is cached: what it throws propagates and leaves nothing cached.
// A failed build by a compiler that cannot build even works()'s unit throws
// NotSupportedError saying so instead of returning the diagnostics.
// Runs a program bronze ships (argv[0], a path; bronze-nvrtc) as the
// compiler runs, under the same limits: its exit status, and its output in
// `messages`. Throws Interrupted when interrupted, ShaderCompileError past a limit.
int run_helper(const std::vector<std::string>& argv, std::string& messages);
// The program bronze ships as `name` (bronze-nvrtc, bronze-air): beside the
// module bronze's code was loaded from (the Python package's folder), else "".
std::string helper_path(const std::string& name);
// The shared object cached under `key` (build_shared_object's BuildResult::key),
// pinned for loading as a hit is; nullopt when the cache has none.
std::optional<std::string> cached_shared_object(const std::string& key);
// The compiler's semantic analysis alone (-fsyntax-only) of `source` with
// `headers` beside it and `flags`: "" when it passes, else the compiler's
// messages. A pass is remembered in the disk cache (an empty entry), so
// another process does not check the same unit again.
std::string check_source(const std::string& source, const std::vector<std::pair<std::string, std::string>>& headers,
                         std::vector<std::string> flags);
BuildResult build_shared_object(const std::string& source,
                                const std::vector<std::pair<std::string, std::string>>& headers,
                                std::vector<std::string> flags,
                                const std::function<void(const std::string& stack_usage)>& check_stack = {});

}  // namespace bronze::jit
