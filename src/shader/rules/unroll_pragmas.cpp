// `#pragma unroll (MIN(DK8/2, 4*NSG))`: the preprocessor that ran before
// leaves pragmas unexpanded and takes its macros with it, so a count that is
// not a number becomes a plain `#pragma unroll` (the unrolling is a hint).
// Clang's `#pragma clang loop unroll(full)` (MLX's STEEL_PRAGMA_UNROLL),
// `unroll_count(n)` and `unroll(disable)` become `#pragma unroll`,
// `#pragma unroll n` and `#pragma unroll 1` where the target spells them so
// (TargetSpelling::own_unroll_pragmas): NVRTC ignores Clang's, and a loop
// over a private array it leaves rolled keeps the array in local memory
// (MLX's steel GEMM: 48 local loads an iteration, gone when unrolled).
#include "shader/rules/rules.hpp"

#include <algorithm>

#include "shader/lexer.hpp"

namespace bronze::shader::rules {
namespace {
// `#pragma clang loop ...`'s unroll option as the target's pragma, or "".
std::string own_unroll(const std::vector<Token>& d) {
  for (std::size_t i = 3; i + 3 < d.size(); ++i) {
    if (d[i + 1].text != "(" || d[i + 3].text != ")") continue;
    const std::string &option = d[i].text, &value = d[i + 2].text;
    if (option == "unroll" && value == "full") return "#pragma unroll";
    if (option == "unroll" && value == "disable") return "#pragma unroll 1";
    if (option == "unroll_count" && d[i + 2].kind == Token::Number) return "#pragma unroll " + value;
  }
  return "";
}
}  // namespace

void unroll_pragmas(const Input& in, Edits& edits) {
  for (const Token& tok : in.ps.tokens) {
    // A unit has a #line every few lines: look closer only at unrolls.
    if (tok.kind != Token::Preproc || tok.text.find("unroll") == std::string::npos) continue;
    std::vector<Token> d = lex(tok.text.substr(1));
    if (d.size() > 2 && d[0].text == "pragma" && d[1].text == "unroll" &&
        std::any_of(d.begin() + 2, d.end(), [](const Token& x) { return x.kind == Token::Ident; }))
      edits.push_back({tok.offset, tok.text.size(), "#pragma unroll"});
    else if (in.spelling.own_unroll_pragmas && d.size() > 3 && d[0].text == "pragma" && d[1].text == "clang" &&
             d[2].text == "loop")
      if (std::string own = own_unroll(d); !own.empty()) edits.push_back({tok.offset, tok.text.size(), own});
  }
}

}  // namespace bronze::shader::rules
