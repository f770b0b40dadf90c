// An attribute group, `[[buffer(0)]]`, `[[host_name("f")]]`, is blanked
// whole: the parse has read what it says, and neither compiler knows
// Metal's attributes. One covering edit, so no other rule edits inside.
#include "shader/rules/rules.hpp"

namespace bronze::shader::rules {

void attributes(const Input& in, Edits& edits) {
  const auto& t = in.ps.tokens;
  for (std::size_t i = 0; t[i].kind != Token::End; ++i) {
    if (t[i].text != "[" || t[i + 1].text != "[" || t[i].kind == Token::Preproc) continue;
    int d = 0;
    std::size_t k = i;
    for (; t[k].kind != Token::End; ++k) {
      if (t[k].text == "[") ++d;
      if (t[k].text == "]" && --d == 0) break;
    }
    if (t[k].kind == Token::End) return;  // unclosed: the compiler reports it
    edits.push_back(blank_range(in.src, t, i, k));
    i = k;
  }
}

}  // namespace bronze::shader::rules
