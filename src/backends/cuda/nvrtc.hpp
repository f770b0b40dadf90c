// NVRTC, loaded at run time, compiling CUDA C++ to a cubin for one GPU
// architecture through bronze's content-addressed disk cache.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace bronze::cuda {

bool nvrtc_available();
std::string nvrtc_status();  // the library and version loaded, or why none

// Compiles `source` (with `headers`: name, text) for sm_<arch>; returns the
// cubin. Throws NotSupportedError without NVRTC, ShaderCompileError with the
// compiler's log on failure.
std::vector<char> compile_cubin(const std::string& source,
                                const std::vector<std::pair<std::string, std::string>>& headers, int arch,
                                const std::vector<std::string>& extra_options = {});

}  // namespace bronze::cuda
