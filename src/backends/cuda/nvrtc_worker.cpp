// bronze-nvrtc REQUEST RESULT LIBRARY: one NVRTC compile in a process of its
// own, with the NVRTC library the caller loaded (its cache keys name it).
// NVRTC runs one compile at a time in a process, so the parts of a unit
// that bronze builds at once (api/shader.cpp: build_module) each run in
// one of these (backends/cuda/nvrtc.cpp: run_in_worker); the caller keeps
// the cache. Exit status 0 with the result written, else 2 (the caller
// then compiles in its own process).
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "backends/cuda/nvrtc.hpp"
#include "jit/files.hpp"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: bronze-nvrtc REQUEST RESULT LIBRARY (bronze runs this itself)\n");
    return 2;
  }
  ::setenv("BRONZE_NVRTC_LIBRARY", argv[3], 1);
  try {
    std::string data;
    if (!bronze::jit::read_file(argv[1], data)) return 2;
    auto request = bronze::cuda::decode_request(data);
    if (!request) return 2;
    bronze::jit::write_file(argv[2], bronze::cuda::encode_result(bronze::cuda::nvrtc_run(*request)));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bronze-nvrtc: %s\n", e.what());
    return 2;
  }
}
