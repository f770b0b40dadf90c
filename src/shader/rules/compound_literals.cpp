// A C compound literal, `(float4){ a, b, c, d }` (gpt-oss's kernels): Clang
// and G++ take it, NVRTC not; without the parentheses it is C++'s
// `float4{...}`. With designators, `(S){ .a = x, .b = y }`, which NVRTC
// takes only as C++20, it becomes a lambda that sets each field of a
// value-initialized S (edits around the tokens, so lines and the edits
// inside stay). Only where an expression starts: `if (x) {` and
// `f(int) {` follow a name or a ')'.
//   v = (float2){ 1, 2 };        ->  v =  float2 { 1, 2 };
//   s = (S){ .a = 1, .b = 2 };   ->  s = [&]() { S bronze_literal{}; bronze_literal.a = 1; bronze_literal.b = 2 ; return bronze_literal; }();
#include <set>

#include "shader/rules/rules.hpp"

namespace bronze::shader::rules {
namespace {
// The '.' of each designator and each ',' between them in the braces
// opening at `open` (`{ .a = x, .b = f(y, z) }`); empty unless every
// element is designated.
std::vector<std::size_t> designators(const std::vector<Token>& t, std::size_t open) {
  std::vector<std::size_t> marks;
  for (std::size_t q = open + 1; t[q].text != "}";) {
    if (t[q].text != "." || t[q + 1].kind != Token::Ident || t[q + 2].text != "=") return {};
    marks.push_back(q);
    q = find_at_depth(t, q, [](const std::string& x) { return x == ","; });
    if (t[q].text != ",") break;  // the closing brace, or the end
    marks.push_back(q++);
  }
  return marks;
}
}  // namespace

void compound_literals(const Input& in, Edits& edits) {
  static const std::set<std::string> starts = {"=", "(", ",", "return", "?", ":", "{", "[", "+", "-", "*", "/"};
  const auto& t = in.ps.tokens;
  for (std::size_t i = 0; t[i].kind != Token::End; ++i) {
    if (i == 0 || t[i].text != "(" || t[i].kind == Token::Preproc || t[i + 1].kind != Token::Ident) continue;
    std::size_t k = i + 1;
    while (t[k + 1].text == "::" && t[k + 2].kind == Token::Ident) k += 2;
    if (t[k + 1].text != ")" || t[k + 2].text != "{" || !starts.count(t[i - 1].text)) continue;
    if (std::vector<std::size_t> marks = designators(t, k + 2); !marks.empty()) {
      edits.push_back({t[i].offset, 1, in.depth[i] > 0 ? "[&]() { " : "[]() { "});
      edits.push_back({t[k + 1].offset, 1, " bronze_literal{};"});
      edits.push_back(blank(t[k + 2]));
      for (std::size_t q : marks) edits.push_back({t[q].offset, 1, t[q].text == "." ? "bronze_literal." : ";"});
      edits.push_back({t[closing(t, k + 3)].offset, 1, "; return bronze_literal; }()"});
    } else {
      edits.push_back(blank(t[i]));
      edits.push_back(blank(t[k + 1]));
    }
    i = k + 1;
  }
}

}  // namespace bronze::shader::rules
