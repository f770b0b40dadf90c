// Compiler messages mapped back to the user's files (a unit's #line
// directives make the compilers name them), for every compiler bronze runs.
#pragma once

#include <string>
#include <vector>

#include "shader/parser.hpp"
#include "shader/preprocess.hpp"

namespace bronze::shader {

// Throws ShaderCompileError with the compiler's first error in a user file,
// its source line with a caret when `files` holds that file, and a few more
// errors. Reads the GCC/Clang ("f:12:5: error: ...") and the NVRTC
// ("f(12): error: ...", caret line below) formats.
[[noreturn]] void raise_compile_error(const std::string& diagnostics, const std::vector<SourceFile>& files);

// A failed module build: a function called but never defined (the linker
// names it) is reported at its first call in the user's files; anything
// else as raise_compile_error does.
[[noreturn]] void raise_build_error(const std::string& diagnostics, const ParsedSource& parsed,
                                    const std::vector<SourceFile>& files);

// Throws ShaderCompileError at the first function of the user's files whose
// frame in a stack-usage report (GCC's or Clang's -fstack-usage form) is
// over the runtime::kMaxPrivateBytes a kernel's thread may have: its
// threads would run off their stacks. A kernel's entry over it (the
// compiler inlined the kernel there) is reported at the kernel of `parsed`.
void check_stack_usage(const std::string& usage, const std::vector<SourceFile>& files,
                       const ParsedSource* parsed = nullptr);

}  // namespace bronze::shader
