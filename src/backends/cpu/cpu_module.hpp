// The CPU backend's shader modules: generated C++ built by the host
// compiler into a shared object (through the compile cache), loaded with
// dlopen. Kernel threads run on the code of metal/bronze_metal_cpu.h.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/shader_module.hpp"

namespace bronze::embedded {
extern const char* const bronze_metal_cpu_h;  // backends/cpu/metal/bronze_metal_cpu.h
}  // namespace bronze::embedded

namespace bronze::cpu {

runtime::ModuleObject build_module(const runtime::ModuleSource& src);
// The object build_module cached under (key, suffix), if the cache has it.
std::optional<runtime::ModuleObject> cached_module(const std::string& key, const std::string& suffix);
// Fills each kernel's entry, layout table and static threadgroup bytes. The
// object's symbols are read and `check`ed from its bytes before dlopen, so a
// refused object has run none of its code (nor reached the cache). The
// object stays loaded while the handle returned lives (dlclose after): a
// module keeps no thread-local memory that would outlive it
// (launch_abi.h's bronze_cpu_memory).
std::shared_ptr<void> load_module(const runtime::ModuleObject& object, std::vector<runtime::ModuleKernel>& kernels,
                                  const runtime::ModuleCheck& check);

}  // namespace bronze::cpu
