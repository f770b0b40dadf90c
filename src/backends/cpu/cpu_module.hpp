// The CPU backend's shader modules: generated C++ built by the host
// compiler into a shared object (through the compile cache), loaded with
// dlopen. Kernel threads run on the code of metal/bronze_metal_cpu.h.
#pragma once

#include <vector>

#include "runtime/shader_module.hpp"

namespace bronze::embedded {
extern const char* const bronze_metal_cpu_h;  // backends/cpu/metal/bronze_metal_cpu.h
}  // namespace bronze::embedded

namespace bronze::cpu {

runtime::ModuleObject build_module(const runtime::ModuleSource& src);
// Fills each kernel's entry, layout table and static threadgroup bytes.
// The object stays loaded for the process: queued launches and thread-local
// scratch inside it must outlive every library handle.
void load_module(const runtime::ModuleObject& object, std::vector<runtime::ModuleKernel>& kernels);

}  // namespace bronze::cpu
