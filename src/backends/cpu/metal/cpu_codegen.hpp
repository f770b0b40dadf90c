// The CPU backend's code generator for Metal: the front end's parse becomes
// C++17 for the host compiler (shader/rewrite.hpp's shared edits, with
// threadgroup variables as per-thread statics, since one OS thread runs one
// threadgroup at a time), and an extern "C" entry per kernel that runs a
// range of threadgroups.
#pragma once

#include <string>

#include "shader/rewrite.hpp"

namespace bronze::cpu {

// The generated C++. Symbols per kernel i (of options' range):
// bronze_entry_<i>, bronze_layout_<i> (rewrite.hpp), bronze_tgmem_<i>
// (static threadgroup bytes).
std::string generate(const std::string& unit, const shader::ParsedSource& parsed,
                     const shader::RewriteOptions& options = {});

}  // namespace bronze::cpu
