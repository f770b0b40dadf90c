// A rewrite rule of the Metal -> C++ rewrite (on the edited text, after the
// token rules of rules.hpp): conditional operators keep
// Metal's arithmetic conversions.
//
// Conditional operators whose operands may mix a class-type half or bfloat
// with another arithmetic type (bronze_metal.h, bronze_rt::cond): each
// operand goes through cond<decltype((other))>. Runs over the edited body,
// so the copies inside decltype are what the compiler reads; they are put
// on one line, so every line keeps its number. Only in function bodies: a
// class template's static member initializer with decltype of its template
// parameters crashes G++ (MLX's steel conv loaders), and constants there mix
// no half.
#pragma once

#include <string>

namespace bronze::shader::rules {

std::string convert_conditional_operands(const std::string& body);

}  // namespace bronze::shader::rules
