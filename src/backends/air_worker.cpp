// bronze-air REQUEST RESULT LIBRARY: one Apple .metallib kernel lowered by
// LLVM in a process of its own (backends/air_process.cpp runs it), with the
// libLLVM the caller loaded, so that an LLVM fatal error ends this process,
// not the caller's. Exit status 0 with the answer written (the lowered
// source, or the error lower_air raised); 3 after an LLVM fatal error; else 2.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "backends/air_process.hpp"
#include "jit/files.hpp"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: bronze-air REQUEST RESULT LIBRARY (bronze runs this itself)\n");
    return 2;
  }
  ::setenv("BRONZE_LLVM_LIBRARY", argv[3], 1);
  try {
    std::string request;
    if (!bronze::jit::read_file(argv[1], request)) return 2;
    bronze::jit::write_file(argv[2], bronze::backends::serve_lower_air(request));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bronze-air: %s\n", e.what());
    return 2;
  }
}
