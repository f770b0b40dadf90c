// `#pragma unroll (MIN(DK8/2, 4*NSG))`: the preprocessor that ran before
// leaves pragmas unexpanded and takes its macros with it, so a count that is
// not a number becomes a plain `#pragma unroll` (the unrolling is a hint).
#include "shader/rules/rules.hpp"

#include <algorithm>

#include "shader/lexer.hpp"

namespace bronze::shader::rules {

void unroll_pragmas(const Input& in, Edits& edits) {
  for (const Token& tok : in.ps.tokens) {
    // A unit has a #line every few lines: look closer only at unrolls.
    if (tok.kind != Token::Preproc || tok.text.find("unroll") == std::string::npos) continue;
    std::vector<Token> d = lex(tok.text.substr(1));
    if (d.size() > 2 && d[0].text == "pragma" && d[1].text == "unroll" &&
        std::any_of(d.begin() + 2, d.end(), [](const Token& x) { return x.kind == Token::Ident; }))
      edits.push_back({tok.offset, tok.text.size(), "#pragma unroll"});
  }
}

}  // namespace bronze::shader::rules
