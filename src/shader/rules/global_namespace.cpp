// The unit compiles inside namespace bronze_msl, so the user's global
// namespace is bronze_msl: `::x` becomes `::bronze_msl::x` (a `::` that
// continues a name, `a::b`, stays).
#include "shader/rules/rules.hpp"

namespace bronze::shader::rules {

void global_namespace(const Input& in, Edits& edits) {
  const auto& t = in.ps.tokens;
  for (std::size_t i = 0; t[i].kind != Token::End; ++i)
    if (t[i].text == "::" && t[i].kind != Token::Preproc && t[i + 1].kind == Token::Ident && global_qualifier(t, i))
      edits.push_back({t[i].offset, t[i].text.size(), "::bronze_msl::"});
}

}  // namespace bronze::shader::rules
