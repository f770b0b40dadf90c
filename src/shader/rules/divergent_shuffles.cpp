#include "shader/rules/divergent_shuffles.hpp"

#include <set>
#include <vector>

#include "shader/lexer.hpp"

namespace bronze::shader::rules {
namespace {

// Shuffles that read a lane named by the call (not by the active set).
bool reads_a_named_lane(const std::string& f) {
  static const std::set<std::string> names = {
      "simd_shuffle",          "simd_shuffle_up",        "simd_shuffle_down",        "simd_shuffle_xor",
      "simd_broadcast",        "simd_shuffle_and_fill_up", "simd_shuffle_and_fill_down", "quad_shuffle",
      "quad_shuffle_up",       "quad_shuffle_down",      "quad_shuffle_xor",         "quad_broadcast",
      "quad_shuffle_and_fill_up", "quad_shuffle_and_fill_down"};
  return names.count(f) > 0;
}

class Hoist {
 public:
  explicit Hoist(const std::string& s) : s_(s), t_(lex(s)) {}

  std::string run() {
    std::string out;
    std::size_t pos = 0;
    for (std::size_t i = 0; i + 1 < t_.size(); ++i) {
      if (!is(i, "if") || !is(i + 1, "(") || (i > 0 && is(i - 1, "else")) || (i > 0 && is(i - 1, "constexpr")))
        continue;
      const std::size_t cond_end = close(i + 1);
      if (!cond_end || !pure(i + 2, cond_end)) continue;
      // The body: one statement, or one statement in braces.
      std::size_t b = cond_end + 1, stmt_end, after;
      const bool braced = is(b, "{");
      if (braced) ++b;
      stmt_end = statement_end(b);
      if (!stmt_end) continue;
      after = stmt_end + 1;
      if (braced) {
        if (!is(after, "}")) continue;
        ++after;
      }
      if (is(after, "else")) continue;
      // One shuffle in the statement, with pure operands.
      std::size_t call = 0, calls = 0;
      for (std::size_t k = b; k < stmt_end; ++k)
        if (t_[k].kind == Token::Ident && reads_a_named_lane(t_[k].text) && is(k + 1, "(")) {
          call = k;
          ++calls;
        }
      if (calls != 1) continue;
      const std::size_t call_end = close(call + 1);
      if (!call_end || call_end >= stmt_end || !pure(call + 2, call_end)) continue;
      const std::string name = "bronze_shuffled_" + std::to_string(count_++);
      out.append(s_, pos, t_[i].offset - pos);
      out += "{ auto " + name + " = " + one_line(t_[call].offset, end_of(call_end)) + "; ";
      out.append(s_, t_[i].offset, t_[call].offset - t_[i].offset);
      out += name + newlines(t_[call].offset, end_of(call_end));
      out.append(s_, end_of(call_end), end_of(after - 1) - end_of(call_end));
      out += " }";
      pos = end_of(after - 1);
      i = after - 1;
    }
    out.append(s_, pos, std::string::npos);
    return out;
  }

 private:
  const std::string& s_;
  std::vector<Token> t_;
  int count_ = 0;

  bool is(std::size_t k, const char* x) const { return k < t_.size() && t_[k].text == x; }
  std::size_t end_of(std::size_t k) const { return t_[k].offset + t_[k].text.size(); }
  bool adjacent(std::size_t k) const { return k + 1 < t_.size() && end_of(k) == t_[k + 1].offset; }

  // The ')' closing the '(' at k, or 0.
  std::size_t close(std::size_t k) const {
    int depth = 0;
    for (; k < t_.size() && t_[k].kind != Token::End; ++k) {
      if (t_[k].kind == Token::Preproc) return 0;
      if (is(k, "(")) ++depth;
      if (is(k, ")") && --depth == 0) return k;
      if (is(k, ";") || is(k, "{") || is(k, "}")) return 0;
    }
    return 0;
  }
  // The ';' ending the expression statement at k, or 0 (a statement of
  // another kind, or a compound one).
  std::size_t statement_end(std::size_t k) const {
    if (t_[k].kind == Token::Ident &&
        (is(k, "if") || is(k, "for") || is(k, "while") || is(k, "do") || is(k, "switch") || is(k, "return")))
      return 0;
    int depth = 0;
    for (; k < t_.size() && t_[k].kind != Token::End; ++k) {
      if (t_[k].kind == Token::Preproc || is(k, "{") || is(k, "}")) return 0;
      if (is(k, "(") || is(k, "[")) ++depth;
      if (is(k, ")") || is(k, "]")) --depth;
      if (depth == 0 && is(k, ";")) return k;
    }
    return 0;
  }
  // Tokens [a, b) have no side effects: no assignment, increment, decrement
  // or call (a parenthesis after a name), and no lambda.
  bool pure(std::size_t a, std::size_t b) const {
    for (std::size_t k = a; k < b; ++k) {
      const Token& x = t_[k];
      if (x.kind == Token::Preproc) return false;
      if (is(k, "(") && k > a && t_[k - 1].kind == Token::Ident) return false;
      if (is(k, "[") && (k == a || t_[k - 1].kind == Token::Punct) && !is(k - 1, ")") && !is(k - 1, "]")) return false;
      if ((is(k, "+") || is(k, "-")) && adjacent(k) && t_[k + 1].text == x.text) return false;
      if (is(k, "=")) {
        const bool compares = (adjacent(k) && is(k + 1, "=")) ||
                              (k > a && adjacent(k - 1) && (is(k - 1, "=") || is(k - 1, "!") || is(k - 1, "<") || is(k - 1, ">")));
        const bool shift_assign = k > a + 1 && adjacent(k - 1) && adjacent(k - 2) &&
                                  ((is(k - 1, "<") && is(k - 2, "<")) || (is(k - 1, ">") && is(k - 2, ">")));
        if (!compares || shift_assign) return false;
      }
    }
    return true;
  }
  std::string one_line(std::size_t b, std::size_t e) const {
    std::string x = s_.substr(b, e - b);
    for (char& c : x)
      if (c == '\n') c = ' ';
    return x;
  }
  std::string newlines(std::size_t b, std::size_t e) const {
    std::string n;
    for (std::size_t k = b; k < e; ++k)
      if (s_[k] == '\n') n += '\n';
    return n;
  }
};

}  // namespace

std::string hoist_divergent_shuffles(const std::string& body) {
  for (const char* f : {"simd_shuffle", "simd_broadcast", "quad_shuffle", "quad_broadcast"})
    if (body.find(f) != std::string::npos) return Hoist(body).run();
  return body;
}

}  // namespace bronze::shader::rules
