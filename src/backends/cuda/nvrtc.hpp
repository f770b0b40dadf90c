// NVRTC, loaded at run time, compiling CUDA C++ to a cubin (sm_XY) or PTX
// (compute_XY) through bronze's content-addressed disk cache.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace bronze::cuda {

bool nvrtc_available();
std::string nvrtc_status();  // the library and version loaded, or why none

struct NvrtcRequest {
  std::string source;
  std::string filename = "bronze.cu";
  std::vector<std::pair<std::string, std::string>> headers;  // name, text
  int arch = 0;      // 90 for sm_90 / compute_90
  bool ptx = false;  // PTX for compute_<arch> instead of a cubin for sm_<arch>
  std::vector<std::string> options;
  // C++ names to lower (kernels that are not extern "C"); the results are
  // not cached on disk, so such sources compile each time.
  std::vector<std::string> name_expressions;
  // The front end's semantic analysis alone (--fdevice-syntax-only): no
  // image; a pass is remembered in the disk cache.
  bool syntax_only = false;
  // Compiled in a bronze-nvrtc process where that program is installed:
  // NVRTC runs one compile at a time per process, so parts of a unit built
  // at once each take one (api/shader.cpp: build_module).
  bool in_worker = false;
};

struct NvrtcResult {
  bool ok = false;
  std::string cache_key, cache_suffix;  // its compile cache entry, where it is cached
  std::vector<char> image;             // cubin, or PTX text with its terminating NUL
  std::string log;                     // the compiler's messages (errors when !ok)
  std::vector<std::string> lowered;    // one per name expression
};

// Throws NotSupportedError without NVRTC; compile errors are in the result.
NvrtcResult nvrtc_compile(const NvrtcRequest& request);
// One compile, here, without the cache (what bronze-nvrtc runs).
NvrtcResult nvrtc_run(const NvrtcRequest& request);
// bronze-nvrtc's request (no name expressions) and result files (jit/serial.hpp).
std::string encode_request(const NvrtcRequest& request);
std::optional<NvrtcRequest> decode_request(const std::string& data);
std::string encode_result(const NvrtcResult& result);
std::optional<NvrtcResult> decode_result(const std::string& data);
// The image nvrtc_compile cached under (key, suffix), if the cache has it.
std::optional<std::vector<char>> nvrtc_cached(const std::string& key, const std::string& suffix);

// bronze's own kernels: the cubin, or ShaderCompileError with the log.
std::vector<char> compile_cubin(const std::string& source,
                                const std::vector<std::pair<std::string, std::string>>& headers, int arch,
                                const std::vector<std::string>& extra_options = {});

}  // namespace bronze::cuda
