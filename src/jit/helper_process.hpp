// bronze's helper programs (bronze-nvrtc, bronze-air): one request served
// in a process of its own, so that what a library does to its process (one
// NVRTC compile at a time; LLVM's fatal errors) stays there. Both sides of
// that exchange: the caller's (call_helper) and the helper's (helper_main).
// A helper is `NAME REQUEST RESULT LIBRARY`: it reads the request file,
// writes its answer to the result file, and loads the shared library the
// caller loaded (LIBRARY, through the variable that chooses it).
#pragma once

#include <functional>
#include <optional>
#include <string>

namespace bronze::jit {

struct HelperRun {
  int status = 0;                      // the helper's exit status
  std::string messages;                // what it wrote to stderr
  std::optional<std::string> answer;   // its result file, where it exited 0 and wrote one
};

// Runs the helper at `path` on `request` (files in a work folder of the
// compile cache, removed after) under the compile limits (host_compiler's
// run_helper: its time and memory limits, Ctrl-C, its errors).
HelperRun call_helper(const std::string& path, const std::string& request, const std::string& library);

// The file a dlopen handle loaded (`name` may be a soname, which the
// helper's own search path could resolve elsewhere): what LIBRARY names.
std::string loaded_file(void* handle, const std::string& name);

// A helper's main: sets `library_env` to LIBRARY, answers REQUEST with
// `serve` (nullopt: a request it cannot read). Exit status 0 with the
// answer written, 2 otherwise (a message on stderr).
int helper_main(int argc, char** argv, const char* name, const char* library_env,
                const std::function<std::optional<std::string>(const std::string&)>& serve);

}  // namespace bronze::jit
