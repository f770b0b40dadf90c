// An Apple .metallib kernel lowered by LLVM in a process of its own:
// bronze-air (air_worker.cpp), found beside the module bronze was loaded
// from. On some IR it cannot build (an intrinsic of another target: "Cannot
// select"), LLVM's optimizer or code generator reports a fatal error and
// ends its process; a file the user loads must end that process, not the
// caller's. (Reading the bitcode, which returns its errors, stays in the
// caller: loading reflects every kernel.)
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "air/air_module.hpp"
#include "air/metallib.hpp"
#include "bronze/device.hpp"
#include "runtime/shader_module.hpp"

namespace bronze::backends {

// shader_backend(type).lower_air(f, r, constants), run in bronze-air where
// it is (else in this process). Throws what lower_air throws; LLVM's fatal
// error as NotSupportedError naming the kernel and LLVM's reason;
// Interrupted, and ShaderCompileError past the compile limits, as the
// compilers bronze runs do.
runtime::ModuleSource lower_air_isolated(DeviceType type, const air::Function& f, const air::AirFunction& r,
                                         const std::vector<std::pair<std::string, std::string>>& constants);

// bronze-air's side: a request (what lower_air_isolated writes) lowered,
// its answer or the error it raised, as the caller reads it. An LLVM fatal
// error ends the process with a status the caller knows.
std::string serve_lower_air(const std::string& request);

}  // namespace bronze::backends
