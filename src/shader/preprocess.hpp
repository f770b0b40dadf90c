// The first step of reading Metal: the host compiler's C preprocessor (a
// real, conformant one: `-E`) runs over the user's source with the macros
// Apple's Metal compiler predefines, stub <metal_*> headers, the user's
// include folders and in-memory headers, and PyTorch's Metal headers when
// torch is installed. Everything after it (kernel discovery, reflection, the
// rewrite) reads the expanded translation unit, whose `#line` directives
// keep the user's file names and lines, so errors point into the user's
// files (inside a macro expansion: the line of the macro's use).
#pragma once

#include <set>
#include <string>
#include <utility>
#include <vector>

namespace bronze::shader {

struct SourceOptions {
  std::string filename = "shader.metal";  // names the source in errors; its folder is searched for "x.h"
  std::vector<std::string> include_dirs;  // searched for "x.h" and <x.h>, in order
  std::vector<std::pair<std::string, std::string>> headers;  // (name, text): "x.h" found before any folder
  std::vector<std::pair<std::string, std::string>> defines;  // -D name=value (MTLCompileOptions.preprocessorMacros)
  std::string torch_include_dir;  // an installed torch's include folder: <c10/metal/...> resolves in it
  // Function constant values (name or index -> C++ expression), as
  // MTLFunctionConstantValues: appended to the unit (parser.hpp, kConstantPragma).
  std::vector<std::pair<std::string, std::string>> constants;
  std::string math_mode = "fast";  // appended to the unit (parser.hpp, kMathModePragma)
};

// How the #error of a Metal header bronze has no emulation of begins
// (diagnostics raise ShaderNotSupportedError for it).
inline constexpr const char kNotSupported[] = "bronze does not support ";

// The lines that give a unit its function constant values (kConstantPragma).
std::string constant_pragmas(const std::vector<std::pair<std::string, std::string>>& constants);

struct SourceFile {
  SourceFile(std::string n, std::string t) : name(std::move(n)), text(std::move(t)) {}
  std::string name;  // as errors name it: the user's filename, a header's name, an include's path
  std::string text;
  // Lines a macro expansion changed: a column there is the expansion's, so
  // errors give the line alone.
  std::set<int> expanded_lines;
};

// A path looked at on disk while resolving includes, to tell whether a
// cached translation unit is stale: by content, since an edit may keep a
// file's size and its mtime be set back.
struct DiskFile {
  std::string path;
  std::string sha256;  // of what was read; "" when nothing to include was there
  bool unchanged() const;
};

struct TranslationUnit {
  // The expanded source, with `#line N "name"` directives. A line of a user
  // file that no macro changed keeps its columns (comments become spaces).
  std::string text;
  std::vector<SourceFile> files;  // the main source first, then each included file
  std::vector<DiskFile> disk_files;
  const SourceFile* file(const std::string& name) const;
};

// Throws ShaderCompileError at the user's line for a preprocessor error (a
// missing include, an #error; ShaderNotSupportedError for a Metal 4 header),
// NotSupportedError without a host compiler.
TranslationUnit preprocess(const std::string& source, const SourceOptions& options);

// The macros Apple's compiler predefines for a Metal 3.2 compute library,
// as "name=value" (shown by `bronze info`).
const std::vector<std::string>& metal_predefined_macros();

}  // namespace bronze::shader
