// Floating literals as Metal reads them: `1.5h` is a half, and a literal
// without a suffix is a float, since Metal has no double.
//   x = 1.5h * 2.0;  ->  x = ((half)1.5) * 2.0f;
#include "shader/rules/float_literals.hpp"

#include <cctype>

#include "shader/rules/rules.hpp"

namespace bronze::shader::rules {

std::string literal_edit(const std::string& x) {
  const char last = x.back();
  const bool hex = x.size() > 1 && (x[1] == 'x' || x[1] == 'X');
  if (hex) return "";
  if (last == 'h' || last == 'H') return "((half)" + x.substr(0, x.size() - 1) + ")";
  if (x.find_first_of(".eE") != std::string::npos && (std::isdigit((unsigned char)last) || last == '.')) return x + "f";
  return "";
}

void float_literals(const Input& in, Edits& edits) {
  for (const Token& tok : in.ps.tokens)
    if (tok.kind == Token::Number)
      if (std::string lit = literal_edit(tok.text); !lit.empty()) edits.push_back({tok.offset, tok.text.size(), lit});
}

}  // namespace bronze::shader::rules
