// Finds the kernels of a preprocessed Metal translation unit and reflects
// their signatures: plain kernels (`kernel` or `[[kernel]]`, optionally
// renamed by [[host_name]]) and the template instantiations that name them
// (`template [[host_name("...")]] ...`, also the `decltype(f<T>) f<T>` form),
// inside any namespace; each parameter's role (buffer, scalar, thread
// attribute, threadgroup buffer), slot and access. Types are kept as written
// (template arguments substituted, for messages); the compiler that builds
// the code resolves them (the launch layout table, see rewrite.hpp).
#pragma once

#include <string>
#include <vector>

#include "bronze/shader.hpp"
#include "shader/lexer.hpp"

namespace bronze::shader {

struct ParsedParam {
  KernelParam info;
  bool pointer = false;    // T* (or an array, which decays to one)
  bool reference = false;  // T&
  // The parameter in the definition (validate=True rewrites buffer pointers):
  std::string def_type;    // element type as written, address spaces removed ("const T")
  std::size_t span_begin = 0, span_end = 0;  // byte offsets of the whole parameter
  std::size_t token = 0;                      // its first token (file and line for messages)
  // The [[buffer(n)]] or [[threadgroup(n)]] index as written (a C++
  // constant expression: `2`, `kIn`, `4 - 2`); empty where none is given.
  // The compiler that builds the unit evaluates it (rewrite.hpp's plans).
  std::string index_expr;
  std::size_t index_token = 0, constant_token = 0;  // the first tokens of index_expr and constant
  // [[function_constant(c)]]: the parameter exists only while c is true;
  // absent, it takes no argument and no buffer slot. Also evaluated by the
  // compiler, so `0u`, `(0)` and `0.0` are false as the code sees them.
  std::string constant;
};

// A program-scope `constant T name [[function_constant(index)]];`.
struct FunctionConstant {
  std::string name, type;
  std::string ns;          // the namespace it is declared in ("" or "a::b")
  std::string index_expr;
  std::size_t index_token = 0, constant_token = 0;  // the first tokens of index_expr and constant  // as written; the compiler evaluates it
  std::size_t first = 0, semicolon = 0;  // tokens: the declaration's first, its ';'
  bool has_constexpr = false;
};
// A value given to function constants (compile_shader's constants=, a
// specialization's), in the order given: the last that names a constant,
// by name or by index, is its value.
struct GivenConstant {
  std::string key;    // a name, or an index (decimal digits)
  std::string value;  // a C++ expression
  bool by_index() const;
};

struct ParsedKernel {
  KernelInfo info;
  // The kernel function as a pointer expression, qualified:
  // "&::bronze_msl::full", "&::bronze_msl::ns::add<float, 4>", or for
  // deduced template arguments a static_cast to the instantiation's type.
  std::string callee;
  std::vector<ParsedParam> params;
  // C++ expressions for the bytes of each threadgroup array the kernel
  // declares ("sizeof(float) * (256)"), the constants of the enclosing
  // blocks substituted.
  std::vector<std::string> threadgroup_sizes;
  // [[max_total_threads_per_threadgroup(n)]]'s n, substituted as those
  // sizes are; empty where the kernel declares no limit.
  std::string max_threads;
  // The kernel function's definition: its namespace and its parameter
  // list's first token (which names the definition's binding plan:
  // kernels instantiated from one template share it).
  std::string ns;
  std::size_t definition = 0;
  // Tokens [first, last] of the explicit instantiation that names it
  // (`template [[host_name("n")]] kernel void f<float>(...);`); empty
  // (first > last) for a kernel that is a function, not a template's.
  std::size_t instantiation_first = 1, instantiation_last = 0;
};

struct ParsedSource {
  std::vector<std::string> files;  // names of the token files (#line)
  std::vector<Token> tokens;
  std::vector<ParsedKernel> kernels;
  std::vector<FunctionConstant> function_constants;
  std::vector<GivenConstant> given;  // from the unit's kConstantPragma lines
  // Tokens of is_function_constant_defined(c) calls: the call's first and
  // last, and the last token of c's name (the compiler answers through
  // the constant's companion, rewrite.hpp's defined_name).
  struct Defined {
    std::size_t first, last, name;
  };
  std::vector<Defined> defined_queries;
  // Token ranges [first, last] to drop: member functions that differ from
  // another only in the address space of `this` (`f() threadgroup` beside
  // `f() thread`), one function in bronze's single address space; the
  // `template <>` of explicit specializations in class scope.
  std::vector<std::pair<std::size_t, std::size_t>> dropped;
  // Threadgroup arrays declared in kernel bodies (`threadgroup T name[N];`),
  // in source order: tokens of `threadgroup`, the name, the `=` or `;` after
  // the brackets, and which kernel definition holds it. CUDA may carve them
  // from dynamic shared memory (rewrite.hpp), sized as ParsedKernel's
  // threadgroup_sizes.
  struct ThreadgroupVar {
    std::size_t first, name, end, body;
  };
  std::vector<ThreadgroupVar> threadgroup_vars;
  // Helper functions that reach a collective (not kernels): tokens of their
  // parameter list's ')' and their body's '{'. On the CPU each takes where it
  // is called, so lanes that reach one collective through different calls of
  // a helper are told apart (rules::call_chains).
  struct CallChained {
    std::size_t rparen, body;
    bool no_params;
  };
  std::vector<CallChained> call_chained;
  // A class's conversion to float or double (`operator float() const`, not
  // explicit, not deleted), one per class that declares no conversion
  // template: tokens of `operator`, its `)`, and the member's last (its
  // body's `}` or its `;`). The rewrite adds its explicit way on to half
  // beside it (rules::half_conversions).
  struct FloatConversion {
    std::size_t op, rparen, last;
  };
  std::vector<FloatConversion> float_conversions;
  std::string math_mode = "fast";  // the unit's kMathModePragma
  // Where the unit has no kernel but kernel templates (a file of them that
  // other files include and instantiate): why, for a lookup's error.
  std::string no_kernels_why;
};

// Function constant values are given to a unit as its last lines,
// `#pragma bronze_function_constant <name or index> <C++ expression>`
// (preprocess.hpp's SourceOptions::constants), so a unit carries them.
constexpr const char* kConstantPragma = "bronze_function_constant";
// And the math mode, `#pragma bronze_math_mode safe|relaxed|fast`.
constexpr const char* kMathModePragma = "bronze_math_mode";
// `mode` checked: it is one of the three (ValueError otherwise).
const std::string& math_mode_name(const std::string& mode);

// `unit` is a preprocessed translation unit (preprocess.hpp). Throws
// ShaderCompileError at the user's file and line for what it cannot accept.
ParsedSource parse(const std::string& unit, const std::string& main_file);

// Declaration specifiers that may stand next to an address space.
bool is_specifier(const std::string& x);
// Whether the `::` at i starts a name at global scope (`::c10::x`) rather
// than continuing one (`a::b`): the unit's global namespace is bronze_msl.
bool global_qualifier(const std::vector<Token>& t, std::size_t i);

// Levenshtein distance, for "did you mean".
std::size_t edit_distance(const std::string& a, const std::string& b);

// Thread-position attribute name -> its value as an expression over a
// bronze_rt::ids named `id` ("id.tpig", or one computed from the fields), or
// nullptr.
const char* attribute_field(const std::string& attribute);

}  // namespace bronze::shader
