// The front end's output for a backend: what it builds for a Metal unit.
#pragma once

#include "runtime/shader_module.hpp"
#include "shader/parser.hpp"
#include "shader/preprocess.hpp"
#include "shader/rewrite.hpp"

namespace bronze::shader {

// The generated code for the backend's target (rewrite_cpu.hpp,
// rewrite_cuda.hpp), the emulation headers, and the stack check that maps
// the compiler's report to the user's lines (`unit` must outlive the build).
runtime::ModuleSource module_source(runtime::ShaderTarget target, const TranslationUnit& unit,
                                    const ParsedSource& parsed, const RewriteOptions& options = {});

}  // namespace bronze::shader
