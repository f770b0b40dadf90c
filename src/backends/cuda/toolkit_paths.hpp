// Where a CUDA toolkit library may be: $<override_env> alone when it is set
// (the library named is used or is an error, never another one silently),
// else the library path, the `lib` folders of pip's NVIDIA wheels (which
// PyTorch brings: site-packages/nvidia/cu13/lib, nvidia/cuda_nvrtc/lib, ...;
// the Python package names them at import), $CUDA_HOME/lib64,
// $CUDA_PATH/lib64 and /usr/local/cuda/lib64, each for the CUDA 13 and 12
// sonames and the bare name, in that order.
#pragma once

#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

namespace bronze::cuda {

namespace detail {
inline std::mutex g_pip_dirs_mu;
inline std::vector<std::string> g_pip_dirs;
}  // namespace detail

// The folders of pip's NVIDIA wheels, searched after the library path
// (each ending in '/'; set before a library is first loaded to count).
inline void set_pip_library_dirs(std::vector<std::string> dirs) {
  for (std::string& d : dirs)
    if (!d.empty() && d.back() != '/') d += '/';
  std::lock_guard<std::mutex> g(detail::g_pip_dirs_mu);
  detail::g_pip_dirs = std::move(dirs);
}

inline std::vector<std::string> pip_library_dirs() {
  std::lock_guard<std::mutex> g(detail::g_pip_dirs_mu);
  return detail::g_pip_dirs;
}

inline std::vector<std::string> toolkit_library_candidates(const char* override_env, const std::string& stem) {
  if (const char* env = std::getenv(override_env); env && *env) return {env};
  std::vector<std::string> names;
  std::vector<std::string> dirs = {""};
  for (std::string& d : pip_library_dirs()) dirs.push_back(std::move(d));
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* v = std::getenv(var); v && *v) dirs.push_back(std::string(v) + "/lib64/");
  dirs.push_back("/usr/local/cuda/lib64/");
  for (const auto& d : dirs)
    for (const char* suffix : {".so.13", ".so.12", ".so"}) names.push_back(d + stem + suffix);
  return names;
}

// Why no candidate loaded: `not_found` after the search, or that the one
// $<override_env> names is no `kind` library.
inline std::string toolkit_library_missing(const char* override_env, const std::string& kind, std::string not_found) {
  if (const char* env = std::getenv(override_env); env && *env)
    return std::string("$") + override_env + "='" + env + "' is not a " + kind + " library bronze can load";
  return not_found;
}

}  // namespace bronze::cuda
