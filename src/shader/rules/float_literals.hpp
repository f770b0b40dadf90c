// A numeric literal as the compilers must read it (rules/float_literals.cpp).
#pragma once

#include <string>

namespace bronze::shader::rules {

// Metal's half literal `1.5h` becomes a cast, `((half)1.5)`, and an
// unsuffixed floating literal a float, `2.0f` (Metal has no double). Empty
// where the literal stays as written.
std::string literal_edit(const std::string& literal);

}  // namespace bronze::shader::rules
