// The front end's output for a backend: what it builds for a Metal unit.
#pragma once

#include "runtime/shader_module.hpp"
#include "shader/parser.hpp"
#include "shader/preprocess.hpp"

namespace bronze::shader {

// The generated code for the backend's target (rewrite_cpu.hpp,
// rewrite_cuda.hpp), the emulation headers, and the stack check that maps
// the compiler's report to the user's lines (`unit` must outlive the build).
// carve_threadgroup: CUDA's threadgroup arrays in dynamic shared memory
// (rewrite_cuda.hpp), for a unit whose static arrays ptxas refused.
runtime::ModuleSource module_source(runtime::ShaderTarget target, const TranslationUnit& unit,
                                    const ParsedSource& parsed, bool validate, bool carve_threadgroup = false);

}  // namespace bronze::shader
