// What every rewrite rule works with. A rule reads the parse's tokens and
// proposes edits of the preprocessed unit; apply_edits makes them together.
// Edits keep the unit's lines (and columns where they can), so compiler
// messages point into the user's files through the unit's #line directives.
// Where edits overlap, the first wins: at one offset, insertions first, then
// the longest replacement, which covers the others (an attribute group
// blanked whole, a bounds-checked parameter); otherwise rules.hpp's order.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "shader/parser.hpp"
#include "shader/rewrite.hpp"

namespace bronze::shader::rules {

struct Edit {
  std::size_t offset, length;
  std::string text;
};
using Edits = std::vector<Edit>;

struct Input {
  const std::string& src;  // the preprocessed unit
  const ParsedSource& ps;  // its parse (tokens of src)
  const RewriteOptions& options;
  const TargetSpelling& spelling;
  std::vector<int> depth;  // braces open before each token
};
Input make_input(const std::string& src, const ParsedSource& ps, const RewriteOptions& options,
                 const TargetSpelling& spelling);

std::string apply_edits(const std::string& src, Edits edits);

// The first token from k on where `stop` holds outside brackets, or where
// the bracket k is in closes.
template <class Stop>
std::size_t find_at_depth(const std::vector<Token>& t, std::size_t k, Stop stop) {
  int depth = 0;
  for (; t[k].kind != Token::End; ++k) {
    const std::string& x = t[k].text;
    if (depth == 0 && stop(x)) return k;
    if (x == "(" || x == "[" || x == "{") ++depth;
    if (x == ")" || x == "]" || x == "}") --depth;
    if (depth < 0) return k;
  }
  return k;
}
// The bracket closing the one before `after_open`.
std::size_t closing(const std::vector<Token>& t, std::size_t after_open);

Edit blank(const Token& tok);
// Tokens [first, last] as spaces, their newlines and #line directives kept.
Edit blank_range(const std::string& src, const std::vector<Token>& t, std::size_t first, std::size_t last);
// The text of tokens [a, b] as the source has it.
std::string text_of(const std::string& src, const std::vector<Token>& t, std::size_t a, std::size_t b);

}  // namespace bronze::shader::rules
