#include "shader/rules/conditional_operands.hpp"

#include <algorithm>
#include <vector>

#include "shader/lexer.hpp"

namespace bronze::shader::rules {
namespace {

class Conditionals {
 public:
  explicit Conditionals(const std::string& s) : s_(s), t_(lex(s)), in_function_(t_.size(), false) {
    std::vector<bool> open;  // per open brace: a function body, or inside one
    for (std::size_t k = 0; k < t_.size(); ++k) {
      in_function_[k] = !open.empty() && open.back();
      if (is(k, "{")) open.push_back(in_function_[k] || (k > 0 && after_parameters(k - 1)));
      if (is(k, "}") && !open.empty()) open.pop_back();
    }
  }
  std::string run() {
    std::size_t n = t_.size() - 1;  // the last is End
    if (n == 0) return s_;
    return s_.substr(0, t_[0].offset) + text(0, n) + s_.substr(end_of(n - 1));
  }

 private:
  const std::string& s_;
  std::vector<Token> t_;
  std::vector<bool> in_function_;

  // Whether a `{` after token k opens a function body: it follows the
  // parameter list, its qualifiers or a constructor's member initializers.
  bool after_parameters(std::size_t k) const {
    while (k > 0 && (is(k, "const") || is(k, "noexcept") || is(k, "override") || is(k, "final") ||
                     is(k, "mutable") || is(k, "volatile") || is(k, "&")))
      --k;
    return is(k, ")");
  }

  std::size_t end_of(std::size_t k) const { return t_[k].offset + t_[k].text.size(); }
  bool is(std::size_t k, const char* x) const { return t_[k].text == x; }
  bool opens(std::size_t k) const { return is(k, "(") || is(k, "[") || is(k, "{"); }
  bool closes(std::size_t k) const { return is(k, ")") || is(k, "]") || is(k, "}"); }
  bool adjacent(std::size_t k) const { return end_of(k) == t_[k + 1].offset; }
  bool logical(std::size_t k) const {  // && and || are two tokens here
    return (is(k, "&") || is(k, "|")) && adjacent(k) && t_[k + 1].text == t_[k].text;
  }

  // The ':' that matches the '?' at q, or 0.
  std::size_t colon(std::size_t q, std::size_t stop) const {
    int depth = 0, nested = 0;
    for (std::size_t k = q + 1; k < stop; ++k) {
      if (t_[k].kind == Token::Preproc) return 0;
      if (opens(k)) ++depth;
      else if (closes(k) && --depth < 0) return 0;
      else if (depth == 0 && is(k, ";")) return 0;
      else if (depth == 0 && is(k, "?")) ++nested;
      else if (depth == 0 && is(k, ":") && nested-- == 0) return k;
    }
    return 0;
  }

  // The '>' that closes a template argument list opened by the '<' at k, or 0
  // where it is a less-than.
  std::size_t angle_close(std::size_t k, std::size_t stop) const {
    int depth = 0, angle = 0;
    for (; k < stop; ++k) {
      if (opens(k)) ++depth;
      else if (closes(k) && --depth < 0) return 0;
      else if (depth == 0 && (is(k, ";") || is(k, "?") || logical(k))) return 0;
      else if (depth == 0 && is(k, "<")) ++angle;
      else if (depth == 0 && is(k, ">") && --angle == 0) return k;
    }
    return 0;
  }

  // Whether the token at k starts one of << >> <= >=, which are two tokens here.
  bool two_token_operator(std::size_t k) const {
    return adjacent(k) && (is(k + 1, "=") || t_[k + 1].text == t_[k].text);
  }

