// bronze-nvrtc REQUEST RESULT LIBRARY: one NVRTC compile in a process of its
// own, with the NVRTC library the caller loaded (its cache keys name it).
// NVRTC runs one compile at a time in a process, so the parts of a unit
// that bronze builds at once (api/shader.cpp: build_module) each run in
// one of these (backends/cuda/nvrtc.cpp: run_in_worker); the caller keeps
// the cache. Exit status 0 with the result written, else 2 (the caller
// then compiles in its own process).
#include "backends/cuda/nvrtc.hpp"
#include "jit/helper_process.hpp"

int main(int argc, char** argv) {
  return bronze::jit::helper_main(argc, argv, "bronze-nvrtc", "BRONZE_NVRTC_LIBRARY",
                                  [](const std::string& data) -> std::optional<std::string> {
                                    auto request = bronze::cuda::decode_request(data);
                                    if (!request) return std::nullopt;
                                    return bronze::cuda::encode_result(bronze::cuda::nvrtc_run(*request));
                                  });
}
