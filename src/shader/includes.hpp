// Includes resolved by bronze, not by the preprocessor. The preprocessor
// would open whatever a name reaches: a file outside the folders the caller
// named (whose first bad line its error then echoes), a FIFO it blocks on,
// and `__has_include`/`#pragma GCC dependency` would tell whether any path
// exists. So bronze reads every file a source may include itself, from the
// roots only (regular files only, opened without blocking), and hands the
// preprocessor copies whose every file name is the absolute path of another
// copy, or of a file that does not exist where bronze refused the name: the
// preprocessor searches no folder and reaches no other file. The copies keep
// their lines and start with `#line 1 "name"`, so messages and __FILE__ name
// the user's files.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "shader/preprocess.hpp"

namespace bronze::shader {

// One place names resolve in, in search order.
struct IncludeRoot {
  std::string dir;      // absolute; names resolve under it
  std::string allowed;  // the part of dir that may be read (torch: its c10/metal only)
  bool on_disk = true;  // else `files` holds its files (headers=, bronze's stand-ins)
  std::vector<std::pair<std::string, std::string>> files;  // name -> text, in memory
  bool quote_only = false;  // the source's folder serves "x.h", not <x.h>
  bool user = true;         // errors may quote its files (not bronze's stand-ins)
  std::string display;      // errors name a file display + its name under dir
};

struct IncludeView {
  std::string main_path;              // the main source's copy: what the preprocessor reads
  std::vector<SourceFile> files;      // the main source first, then every user file it may include
  std::vector<DiskFile> disk_files;   // every path looked at on disk: read, or found absent
  // A line marker's or message's file name as the user knows it: copies
  // are named by their display names; other names stay.
  std::string display(const std::string& name) const;
  // The preprocessor's messages with a refused name's message in place of
  // "no such file" for its stand-in path, and no path of the build folder.
  std::string diagnostics(const std::string& raw) const;

  std::string work;
  std::vector<std::pair<std::string, std::string>> names;  // copy's path -> display name
  std::vector<std::string> refusals;                       // "file:line:col: error: why" per refused name
};

// Reads `source` (at roots[0]'s `main_name`, shown as `main_display`) and
// every file it may include (every branch of its #if's: the preprocessor
// decides which it takes), and writes their copies under `work`. Throws
// ShaderCompileError at the user's line for what cannot be resolved before
// preprocessing: a computed name (`#include MACRO`, `__has_include(x)` of a
// macro parameter) and `GCC dependency` outside a `#pragma` line.
IncludeView make_include_view(const std::string& work, const std::string& main_name, const std::string& main_display,
                              const std::string& source, const std::vector<IncludeRoot>& roots);

// `s` as a C string literal, with control characters escaped.
std::string quoted(const std::string& s);
// A file name for messages: control characters as C escapes ("a\nb.metal").
std::string printable(const std::string& name);

}  // namespace bronze::shader
