// Metal source -> C++ for the host compiler (shader/rewrite.hpp's edits;
// threadgroup variables become per-thread statics, since one OS thread runs
// one threadgroup at a time), and an extern "C" entry per kernel that runs a
// range of threadgroups.
#pragma once

#include <string>

#include "shader/parser.hpp"

namespace bronze::shader {

// Entry symbols: bronze_entry_<i>, bronze_sizes_<i> (sizeof of each binding's
// type), bronze_tgmem_<i> (static threadgroup bytes), i = kernel index.
// validate: buffer pointer parameters become bounds-checked views
// (bronze_bounded<T>), and an access out of range is recorded instead of made.
std::string rewrite_for_cpu(const std::string& source, const ParsedSource& parsed, const std::string& filename,
                            bool validate = false);

}  // namespace bronze::shader
