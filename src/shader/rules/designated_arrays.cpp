// GNU designated initializers of a local array, which Clang (Metal) takes
// and G++ refuses in C++ (llama.cpp's ggml-metal): the array is declared
// with `{}` and the designated values stored right after it.
//   float s[N] = { [0 ... N-1] = 0.0f, [3] = 1 };
//   -> float s[N] = {}; bronze_rt::fill_range(s, 0, N-1, (0.0f )); s[3] = (1 );
#include "shader/rules/float_literals.hpp"
#include "shader/rules/rules.hpp"

namespace bronze::shader::rules {
namespace {
// Given the braces [open, close], the statements that store the designated
// values; empty where this is not such an initializer.
std::string designated_fills(const std::string& src, const std::vector<Token>& t, std::size_t open,
                             std::size_t close) {
  if (open < 4 || t[open - 1].text != "=" || t[open - 2].text != "]" || t[close].text != "}" ||
      t[close + 1].text != ";")
    return "";
  std::size_t b = open - 2;  // back over the declarator's brackets to its name
  for (int d = 0; b > 0; --b) {
    d += t[b].text == "]" ? 1 : t[b].text == "[" ? -1 : 0;
    if (d == 0 && t[b - 1].text != "]") break;
  }
  if (b == 0 || t[b - 1].kind != Token::Ident) return "";
  const std::string& name = t[b - 1].text;
  std::string out;
  for (std::size_t k = open + 1; k < close;) {
    if (t[k].text != "[") return "";
    std::size_t rb = k, dots = 0;
    for (int d = 0; rb < close; ++rb) {
      d += t[rb].text == "[" || t[rb].text == "(" ? 1 : t[rb].text == "]" || t[rb].text == ")" ? -1 : 0;
      if (d == 1 && !dots && t[rb].text == "." && t[rb + 1].text == "." && t[rb + 2].text == ".") dots = rb;
      if (d == 0) break;
    }
    if (rb >= close || t[rb + 1].text != "=") return "";
    std::size_t v = rb + 2, end = v;  // the value: up to a comma outside brackets
    for (int d = 0; end < close && !(d == 0 && t[end].text == ","); ++end)
      d += t[end].text == "(" || t[end].text == "[" || t[end].text == "{" ? 1
           : t[end].text == ")" || t[end].text == "]" || t[end].text == "}" ? -1 : 0;
    if (end == v) return "";
    std::string value = "(";  // its literals edited as everywhere else
    for (std::size_t q = v; q < end; ++q) {
      std::string lit = t[q].kind == Token::Number ? literal_edit(t[q].text) : "";
      value += (lit.empty() ? t[q].text : lit) + " ";
    }
    value += ")";
    if (dots) out += " bronze_rt::fill_range(" + name + ", " + text_of(src, t, k + 1, dots - 1) + ", " +
                     text_of(src, t, dots + 3, rb - 1) + ", " + value + ");";
    else out += " " + name + "[" + text_of(src, t, k + 1, rb - 1) + "] = " + value + ";";
    k = end + (end < close ? 1 : 0);
  }
  return out;
}
}  // namespace

void designated_arrays(const Input& in, Edits& edits) {
  const auto& t = in.ps.tokens;
  for (std::size_t i = 0; t[i].kind != Token::End; ++i) {
    if (t[i].text != "{" || t[i + 1].text != "[" || t[i + 2].text == "[") continue;
    std::size_t close = closing(t, i + 1);
    if (std::string fills = designated_fills(in.src, t, i, close); !fills.empty()) {
      edits.push_back({t[i].offset, t[close].offset + 1 - t[i].offset, "{}"});
      edits.push_back({t[close + 1].offset + 1, 0, fills});
      i = close;
    }
  }
}

}  // namespace bronze::shader::rules
