// bronze-air REQUEST RESULT LIBRARY: one Apple .metallib kernel lowered by
// LLVM in a process of its own (backends/air_process.cpp runs it), with the
// libLLVM the caller loaded, so that an LLVM fatal error ends this process,
// not the caller's. Exit status 0 with the answer written (the lowered
// source, or the error lower_air raised); 3 after an LLVM fatal error; else 2.
#include "backends/air_process.hpp"
#include "jit/helper_process.hpp"

int main(int argc, char** argv) {
  return bronze::jit::helper_main(argc, argv, "bronze-air", "BRONZE_LLVM_LIBRARY",
                                  [](const std::string& request) { return bronze::backends::serve_lower_air(request); });
}
