// The part of the Metal -> C++ rewrite both compilers share: the
// preprocessed unit's address spaces and attributes are blanked in place
// (same lines, and the same columns where the edit allows, so compiler
// messages point into the user's files through the unit's #line
// directives), half literals become casts, and threadgroup variables become
// the target's per-group storage. Each backend's code generator
// (backends/*/metal/*_codegen.cpp) adds the entries that call the kernels.
//
// Entries never spell a parameter's type: they take it from the kernel
// function's own type (bronze_rt::param_t<decltype(&kernel), i>), so the
// compiler that builds the code resolves templates, default template
// arguments and typedefs; and a layout table per kernel tells the runtime
// each binding's size and type as that compiler sees them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "shader/parser.hpp"

namespace bronze::shader {

struct RewriteOptions {
  // CPU only: buffer pointer parameters become bounds-checked views
  // (bronze_bounded<T>), and an access out of range is recorded instead of made.
  bool validate = false;
  // Under validate: false builds the buffers as plain pointers, for a unit
  // whose code cannot take the views (api/shader.cpp: build_module); the
  // fences around the buffers (backends/cpu/fenced_buffers.hpp) still check it.
  bool checked_buffers = true;
  bool wraps_buffers() const { return validate && checked_buffers; }
  // CUDA only: kernels' threadgroup arrays are references into dynamic
  // shared memory, each kernel's from offset 0 in declaration order
  // (bronze_rt::tg_carve), for kernels over the 48 KiB of static shared
  // memory a CUDA function may declare.
  bool carve_threadgroup = false;
  // CUDA only: read-only buffers (`const` or `constant`, bound by pointer)
  // are __restrict__ entry parameters, as a CUDA C++ author writes them: the
  // compiler may then move their loads across the kernel's stores and read
  // them through the read-only cache. That holds while no buffer the kernel
  // can write overlaps one of them (read_only_overlaps_written): launches
  // that bind such an alias run the kernel built without it.
  bool restrict_read_only = true;
  // The kernels [first_kernel, last_kernel) get entries: a big unit builds
  // in parts, each part's module with its range of the kernels, the other
  // kernels' explicit instantiations dropped (the compilers' time goes to
  // instantiating kernels, so parts build in parallel).
  std::size_t first_kernel = 0, last_kernel = SIZE_MAX;
  bool has_entry(std::size_t k) const { return k >= first_kernel && k < last_kernel; }
  // The unit a library is checked with when compiled (its kernels are built
  // on first use): the kernels' instantiations and binding plans with their
  // assertions, but no entries or layout tables, which are bronze's code
  // (and three quarters of the compiler's work on the unit); built with the
  // compiler's semantic analysis alone (runtime::ModuleSource::check_only).
  bool check_only = false;
};

// A launch's buffer as the kernel sees it: its bytes, and whether the
// kernel may write them (a buffer that is not read-only, or a pointer in
// an argument buffer).
struct BufferUse {
  std::uintptr_t begin = 0, end = 0;
  bool written = false;
};
// Whether a read-only buffer shares bytes with one the kernel may write: the
// launch breaks restrict_read_only's premise.
inline bool read_only_overlaps_written(const std::vector<BufferUse>& uses) {
  for (const BufferUse& r : uses)
    if (!r.written && r.begin < r.end)
      for (const BufferUse& w : uses)
        if (w.written && w.begin < r.end && r.begin < w.end) return true;
  return false;
}

// What the shared edits spell differently per target: each backend's code
// generator gives its own.
struct TargetSpelling {
  const char* threadgroup_storage;  // a threadgroup variable's storage ("static thread_local", "__shared__")
  bool drop_gnu_extension;          // `__extension__` before ggml's anonymous unions: NVRTC refuses it there
  // Clang's loop pragmas (`#pragma clang loop unroll(full)`, MLX's and
  // llama.cpp's unroll macros) in a compiler that ignores them: as its own
  // (`#pragma unroll`, NVRTC's), or kept as written where it has none.
  bool own_unroll_pragmas;
};

// The preprocessed unit, edited for a target.
std::string rewrite_body(const std::string& unit, const ParsedSource& parsed, const RewriteOptions& options,
                         const TargetSpelling& spelling);

// Kernel k's names in the generated code: its function's type (a typedef
// at namespace scope), its entry, and its layout table: per parameter, in
// declaration order, its slot (a buffer's or threadgroup buffer's index,
// -1 for others), whether its function constant keeps it (1 or 0), the size
// and the bronze_rt::type_code of its value type; then a 0. The runtime
// orders the call's arguments by those slots (types.hpp's apply_layout).
inline std::string function_type(std::size_t k) { return "bronze_fn_" + std::to_string(k); }
inline std::string entry_symbol(std::size_t k) { return "bronze_entry_" + std::to_string(k); }
inline std::string layout_symbol(std::size_t k) { return "bronze_layout_" + std::to_string(k); }
constexpr std::size_t kLayoutWordsPerParam = 4;
inline std::size_t layout_words(std::size_t params) { return kLayoutWordsPerParam * params + 1; }

// The binding plan of the kernel function a ParsedKernel names (a
// constexpr array of bronze_rt::plan_param, one per parameter): its
// indices and function constants as the compiler evaluates them, in the
// kernel's own namespace; static_asserts at the user's lines refuse what
// Metal refuses (an index used twice, outside Metal's range).
std::string plan_name(const ParsedKernel& pk);  // qualified from bronze_msl
// The plans of the kernels [first_kernel, last_kernel), and each kernel's
// checks of its function type (it returns void, its thread-position
// attributes are uint or ushort values), for the entries' part of the file.
std::string binding_plans(const ParsedSource& ps, const RewriteOptions& options);

// A kernel's arguments reach its entry in entry order: the buffers and
// values (ParamKind::Buffer and Scalar) in declaration order, those a
// function constant removed included; entry_position(pk, i) is parameter
// i's place there.
std::size_t entry_position(const ParsedKernel& pk, std::size_t i);
// A function constant's companions in the generated unit, beside it:
// whether a value was given (is_function_constant_defined), and its index.
inline std::string defined_name(const std::string& constant) { return "bronze_fc_defined_" + constant; }
inline std::string index_name(const std::string& constant) { return "bronze_fc_index_" + constant; }

// "bronze_rt::plan_param's present of parameter i", a constant expression.
std::string present_expr(const ParsedKernel& pk, std::size_t i);
// The kernel's threadgroup arrays' bytes (a uint64). CPU: always; CUDA:
// where they are carved from dynamic shared memory, each rounded to 16.
inline std::string tgmem_symbol(std::size_t k) { return "bronze_tgmem_" + std::to_string(k); }
// The kernel's [[max_total_threads_per_threadgroup(n)]]: a constant the
// entries' code declares in the kernel's namespace, where n's names are
// (max_threads_decl, "" where the kernel has no limit), by its name
// (max_threads_name). CUDA bounds the entry's launch by it (registers are
// allotted for n threads, as Metal's compiler does); the CPU exports it as
// a uint64 (max_threads_symbol, 0: no limit), which its loader reads.
std::string max_threads_decl(const ParsedKernel& pk, std::size_t k);
std::string max_threads_name(const ParsedKernel& pk, std::size_t k);
inline std::string max_threads_symbol(std::size_t k) { return "bronze_max_threads_" + std::to_string(k); }

// "bronze_rt::param_t<bronze_fn_3, 2>": the C++ type of the kernel's i-th parameter.
std::string param_type(std::size_t k, std::size_t i);

// The expression an entry passes for a thread-position attribute parameter,
// from a bronze_rt::ids named `id`.
std::string attribute_expr(std::size_t k, std::size_t i, const KernelParam& p);

// The typedef of kernel k's function type and the initializer of its layout table.
std::string function_typedef(const ParsedKernel& pk, std::size_t k);
std::string layout_initializer(const ParsedKernel& pk, std::size_t k);

// Buffer pointers become bounds-checked views (RewriteOptions::wraps_buffers).
inline bool checked(const ParsedParam& p, bool wraps_buffers) {
  return wraps_buffers && p.info.kind == ParamKind::Buffer && p.pointer;
}

// The generated file: the preamble (macros the headers read), the emulation
// header, then the edited unit and the entries, both inside namespace
// bronze_msl.
std::string generated_file(const std::string& body, const std::string& entries, const std::string& preamble);

}  // namespace bronze::shader
