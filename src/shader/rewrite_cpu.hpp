// Metal -> C++ for the host compiler (shader/rewrite.hpp's edits;
// threadgroup variables become per-thread statics, since one OS thread runs
// one threadgroup at a time), and an extern "C" entry per kernel that runs a
// range of threadgroups.
#pragma once

#include <string>

#include "shader/rewrite.hpp"

namespace bronze::shader {

// Symbols per kernel i (of options' range): bronze_entry_<i>,
// bronze_layout_<i> (rewrite.hpp), bronze_tgmem_<i> (static threadgroup
// bytes).
std::string rewrite_for_cpu(const std::string& unit, const ParsedSource& parsed, const RewriteOptions& options = {});

}  // namespace bronze::shader
