// The rewrite rules of the Metal -> C++ rewrite, one per file, in the order
// rewrite_body applies them (rule.hpp: how their edits combine). Each has
// golden input -> output tests (tests/cpp/test_rewrite_rules.cpp).
#pragma once

#include "shader/rules/rule.hpp"

namespace bronze::shader::rules {

using Rule = void (*)(const Input&, Edits&);

// validate=True: buffer pointer parameters become bounds-checked views, and
// reinterpret_cast takes their pointer.
void checked_buffers(const Input&, Edits&);
// Blanks what the parse dropped and other parts' kernel instantiations.
void dropped_declarations(const Input&, Edits&);
// [[function_constant]] declarations become constexpr values with their
// companions; is_function_constant_defined(c) reads one.
void function_constants(const Input&, Edits&);
// `#pragma unroll (expr)` the preprocessor left unexpanded: a plain unroll;
// Clang's loop unroll pragmas as the target's own.
void unroll_pragmas(const Input&, Edits&);
// `1.5h` becomes a half cast, an unsuffixed floating literal a float.
void float_literals(const Input&, Edits&);
// `::x` names the user's global namespace, bronze_msl.
void global_namespace(const Input&, Edits&);
// GNU designated array initializers (`{ [0 ... N-1] = 0 }`) become stores.
void designated_arrays(const Input&, Edits&);
// `[[...]]` attribute groups are blanked (the parse has read them).
void attributes(const Input&, Edits&);
// C compound literals `(T){...}` become C++ values.
void compound_literals(const Input&, Edits&);
// Address spaces and `kernel` are blanked; `constant` becomes const.
void address_spaces(const Input&, Edits&);
// Threadgroup variables become the target's group storage.
void threadgroup_variables(const Input&, Edits&);
// Helpers that reach a collective take their caller (the CPU's call chains).
void call_chains(const Input&, Edits&);
// A class's conversion to float (or double) gets an explicit one on to half.
void half_conversions(const Input&, Edits&);

// Whether the `threadgroup` at token i declares a group variable (in a
// function body; not a pointer, a reference, a parameter or a qualifier).
bool threadgroup_variable(const Input&, std::size_t i);

inline constexpr Rule kTokenRules[] = {checked_buffers, dropped_declarations, function_constants, unroll_pragmas,
                                       float_literals,  global_namespace,     designated_arrays,  attributes,
                                       compound_literals, address_spaces,     threadgroup_variables,
                                       call_chains,       half_conversions};

}  // namespace bronze::shader::rules
