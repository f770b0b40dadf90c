// Each backend's door for Metal shaders, the ops table the API builds
// through: its code generator (the front end's parse -> code for its
// compiler) and its build. Available without a device: CUDA builds need
// NVRTC, not a GPU. Loading is the device's (runtime::DeviceImpl).
#pragma once

#include <optional>
#include <string>

#include "air/air_module.hpp"
#include "bronze/device.hpp"
#include "runtime/shader_module.hpp"
#include "shader/parser.hpp"
#include "shader/rewrite.hpp"

namespace bronze::backends {

struct ShaderBackend {
  std::string (*generate)(const std::string& unit, const shader::ParsedSource&, const shader::RewriteOptions&);
  runtime::ModuleObject (*build)(const runtime::ModuleSource&);
  // An object build() cached (ModuleObject::cache_key and cache_suffix),
  // if the compile cache still has it.
  std::optional<runtime::ModuleObject> (*cached)(const std::string& key, const std::string& suffix);
  // What builds its code (the compiler and its version): part of the key
  // of anything derived from what it built.
  std::string (*compiler_identity)();
  // An Apple .metallib function lowered from its AIR to what build() takes,
  // its function constants given these values (name, value as text).
  runtime::ModuleSource (*lower_air)(const air::Function&, const air::AirFunction&,
                                     const std::vector<std::pair<std::string, std::string>>& constants);
  // Why lower_air would refuse it, or "".
  std::string (*air_unsupported)(const air::AirFunction&);
  // What lower_air builds for (CPU: the LLVM, and the host's processor its
  // code is tuned to): part of the key of what it built.
  std::string (*air_target)();
};
const ShaderBackend& shader_backend(DeviceType type);

}  // namespace bronze::backends