  // Whether the conditional whose '?' is at q stands in a template argument
  // list (`vec<T, N ? 1 : 2>`): the nearest bracket open around it is a '<'
  // after a name. Elsewhere (`(asc ? a < b : a > b)`) a '>' compares.
  bool in_template_arguments(std::size_t q) const {
    int depth = 0, angles = 0;
    auto comparison = [&](std::size_t k) { return two_token_operator(k) || (k > 0 && two_token_operator(k - 1)); };
    for (std::size_t k = q; k-- > 0;) {
      if (t_[k].kind == Token::Preproc || (depth == 0 && (is(k, ";") || is(k, "{") || is(k, "}")))) return false;
      if (closes(k)) ++depth;
      else if (opens(k) && --depth < 0) return false;
      else if (depth > 0 || comparison(k)) continue;
      else if (is(k, ">")) ++angles;
      else if (is(k, "<") && angles-- == 0) return k > 0 && t_[k - 1].kind == Token::Ident;
    }
    return false;
  }

  // One past the conditional's third operand, which starts at `from`;
  // `templated`: the conditional is a template argument.
  std::size_t operand_end(std::size_t from, std::size_t stop, bool templated) const {
    int depth = 0, nested = 0;
    std::size_t k = from;
    for (; k < stop; ++k) {
      if (t_[k].kind == Token::Preproc) return 0;
      if (opens(k)) { ++depth; continue; }
      if (closes(k)) { if (--depth < 0) break; continue; }
      if (depth > 0) continue;
      const std::string& x = t_[k].text;
      if (x == ";" || x == ",") break;
      if (x == "?") ++nested;
      if (x == ":" && nested-- == 0) break;
      if (x == "<" || x == ">") {
        if (two_token_operator(k)) { ++k; continue; }
        if (x == ">") {
          if (templated) break;  // closes the template argument list around the conditional
          continue;
        }
        if (std::size_t c = angle_close(k, stop)) k = c;
      }
    }
    return k;
  }

  // Whether cond() and decltype can take tokens [a, b): not nothing, not a
  // void expression, no lambda (decltype refuses one before C++20).
  bool takes(std::size_t a, std::size_t b) const {
    if (a >= b || is(a, "throw") || (is(a, "(") && is(a + 1, "void") && is(a + 2, ")")) ||
        (is(a, "static_cast") && is(a + 2, "void")))
      return false;
    for (std::size_t k = a; k < b; ++k)
      if (is(k, "[") && (k == a || (t_[k - 1].kind != Token::Ident && !closes(k - 1)))) return false;
    return true;
  }
  bool literal(std::size_t a, std::size_t b) const {
    if (b > a && (is(a, "-") || is(a, "+"))) ++a;
    return b == a + 1 && t_[a].kind == Token::Number;
  }

  // The text of tokens [a, b) with their conditionals wrapped.
  std::string text(std::size_t a, std::size_t b) {
    if (a >= b) return "";
    std::string out;
    std::size_t pos = t_[a].offset;
    for (std::size_t q = a; q < b; ++q) {
      if (!is(q, "?") || !in_function_[q]) continue;
      std::size_t m = colon(q, b), e = m ? operand_end(m + 1, b, in_template_arguments(q)) : 0;
      if (!m || !e || !takes(q + 1, m) || !takes(m + 1, e) || (literal(q + 1, m) && literal(m + 1, e))) continue;
      std::string first = text(q + 1, m), second = text(m + 1, e);
      auto one_line = [](std::string x) {
        std::replace(x.begin(), x.end(), '\n', ' ');
        return x;
      };
      out.append(s_, pos, t_[q + 1].offset - pos);
      out += "bronze_rt::cond<decltype((" + one_line(second) + "))>((" + first + "))";
      out.append(s_, end_of(m - 1), t_[m + 1].offset - end_of(m - 1));
      out += "bronze_rt::cond<decltype((" + one_line(first) + "))>((" + second + "))";
      pos = end_of(e - 1);
      q = e - 1;
    }
    out.append(s_, pos, end_of(b - 1) - pos);
    return out;
  }
};

}  // namespace

std::string convert_conditional_operands(const std::string& body) { return Conditionals(body).run(); }

}  // namespace bronze::shader::rules
