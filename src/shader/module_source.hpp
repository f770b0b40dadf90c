// The front end's output for a backend: what a backend's code generator
// (backends/*/metal/*_codegen.hpp) hands its compiler for a Metal unit.
#pragma once

#include <string>

#include "runtime/shader_module.hpp"
#include "shader/parser.hpp"
#include "shader/preprocess.hpp"
#include "shader/rewrite.hpp"

namespace bronze::shader {

// `code` (the generated unit) with the emulation headers, the unit's math
// mode and the stack check that maps the compiler's report to the user's
// lines (`unit` and `parsed` must outlive the build).
runtime::ModuleSource module_source(const TranslationUnit& unit, const ParsedSource& parsed,
                                    const RewriteOptions& options, std::string code);

}  // namespace bronze::shader
