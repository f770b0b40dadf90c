// AIR (an Apple .metallib function) lowered for the CPU through LLVM: the
// module retargeted to the host (its address spaces, below 256, are flat on
// x86-64), its threadgroup variables made thread-local (a group's threads
// run on one OS thread), its air.* calls renamed to functions of bronze's
// CPU runtime, and a thunk that calls the kernel with its arguments from
// bronze's launch record; then built to an object by LLVM. The entry over a
// group's threads and the runtime functions are C++ (`entry`), built by the
// host compiler with bronze_metal_cpu.h and linked with the object, so AIR
// kernels run exactly as compiled Metal source runs (cpu_codegen).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "air/air_module.hpp"
#include "air/metallib.hpp"
#include "runtime/shader_module.hpp"

namespace bronze::cpu {

// LLVM's version, the host's triple, processor and features: what an
// object lower_air built is built for.
std::string air_target();

// What build_module builds: the entry (runtime::kAirEntrySymbol) with the
// kernel's object linked in. Throws NotSupportedError naming an intrinsic
// or parameter the runtime does not implement, ValueError when LLVM
// rejects the module (backends/air_lowering).
runtime::ModuleSource lower_air(const air::Function& f, const air::AirFunction& reflection,
                                const std::vector<std::pair<std::string, std::string>>& constants);

}  // namespace bronze::cpu
