// The part of the Metal -> C++ rewrite both compilers share: address spaces
// and attributes are blanked in place (same lines and columns, so compiler
// messages point into the user's source via #line), half literals become
// casts, and threadgroup variables become the target's per-group storage.
// rewrite_cpu and rewrite_cuda add the entries that call the kernels.
#pragma once

#include <string>

#include "shader/parser.hpp"

namespace bronze::shader {

enum class Target { Cpu, Cuda };

// The user's source, edited for `target`. validate (CPU only): buffer
// pointer parameters become bounds-checked views (bronze_bounded<T>).
std::string rewrite_body(const std::string& source, const ParsedSource& parsed, Target target, bool validate);

// 2, 3 or 4 for "uint2", "float3", "half4"; 1 otherwise.
int vector_components(const std::string& type);

// The expression an entry passes for a thread-position attribute parameter,
// from a bronze_rt::ids named `id`.
std::string attribute_expr(const KernelParam& p);

// Buffer pointers become bounds-checked views under validate=True.
inline bool checked(const ParsedParam& p, bool validate) {
  return validate && p.info.kind == ParamKind::Buffer && p.pointer;
}

// Kernel k's symbols in the compiled object: the entry and the sizeof of
// each binding's type (bronze_sizes_<k>).
inline std::string entry_symbol(std::size_t k) { return "bronze_entry_" + std::to_string(k); }
inline std::string sizes_symbol(std::size_t k) { return "bronze_sizes_" + std::to_string(k); }

// The generated file: the header, then the edited source and the entries,
// both inside namespace bronze_msl.
std::string generated_file(const std::string& filename, const std::string& body, const std::string& entries,
                           const std::string& preamble);

}  // namespace bronze::shader
