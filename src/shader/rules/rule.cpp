#include "shader/rules/rule.hpp"

#include <algorithm>

namespace bronze::shader::rules {

Input make_input(const std::string& src, const ParsedSource& ps, const RewriteOptions& options,
                 const TargetSpelling& spelling) {
  Input in{src, ps, options, spelling, {}};
  in.depth.reserve(ps.tokens.size());
  int d = 0;
  for (const Token& t : ps.tokens) {
    in.depth.push_back(d);
    if (t.text == "{") ++d;
    if (t.text == "}") --d;
  }
  return in;
}

std::string apply_edits(const std::string& src, Edits edits) {
  std::stable_sort(edits.begin(), edits.end(), [](const Edit& a, const Edit& b) {
    if (a.offset != b.offset) return a.offset < b.offset;
    if ((a.length == 0) != (b.length == 0)) return a.length == 0;
    return a.length > b.length;
  });
  std::string out;
  out.reserve(src.size() + src.size() / 8);
  std::size_t pos = 0;
  for (const Edit& e : edits) {
    if (e.offset < pos) continue;  // inside an edit that covers it
    out.append(src, pos, e.offset - pos);
    out += e.text;
    pos = e.offset + e.length;
  }
  out.append(src, pos, std::string::npos);
  return out;
}

std::size_t closing(const std::vector<Token>& t, std::size_t after_open) {
  return find_at_depth(t, after_open, [](const std::string&) { return false; });
}

Edit blank(const Token& tok) { return {tok.offset, tok.text.size(), std::string(tok.text.size(), ' ')}; }

Edit blank_range(const std::string& src, const std::vector<Token>& t, std::size_t first, std::size_t last) {
  std::size_t b = t[first].offset, e = t[last].offset + t[last].text.size();
  std::string spaces = src.substr(b, e - b);
  for (char& c : spaces)
    if (c != '\n') c = ' ';
  for (std::size_t k = first; k <= last; ++k)  // #line directives stay: they keep the lines
    if (t[k].kind == Token::Preproc) spaces.replace(t[k].offset - b, t[k].text.size(), t[k].text);
  return {b, e - b, spaces};
}

std::string text_of(const std::string& src, const std::vector<Token>& t, std::size_t a, std::size_t b) {
  return src.substr(t[a].offset, t[b].offset + t[b].text.size() - t[a].offset);
}

}  // namespace bronze::shader::rules
