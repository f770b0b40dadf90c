// The metal_stdlib emulation headers, embedded into libbronze at build time
// (src/shader/metal/*.h) and written beside each kernel the CPU JIT compiles.
#pragma once

namespace bronze::shader::embedded {
extern const char* const bronze_metal_h;
extern const char* const bronze_metal_cpu_h;
extern const char* const bronze_metal_cuda_h;
extern const char* const philox_hpp;  // src/runtime/philox.hpp, for NVRTC
extern const char* const ziggurat_tables_hpp;  // src/runtime/ziggurat_tables.hpp, which it includes
}  // namespace bronze::shader::embedded
