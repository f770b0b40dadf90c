#include "shader/parser.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <functional>
#include <map>
#include <set>
#include <unordered_set>

#include "bronze/error.hpp"
#include "shader/types.hpp"

namespace bronze {
void KernelInfo::check_arity(std::size_t n) const {
  if (n != bound.size())
    throw TypeError("kernel '" + name + "' takes " + std::to_string(bound.size()) + " arguments, got " +
                    std::to_string(n));
}
}  // namespace bronze

namespace bronze::shader {

bool GivenConstant::by_index() const {
  return !key.empty() && std::all_of(key.begin(), key.end(), [](char c) { return c >= '0' && c <= '9'; });
}

namespace {

struct Attr {
  const char* name;
  const char* expr;  // its value, from a bronze_rt::ids named id
};
const Attr kAttributes[] = {
    {"thread_position_in_grid", "id.tpig"},
    {"thread_position_in_threadgroup", "id.tpitg"},
    {"threadgroup_position_in_grid", "id.tgpig"},
    {"threads_per_threadgroup", "id.tptg"},
    {"dispatch_threads_per_threadgroup", "id.dtptg"},
    {"threads_per_grid", "id.tpg"},
    {"threadgroups_per_grid", "id.tgpg"},
    {"thread_index_in_threadgroup", "id.tiitg"},
    {"thread_index_in_simdgroup", "id.tiisg"},
    {"simdgroup_index_in_threadgroup", "id.sgiitg"},
    {"threads_per_simdgroup", "id.tpsg"},
    {"thread_execution_width", "id.tpsg"},
    {"simdgroups_per_threadgroup", "id.sgptg"},
    {"dispatch_simdgroups_per_threadgroup", "(id.dtptg.x * id.dtptg.y * id.dtptg.z + 31u) / 32u"},
    {"thread_index_in_quadgroup", "id.tiisg % 4u"},
    {"quadgroup_index_in_threadgroup", "id.tiitg / 4u"},
    {"quadgroups_per_threadgroup", "(id.tptg.x * id.tptg.y * id.tptg.z + 3u) / 4u"},
    {"dispatch_quadgroups_per_threadgroup", "(id.dtptg.x * id.dtptg.y * id.dtptg.z + 3u) / 4u"},
};

// Metal's other attributes of kernel parameters, which bronze does not
// implement: a clear refusal, never an extra argument.
const char* const kUnsupportedAttributes[] = {
    "texture", "sampler", "stage_in", "grid_origin", "grid_size", "payload", "amplification_id",
    "amplification_count", "mesh_grid_properties", "visible_function_table", "intersection_function_table",
    "instance_acceleration_structure", "primitive_acceleration_structure", "threadgroup_imageblock"};

// The known attribute of a kernel parameter nearest to `name`, or null
// when none is near (a third of its letters or fewer differ).
const char* nearest_attribute(const std::string& name) {
  std::vector<const char*> known = {"buffer", "threadgroup", "function_constant"};
  for (const Attr& a : kAttributes) known.push_back(a.name);
  for (const char* a : kUnsupportedAttributes) known.push_back(a);
  const char* best = nullptr;
  std::size_t best_d = name.size() / 3 + 1;
  for (const char* k : known)
    if (std::size_t d = edit_distance(name, k); d < best_d) best = k, best_d = d;
  return best;
}

// Metal's functions that exchange values between the threads of a group:
// a kernel calling one (directly or through its helpers) runs its threads
// together (the CPU's cooperative path).
bool is_collective(const std::string& id) {
  static const std::set<std::string> names = {
      "threadgroup_barrier", "simdgroup_barrier", "simd_all", "simd_any", "simd_ballot", "simd_active_threads_mask",
      "simd_is_first", "simd_is_helper_thread", "simd_vote", "simd_and", "simd_or", "simd_xor", "simd_sum",
      "simd_product", "simd_max", "simd_min", "simd_minimum", "simd_maximum", "simd_broadcast",
      "simd_broadcast_first", "simd_prefix_exclusive_sum", "simd_prefix_inclusive_sum",
      "simd_prefix_exclusive_product", "simd_prefix_inclusive_product", "simd_shuffle", "simd_shuffle_up",
      "simd_shuffle_down", "simd_shuffle_xor", "simd_shuffle_rotate_up", "simd_shuffle_rotate_down",
      "simd_shuffle_and_fill_up", "simd_shuffle_and_fill_down", "quad_all", "quad_any", "quad_ballot",
      "quad_active_threads_mask", "quad_is_first", "quad_vote", "quad_and", "quad_or", "quad_xor", "quad_sum", "quad_product", "quad_max", "quad_min",
      "quad_broadcast", "quad_broadcast_first", "quad_prefix_exclusive_sum", "quad_prefix_inclusive_sum",
      "quad_prefix_exclusive_product", "quad_prefix_inclusive_product", "quad_shuffle", "quad_shuffle_up",
      "quad_shuffle_down", "quad_shuffle_xor", "quad_shuffle_rotate_up", "quad_shuffle_rotate_down",
      "quad_shuffle_and_fill_up", "quad_shuffle_and_fill_down"};
  // simdgroup_ names Metal's matrix types and functions (simdgroup_load,
  // simdgroup_float8x8, ...) and barrier: all of them.
  return names.count(id) > 0 || id.rfind("simdgroup_", 0) == 0;
}

// Metal's texture and sampler types, which bronze does not implement.
bool is_texture_type(const std::string& id) {
  static const std::set<std::string> names = {
      "texture1d", "texture1d_array", "texture2d", "texture2d_array", "texture2d_ms", "texture2d_ms_array",
      "texture3d", "texturecube", "texturecube_array", "texture_buffer", "depth2d", "depth2d_array", "depth2d_ms",
      "depth2d_ms_array", "depthcube", "depthcube_array", "sampler"};
  return names.count(id) > 0;
}

// Words that qualify a parameter's type but never name it or a type.
bool is_qualifier(const std::string& x) {
  static const std::set<std::string> q = {"const", "volatile", "restrict", "__restrict", "__restrict__",
                                          "device", "constant", "threadgroup", "thread", "threadgroup_imageblock",
                                          "struct", "class", "enum", "union", "typename"};
  return q.count(x) > 0;
}
// C++'s own type words: part of a type, never a parameter's name.
bool is_builtin_type(const std::string& x) {
  static const std::set<std::string> b = {"unsigned", "signed", "long", "short", "int", "char",
                                          "float", "double", "bool", "void"};
  return b.count(x) > 0;
}

// Keywords followed by a parenthesized operand that is not a parameter list.
bool takes_operand(const std::string& x) {
  return x == "__attribute__" || x == "alignas" || x == "decltype" || x == "__declspec" || x == "noexcept" ||
         x == "throw" || x == "sizeof" || x == "alignof" || x == "static_assert" || x == "__typeof__";
}

struct TemplateParam {
  std::string name;
  std::string default_text;
  bool is_type = false;  // typename or class (not a value, not a template template)
};

class Parser {
 public:
  Parser(const std::string& unit, const std::string& main_file) {
    out_.tokens = lex(unit, &out_.files);
    if (out_.files.empty()) out_.files.push_back(main_file);
    bool mode_given = false;
    for (const Token& tok : out_.tokens) {  // #pragma bronze_function_constant key value
      if (tok.kind != Token::Preproc) continue;
      std::vector<Token> d = lex(tok.text.substr(1));
      if (d.size() >= 4 && d[0].text == "pragma" && d[1].text == kConstantPragma) {
        std::string value;
        for (std::size_t k = 3; k + 1 < d.size(); ++k) value += (value.empty() ? "" : " ") + d[k].text;
        out_.given.push_back({d[2].text, value});
      } else if (d.size() >= 3 && d[0].text == "pragma" && d[1].text == kMathModePragma && !mode_given) {
        out_.math_mode = math_mode_name(d[2].text);
        mode_given = true;  // a unit compiled again (a capture's) keeps its own
      }
    }
  }

  ParsedSource run() {
    std::size_t i = 0;
    while (t(i).kind != Token::End) i = scope(i, "", false);  // a stray '}' ends a scope early: go on
    resolve_constants();
    if (out_.kernels.empty() && !kernel_templates_.empty()) {  // valid Metal: a library without kernels
      std::string names;
      for (const auto& [name, def] : kernel_templates_) names += (names.empty() ? "'" : ", '") + name + "'";
      out_.no_kernels_why = "the source defines the kernel template" +
                            std::string(kernel_templates_.size() > 1 ? "s " : " ") + names +
                            " but instantiates none; add an instantiation, e.g. template [[host_name(\"name_float\")]] "
                            "kernel void " + kernel_templates_.begin()->second.name + "<float>(...);";
    }
    resolve_cooperative();
    return std::move(out_);
  }

 private:
  struct KernelDef {
    std::string name;       // unqualified
    std::string qualified;  // "ns::name"
    std::vector<TemplateParam> tparams;
    std::size_t params_begin = 0, params_end = 0;  // tokens inside the parentheses
    std::size_t body_begin = 0, body_end = 0;
    bool kernel = false;
    // [[max_total_threads_per_threadgroup(n)]]: tokens of n (empty: none)
    std::size_t max_threads_begin = 0, max_threads_end = 0;
  };
  // A node of the call graph: a function or class, by unqualified name.
  struct Node {
    bool collective = false;
    std::set<std::string> refs;
  };

  const Token& t(std::size_t i) const { return out_.tokens[std::min(i, out_.tokens.size() - 1)]; }

  [[noreturn]] void fail(const Token& at, const std::string& what) const {
    const std::string& file = out_.files[std::min<std::size_t>(at.file, out_.files.size() - 1)];
    throw ShaderCompileError(file + ":" + std::to_string(at.line) + ":" + std::to_string(at.col) + ": error: " + what,
                             at.line, at.col);
  }

  std::size_t match(std::size_t open, const char* o, const char* c) const {
    int depth = 0;
    for (std::size_t i = open; t(i).kind != Token::End; ++i) {
      if (t(i).text == o) ++depth;
      else if (t(i).text == c && --depth == 0) return i;
    }
    fail(t(open), std::string("no matching '") + c + "'");
  }
  // A '<' that opens a template argument list: after a name. After
  // anything else (`sizeof(T) < 8`, `2 < N`) it compares.
  bool opens_template(std::size_t i) const { return t(i).text == "<" && i > 0 && t(i - 1).kind == Token::Ident; }

  // The '>' closing the template argument list opened at `open`; '<' and
  // '>' inside parentheses or brackets are comparisons and shifts.
  std::size_t match_angle(std::size_t open) const {
    if (std::size_t close = closing_angle(open)) return close;
    fail(t(open), "no matching '>'");
  }
  // The same, or 0 where none closes it (then it compares: `f < n`).
  std::size_t closing_angle(std::size_t open) const {
    int angle = 0, paren = 0;
    for (std::size_t i = open; t(i).kind != Token::End; ++i) {
      const std::string& x = t(i).text;
      if (x == "(" || x == "[" || x == "{") ++paren;
      else if (x == ")" || x == "]" || x == "}") --paren;
      else if (paren == 0 && (i == open || opens_template(i))) ++angle;
      else if (paren == 0 && x == ">" && --angle == 0) return i;
      else if (paren == 0 && x == ";") break;
    }
    return 0;
  }

  bool attribute_at(std::size_t i) const { return t(i).text == "[" && t(i + 1).text == "["; }

  // The attributes of the group "[[a, b(x)]]" at i: each as its tokens'
  // text ("buffer(0)"), host_name's string literals joined. Returns the
  // index after the group.
  std::size_t attributes(std::size_t i, std::vector<std::string>& out, std::string* host_name = nullptr,
                         std::vector<std::pair<std::size_t, std::size_t>>* ranges = nullptr) const {
    std::size_t end = match(i, "[", "]");
    for (auto [b, e] : split_commas(i + 2, end - 1)) {
      if (ranges) ranges->emplace_back(b, e);
      std::string a;
      for (std::size_t k = b; k < e; ++k) a += t(k).text;
      if (host_name && t(b).text == "host_name") {
        std::string joined;
        for (std::size_t k = b; k < e; ++k)
          if (t(k).kind == Token::String) joined += literal_text(t(k).text);
        *host_name = joined;
      }
      out.push_back(a);
    }
    return end + 1;
  }

  // The characters of a string literal's token, escapes resolved.
  static std::string literal_text(const std::string& tok) {
    std::size_t q = tok.find('"');
    std::string s;
    for (std::size_t k = q + 1; k + 1 < tok.size(); ++k) {
      if (tok[k] == '\\' && k + 2 < tok.size()) {
        ++k;
        s += tok[k] == 'n' ? '\n' : tok[k] == 't' ? '\t' : tok[k];
      } else {
        s += tok[k];
      }
    }
    return s;
  }

  // Token ranges [b, e) between the top-level commas of tokens [begin, end).
  std::vector<std::pair<std::size_t, std::size_t>> split_commas(std::size_t begin, std::size_t end) const {
    std::vector<std::pair<std::size_t, std::size_t>> out;
    std::size_t b = begin;
    int depth = 0, angle = 0;
    for (std::size_t k = begin; k <= end; ++k) {
      const std::string& x = k < end ? t(k).text : std::string();
      if (x == "(" || x == "[" || x == "{") ++depth;
      if (x == ")" || x == "]" || x == "}") --depth;
      if (depth == 0 && k < end && opens_template(k)) ++angle;
      if (depth == 0 && x == ">" && angle > 0) --angle;
      if (k == end || (x == "," && depth == 0 && angle == 0)) {
        if (k > b) out.emplace_back(b, k);
        b = k + 1;
      }
    }
    return out;
  }

  // Tokens [b, e) as text. `rooted`: for the generated code, a name at
  // global scope (`::c10::metal::array`) is spelled in the unit's global
  // namespace, bronze_msl.
  std::string text(std::size_t b, std::size_t e, const std::map<std::string, std::string>& subst = {},
                   const std::set<std::size_t>& skip = {}, bool rooted = false) const {
    std::string s;
    for (std::size_t k = b; k < e; ++k) {
      if (skip.count(k) || t(k).kind == Token::Preproc) continue;
      std::string x = t(k).text;
      auto it = subst.find(x);
      if (it != subst.end() && t(k).kind == Token::Ident) x = it->second;
      if (rooted && x == "::" && t(k + 1).kind == Token::Ident && global_qualifier(out_.tokens, k)) x = "::bronze_msl::";
      // The lexer splits `==`, `<=`, `&&` into single characters: keep them whole.
      const bool one_operator = k > b && t(k).kind == Token::Punct && t(k - 1).kind == Token::Punct &&
                                t(k - 1).offset + t(k - 1).text.size() == t(k).offset && x == t(k).text;
      bool glue = s.empty() || one_operator || x == "::" || x == "," || x == ">" || x == "*" || x == "&" ||
                  (x == "<" && (std::isalnum(static_cast<unsigned char>(s.back())) || s.back() == '_')) ||
                  (s.size() >= 2 && s.compare(s.size() - 2, 2, "::") == 0) || s.back() == '<';
      s += glue ? x : " " + x;
      if (x == ",") s += " ";
    }
    return s;
  }

  std::size_t skip_statement(std::size_t i) const {
    for (; t(i).kind != Token::End; ++i) {
      const std::string& x = t(i).text;
      if (x == "(") i = match(i, "(", ")");
      else if (x == "[") i = match(i, "[", "]");
      else if (x == "{") i = match(i, "{", "}");
      else if (x == ";") return i + 1;
      else if (x == "}") return i;  // the enclosing scope's end
    }
    return i;
  }

  // Declarations up to the '}' that closes this scope (returns the index
  // after it) or the end.
  std::size_t scope(std::size_t i, const std::string& ns, bool in_class) {
    while (t(i).kind != Token::End) {
      const std::string& x = t(i).text;
      if (t(i).kind == Token::Preproc || x == ";") {
        ++i;
      } else if (x == "}") {
        return i + 1;
      } else if (x == "namespace") {
        i = namespace_decl(i, ns);
      } else if (x == "inline" && t(i + 1).text == "namespace") {
        ++i;
      } else if (x == "extern" && t(i + 1).kind == Token::String && t(i + 2).text == "{") {
        i = scope(i + 3, ns, false);
      } else if (x == "template" && t(i + 1).text == "<") {
        i = template_decl(i, ns, in_class);
      } else if (x == "template" || (x == "extern" && t(i + 1).text == "template")) {
        i = instantiation(i, ns);
      } else if (x == "using" || x == "typedef" || x == "static_assert" || x == "friend") {
        i = skip_statement(i);
      } else if ((x == "public" || x == "private" || x == "protected") && t(i + 1).text == ":") {
        i += 2;
      } else {
        i = declaration(i, ns, {}, in_class);
      }
    }
    return i;
  }

  std::size_t namespace_decl(std::size_t i, const std::string& ns) {
    std::size_t k = i + 1;
    std::string name;
    while (t(k).kind == Token::Ident || t(k).text == "::") name += t(k++).text;
    if (t(k).text != "{") return skip_statement(i);  // an alias
    std::string inner = name.empty() ? ns : ns.empty() ? name : ns + "::" + name;
    return scope(k + 1, inner, false);
  }

  std::size_t template_decl(std::size_t i, const std::string& ns, bool in_class) {
    std::size_t close = match_angle(i + 1);
    std::vector<TemplateParam> tparams;
    for (auto [b, e] : split_commas(i + 2, close)) {
      TemplateParam p;
      std::size_t eq = e;
      for (std::size_t k = b; k < e; ++k)
        if (t(k).text == "=") {
          eq = k;
          break;
        }
      for (std::size_t k = b; k < eq; ++k)
        if (t(k).kind == Token::Ident && t(k).text != "typename" && t(k).text != "class") p.name = t(k).text;
      p.is_type = t(b).text == "typename" || t(b).text == "class";
      if (eq < e) p.default_text = text(eq + 1, e);
      tparams.push_back(p);
    }
    if (t(close + 1).text == "template" && t(close + 2).text == "<") {
      std::size_t saved = header_;
      header_ = header_ ? header_ : i;
      std::size_t r = template_decl(close + 1, ns, in_class);
      header_ = saved;
      return r;
    }
    // `template <>` before a member function in class scope (MLX's operators
    // for complex64_t) is valid Metal and Clang, not GCC (CWG 727): as a
    // plain overload it is chosen for the same arguments.
    if (in_class && close == i + 2 && deduced_specialization(close + 1)) out_.dropped.emplace_back(i, close);
    return declaration(close + 1, ns, tparams, in_class, header_ ? header_ : i);
  }

  // Whether the declaration at i is a function named without explicit
  // template arguments (`R f(A)`, `R operator()(A)`, not `R f<float>(A)`).
  bool deduced_specialization(std::size_t i) const {
    for (int angle = 0; t(i).kind != Token::End && t(i).text != ";" && t(i).text != "{"; ++i) {
      const std::string& x = t(i).text;
      if (x == "operator") {  // the parameters follow the operator's own tokens: `()`, `+`, `==`
        std::size_t k = i + (t(i + 1).text == "(" || t(i + 1).text == "[" ? 3 : 2);
        return t(k).text == "(";
      }
      angle += (x == "<") - (x == ">") - 2 * (x == ">>");
      if (x == "(" && angle == 0) return t(i - 1).kind == Token::Ident;
    }
    return false;
  }

  // A declaration or definition starting at i.
  // `header`: where the declaration's template header starts, if it has one.
  std::size_t declaration(std::size_t i, const std::string& ns, const std::vector<TemplateParam>& tparams,
                          bool in_class, std::size_t header = 0) {
    const std::size_t start = i;
    bool kernel = false, is_class = false;
    std::string host, class_name;
    std::size_t lparen = 0, rparen = 0, constant_at = 0, class_at = 0, max_threads_b = 0, max_threads_e = 0;
    while (t(i).kind != Token::End) {
      const std::string& x = t(i).text;
      if (t(i).kind == Token::Preproc) {
        ++i;
        continue;
      }
      if (attribute_at(i)) {
        std::vector<std::string> attrs;
        std::vector<std::pair<std::size_t, std::size_t>> ranges;
        std::size_t at = i;
        i = attributes(i, attrs, &host, &ranges);
        for (std::size_t a = 0; a < attrs.size(); ++a)
          if (attrs[a] == "kernel") kernel = true;
          else if (attrs[a].rfind("function_constant(", 0) == 0 && !lparen && !in_class) constant_at = at;
          else if (attrs[a].rfind("max_total_threads_per_threadgroup(", 0) == 0 && !lparen)
            max_threads_b = ranges[a].first + 2, max_threads_e = ranges[a].second - 1;
        continue;
      }
      if (takes_operand(x) && t(i + 1).text == "(") {
        i = match(i + 1, "(", ")") + 1;
        continue;
      }
      if (x == "operator" && !lparen) {  // operator+(...), operator()(...): up to its parameter list
        std::size_t k = t(i + 1).text == "(" ? i + 3 : i + 1;
        while (t(k).kind != Token::End && t(k).text != "(") ++k;
        lparen = k;
        rparen = match(k, "(", ")");
        if (in_class && conversions_) conversion_function(start, i, rparen, !tparams.empty());
        i = rparen + 1;
        continue;
      }
      if (t(i).kind == Token::Ident && !lparen) {
        if (x == "kernel") kernel = true;
        if (x == "struct" || x == "class" || x == "union" || x == "enum") is_class = true;
        else if (is_class && class_name.empty() && !is_qualifier(x)) {
          class_name = x;
          class_at = i;
        }
      }
      if (x == "<" && !lparen && i > start && t(i - 1).kind == Token::Ident && !is_class) {
        i = match_angle(i) + 1;  // a template-id in the declared type
        continue;
      }
      if (x == "(" && !lparen && !is_class) {
        lparen = i;
        rparen = match(i, "(", ")");
        i = rparen + 1;
        continue;
      }
      if (x == "(" || x == "[") {
        i = match(i, x.c_str(), x == "(" ? ")" : "]") + 1;
        continue;
      }
      if (x == "=") {  // an initializer, = default, = delete
        std::size_t end = skip_statement(i);
        // `S() thread = default;` beside `S() threadgroup = default;` (candle)
        if (lparen && (t(i + 1).text == "default" || t(i + 1).text == "delete"))
          address_space_overload(ns, header ? header : start, rparen, i, end - 1);
        return end;
      }
      if (x == ";") {
        if (constant_at) function_constant(start, constant_at, i, ns);
        if (lparen && !is_class) declared_.insert(t(function_name_at(start, lparen)).text);  // declared apart
        return i + 1;
      }
      if (x == "}") return i;
      if (x == "{") {
        std::size_t close = match(i, "{", "}");
        if (!lparen) {  // a class body, or a braced initializer
          if (is_class && header && !class_name.empty() && t(i - 1).text == ">") {
            // A partial specialization on an address space (`S<device T*>`
            // beside `S<thread T*>`): one in bronze's single address space.
            bool preferred = true;
            std::size_t end = skip_statement(close + 1) - 1;
            keep_one(ns + "|" + space_free_text(header, i, preferred), header, end, preferred);
          }
          if (is_class) {
            // A specialization's scope is its own (`BlockMMA<complex64_t, U, ...>`):
            // its members are no overloads of the primary template's.
            std::string scope_name = class_name;
            if (class_at && t(class_at + 1).text == "<")
              for (std::size_t k = class_at + 1, e = match_angle(class_at + 1); k <= e; ++k) scope_name += t(k).text;
            std::string inner = ns.empty() ? scope_name : ns + "::" + scope_name;
            std::string saved = current_class_;
            ClassConversions conversions, *saved_conversions = conversions_;
            current_class_ = class_name;
            conversions_ = &conversions;
            scope(i + 1, inner, true);
            current_class_ = saved;
            conversions_ = saved_conversions;
            if (!conversions.templated && !conversions.to_float.empty())
              out_.float_conversions.push_back(conversions.to_float.front());
            note_fields(class_name, i + 1, close);
          }
          return skip_statement(close + 1);
        }
        std::size_t name_at = function_name_at(start, lparen);
        if (t(name_at).kind != Token::Ident || takes_operand(t(name_at).text)) return close + 1;
        const std::string& name = t(name_at).text;
        note_body(name, i + 1, close);  // a call by name (x.f()) may reach any f
        if (!kernel) helper_definition(start, name_at, lparen, rparen, i, in_class);
        address_space_overload(ns, header ? header : start, rparen, i, close);
        if (in_class && !current_class_.empty()) {
          // The class reaches its own members only, so Op()(x) with Op = A
          // does not reach B::operator().
          std::string member = current_class_ + "::" + name;
          note_body(member, i + 1, close);
          graph_[current_class_].refs.insert(member);
        }
        if (!in_class) {
          KernelDef def;
          def.name = name;
          def.qualified = ns.empty() ? name : ns + "::" + name;
          def.tparams = tparams;
          def.params_begin = lparen + 1;
          def.params_end = rparen;
          def.body_begin = i + 1;
          def.body_end = close;
          def.kernel = kernel;
          def.max_threads_begin = max_threads_b;
          def.max_threads_end = max_threads_e;
          if (kernel) {
            auto vars = threadgroup_vars(def, bodies_++);
            out_.threadgroup_vars.insert(out_.threadgroup_vars.end(), vars.begin(), vars.end());
          }
          if (!tparams.empty()) {
            templates_.emplace(def.qualified, def);
            if (kernel) kernel_templates_[def.qualified] = def;
          } else if (kernel) {
            add_kernel(host.empty() ? name : host, "&::bronze_msl::" + def.qualified, def, {}, {});
          }
        }
        return close + 1;
      }
      ++i;
    }
    return i;
  }

  // The token naming the function whose parameter list opens at lparen (its
  // last name, or `operator`).
  std::size_t function_name_at(std::size_t start, std::size_t lparen) const {
    std::size_t k = lparen - 1;
    while (k > start && t(k).text != "operator" && t(k).kind != Token::Ident) --k;
    return k;
  }

  // A function definition that may take its caller (ParsedSource::call_chained)
  // if it turns out to reach a collective: one whose signature can grow a
  // last defaulted parameter, with no declaration apart from it (which
  // would need the parameter too) and no constexpr (the frame it opens is
  // no literal type).
  void helper_definition(std::size_t start, std::size_t name_at, std::size_t lparen, std::size_t rparen,
                         std::size_t body, bool in_class) {
    if (t(name_at).text == "operator" || t(name_at - 1).text == "::" || t(name_at - 1).text == "~") return;
    for (std::size_t k = start; k < rparen; ++k) {
      bool pack = k > lparen && t(k).text == "." && t(k + 1).text == "." && t(k + 2).text == ".";
      if (t(k).text == "constexpr" || t(k).text == "consteval" || pack) return;
    }
    if (rparen == lparen + 2 && t(lparen + 1).text == "void") return;
    std::string member = in_class && !current_class_.empty() ? current_class_ + "::" + t(name_at).text : "";
    helpers_.push_back({t(name_at).text, member, {rparen, body, rparen == lparen + 1}});
  }

  // A conversion function of the class being read (`operator` at op): one
  // to float or double is noted (float first), one that is a template marks
  // the class (an added template would tie with it).
  void conversion_function(std::size_t first, std::size_t op, std::size_t rparen, bool templated) {
    const std::string& to = t(op + 1).text;
    if (t(op + 1).kind != Token::Ident || to == "new" || to == "delete") return;  // an operator, not a conversion
    if (templated) {
      conversions_->templated = true;
      return;
    }
    if ((to != "float" && to != "double") || t(op + 2).text != "(" || rparen != op + 3) return;
    for (std::size_t k = first; k < op; ++k)
      if (t(k).text == "explicit") return;  // Metal casts through it to float only
    std::size_t k = rparen + 1;
    while (t(k).kind != Token::End && t(k).text != "{" && t(k).text != ";" && t(k).text != "=") ++k;
    if (t(k).text == "=") return;  // = delete
    ParsedSource::FloatConversion c{op, rparen, t(k).text == "{" ? match(k, "{", "}") : k};
    auto& found = conversions_->to_float;
    found.insert(to == "float" ? found.begin() : found.end(), c);
  }

  void note_body(const std::string& name, std::size_t b, std::size_t e) {
    Node& n = graph_[name];
    for (std::size_t k = b; k < e; ++k) {
      if (t(k).kind != Token::Ident) continue;
      if (is_collective(t(k).text)) n.collective = true;
      n.refs.insert(t(k).text);
    }
  }

  // `static constant constexpr const int name [[function_constant(100 + 2)]];`
  void function_constant(std::size_t first, std::size_t attr, std::size_t semi, const std::string& ns) {
    FunctionConstant fc;
    fc.first = first;
    fc.semicolon = semi;
    fc.ns = ns;
    std::size_t name_at = attr - 1;
    if (t(name_at).kind != Token::Ident) fail(t(attr), "a function constant needs a name");
    fc.name = t(name_at).text;
    std::set<std::size_t> skip;
    for (std::size_t k = first; k < name_at; ++k) {
      const std::string& x = t(k).text;
      fc.has_constexpr |= x == "constexpr";
      if (x == "static" || x == "constant" || x == "constexpr" || x == "const") skip.insert(k);
    }
    fc.type = text(first, name_at, {}, skip);
    std::size_t open = attr + 2;
    while (t(open).text != "(") ++open;
    std::size_t close = match(open, "(", ")");
    if (close == open + 1) fail(t(open), "a function constant needs an index: [[function_constant(0)]]");
    fc.index_expr = text(open + 1, close, {}, {}, true);
    out_.function_constants.push_back(fc);
  }

  // Each is_function_constant_defined(c) found; a value given by name
  // checked against the declarations (one given by index is checked by the
  // compiler, which evaluates the indices).
  void resolve_constants() {
    for (const GivenConstant& g : out_.given) {
      if (g.by_index()) continue;
      bool found = std::any_of(out_.function_constants.begin(), out_.function_constants.end(),
                               [&](const FunctionConstant& c) { return c.name == g.key; });
      if (!found) {
        std::string names;
        for (const FunctionConstant& c : out_.function_constants)
          names += (names.empty() ? "" : ", ") + c.name + " [[function_constant(" + c.index_expr + ")]]";
        throw ValueError("constants: the source declares no function constant '" + g.key + "'; it declares: " +
                         (names.empty() ? "none" : names));
      }
    }
    for (std::size_t i = 0; i + 3 < out_.tokens.size(); ++i) {
      if (t(i).text != "is_function_constant_defined" || t(i + 1).text != "(") continue;
      std::size_t close = match(i + 1, "(", ")");
      if (close > i + 2 && t(close - 1).kind == Token::Ident) out_.defined_queries.push_back({i, close, close - 1});
    }
  }

  // Metal overloads functions on address spaces (`f(thread T& a)` beside
  // `f(threadgroup T& a)`, a member's `f() thread` beside `f() threadgroup`):
  // in bronze's one address space they are one function, so only the first
  // of a signature is kept, preferring one without device or threadgroup.
  void address_space_overload(const std::string& ns, std::size_t first, std::size_t rparen, std::size_t body,
                              std::size_t close) {
    bool preferred = true;
    std::string key = ns + "|" + space_free_text(first, rparen + 1, preferred);
    bool is_const = false;  // `f() const device` and `f() thread` stay two overloads (MLX's _NoMask)
    for (std::size_t k = rparen + 1; k < body && t(k).text != ":"; ++k) {  // the qualifiers of `this`
      const std::string& x = t(k).text;
      if (x == "device" || x == "threadgroup" || x == "constant") preferred = false;
      is_const |= x == "const";  // not `constant`: `T() constant` is a constructor beside `T() thread`
    }
    keep_one(key + (is_const ? "const" : ""), first, close, preferred);
  }

  // Tokens [b, e) as the rewrite leaves them: address spaces gone, constant
  // as const. `preferred` turns false at device or threadgroup.
  std::string space_free_text(std::size_t b, std::size_t e, bool& preferred) const {
    std::string key, last;
    for (std::size_t k = b; k < e; ++k) {
      std::string x = t(k).text;
      if (x == "device" || x == "threadgroup" || x == "threadgroup_imageblock") preferred = false;
      if (x == "device" || x == "thread" || x == "threadgroup" || x == "threadgroup_imageblock") continue;
      if (x == "constant") x = "const";
      if (x == "const" && last == "const") continue;
      key += x + " ";
      last = x;
    }
    return key;
  }

  // Keeps the first definition of a key (a preferred one over others) and
  // drops the rest.
  void keep_one(const std::string& key, std::size_t first, std::size_t close, bool preferred) {
    auto it = members_.find(key);
    if (it == members_.end()) {
      members_[key] = {first, close, preferred};
    } else if (preferred && !it->second.preferred) {
      out_.dropped.emplace_back(it->second.first, it->second.last);
      it->second = {first, close, preferred};
    } else {
      out_.dropped.emplace_back(first, close);
    }
  }

  // A class's own node: the names its members' types and initializers use
  // (its member functions are added as "Class::f" nodes).
  void note_fields(const std::string& name, std::size_t b, std::size_t e) {
    Node& n = graph_[name];
    for (std::size_t k = b; k < e; ++k) {
      if (t(k).text == "{") k = match(k, "{", "}");  // member function bodies: their own nodes
      else if (t(k).kind == Token::Ident && t(k).text != "operator" && t(k + 1).text != "(") n.refs.insert(t(k).text);
    }
  }

  // template [[host_name("n")]] [[kernel]] void f<args>(params);
  // template [[host_name("n")]] [[kernel]] decltype(f<args>) f<args>;
  std::size_t instantiation(std::size_t i, const std::string& ns) {
    std::string host;
    bool kernel = false;
    std::size_t k = i + 1, name_at = 0, args_open = 0, args_close = 0, params_open = 0, params_close = 0;
    for (; t(k).kind != Token::End && t(k).text != ";"; ++k) {
      if (attribute_at(k)) {
        std::vector<std::string> attrs;
        k = attributes(k, attrs, &host) - 1;
        for (const std::string& a : attrs)
          if (a == "kernel") kernel = true;
        continue;
      }
      const std::string& x = t(k).text;
      if (x == "kernel") kernel = true;
      if (takes_operand(x) && t(k + 1).text == "(") {
        k = match(k + 1, "(", ")");
        continue;
      }
      if (x == "(") {
        if (!name_at && t(k - 1).kind == Token::Ident) name_at = k - 1;  // deduced: f(params)
        if (!params_open) params_open = k;
        k = params_close = match(k, "(", ")");
        continue;
      }
      if (x == "<" && t(k - 1).kind == Token::Ident) {
        name_at = k - 1;
        args_open = k;
        args_close = match_angle(k);
        k = args_close;
      }
    }
    std::size_t end = t(k).kind == Token::End ? k : k + 1;
    if (!name_at) return end;
    // The name as written, with its qualification.
    std::size_t q = name_at;
    // (`kernel void ::c10::metal::f<T>`: void is the return type, not a scope.)
    while (q >= 2 && t(q - 1).text == "::" && t(q - 2).kind == Token::Ident && !is_builtin_type(t(q - 2).text)) q -= 2;
    std::string written = text(q, name_at + 1);
    std::vector<std::string> args, rooted_args;
    if (args_open)
      for (auto [b, e] : split_commas(args_open + 1, args_close)) {
        args.push_back(text(b, e));
        rooted_args.push_back(text(b, e, {}, {}, true));
      }
    // The parameter types the instantiation lists, as plain C++.
    std::vector<std::string> listed;
    if (params_open)
      for (auto [b, e] : split_commas(params_open + 1, params_close)) listed.push_back(plain_type(b, e));
    auto squeezed = [](std::string x) {
      x.erase(std::remove(x.begin(), x.end(), ' '), x.end());
      return x;
    };
    // Whether a template's parameters, its template parameters given this
    // instantiation's arguments, are the types the instantiation lists.
    auto same_signature = [&](const KernelDef& d) {
      auto theirs = split_commas(d.params_begin, d.params_end);
      if (!params_open || listed.size() != theirs.size()) return false;
      std::map<std::string, std::string> subst;
      for (std::size_t a = 0; a < d.tparams.size() && a < rooted_args.size(); ++a)
        if (!d.tparams[a].name.empty()) subst[d.tparams[a].name] = rooted_args[a];
      for (std::size_t r = 0; r < listed.size(); ++r)
        if (squeezed(listed[r]) != squeezed(plain_type(theirs[r].first, theirs[r].second, subst))) return false;
      return true;
    };
    bool overloaded = false;
    const KernelDef* def =
        find_template(written, ns, args_open ? &args : nullptr, listed.size(), &overloaded, same_signature);
    if (!def || (!def->kernel && !kernel)) return end;
    // The function's type as the instantiation spells it: the compiler picks
    // the specialization (deduced arguments) or the overload from it.
    auto pointer_to = [&](const std::string& function) {
      std::string fn = text(i + 1, name_at, {}, plain_skip(i + 1, name_at), true) + "(*)(";
      for (std::size_t r = 0; r < listed.size(); ++r) fn += (r ? ", " : "") + listed[r];
      return "static_cast<" + fn + ")>(&" + function + ")";
    };
    if (!args_open) {
      if (!params_open) return end;
      add_kernel(host.empty() ? def->name : host, pointer_to("::bronze_msl::" + def->qualified), *def, {}, {});
      note_instantiation(i, end);
      return end;
    }
    std::map<std::string, std::string> subst;
    for (std::size_t a = 0; a < def->tparams.size(); ++a) {
      const TemplateParam& p = def->tparams[a];
      if (p.name.empty()) continue;
      if (a < args.size()) subst[p.name] = args[a];
      else if (!p.default_text.empty()) subst[p.name] = substitute(p.default_text, subst);
    }
    std::string callee = "::bronze_msl::" + def->qualified + "<";
    for (std::size_t a = 0; a < rooted_args.size(); ++a) callee += (a ? ", " : "") + rooted_args[a];
    callee += ">";
    callee = overloaded && params_open ? pointer_to(callee) : "&" + callee;
    std::set<std::string> arg_refs;
    for (std::size_t a = args_open; a < args_close; ++a)
      if (t(a).kind == Token::Ident) arg_refs.insert(t(a).text);
    add_kernel(host.empty() ? def->name + "<" + text(args_open + 1, args_close) + ">" : host, callee, *def, subst,
               arg_refs);
    note_instantiation(i, end);
    return end;
  }

  void note_instantiation(std::size_t first, std::size_t end) {
    out_.kernels.back().instantiation_first = first;
    out_.kernels.back().instantiation_last = end - 1;
  }

  // The tokens of [b, e) that plain C++ does not have: attributes, Metal's
  // address spaces, `kernel`.
  std::set<std::size_t> plain_skip(std::size_t b, std::size_t e) const {
    std::set<std::size_t> skip;
    for (std::size_t k = b; k < e; ++k) {
      const std::string& x = t(k).text;
      if (attribute_at(k)) {
        std::size_t end = match(k, "[", "]");
        for (; k <= end; ++k) skip.insert(k);
        --k;
      } else if (x == "kernel" || x == "device" || x == "thread" || x == "threadgroup" || x == "constant" ||
                 x == "threadgroup_imageblock") {
        skip.insert(k);
      }
    }
    return skip;
  }

  // The token naming the parameter declared by tokens [b, e), or 0 when it
  // has none (`uint [[thread_position_in_grid]]`: one name, which is the
  // type). Attributes, template arguments, brackets and a default argument
  // are passed over.
  std::size_t declared_name(std::size_t b, std::size_t e) const {
    std::size_t name_at = 0;
    int idents = 0;
    for (std::size_t k = b; k < e; ++k) {
      const std::string& x = t(k).text;
      if (attribute_at(k)) k = match(k, "[", "]");
      else if (takes_operand(x) && t(k + 1).text == "(") k = match(k + 1, "(", ")");
      else if (x == "<") k = match_angle(k);
      else if (x == "[") k = match(k, "[", "]");
      else if (x == "=") break;
      else if (t(k).kind == Token::Ident && t(k + 1).text != "::" && !is_qualifier(x)) {
        if (!is_builtin_type(x)) name_at = k;
        ++idents;
      }
    }
    return idents > 1 ? name_at : 0;
  }

  // A parameter's type as plain C++ ("const MLXConvParams<2>*"): address
  // spaces and attributes dropped (`constant` is const), the name dropped.
  std::string plain_type(std::size_t b, std::size_t e, const std::map<std::string, std::string>& subst = {}) const {
    std::set<std::size_t> skip = plain_skip(b, e);
    bool is_const = false, constant = false;
    for (std::size_t k = b; k < e; ++k) {
      constant |= t(k).text == "constant";
      is_const |= t(k).text == "const";
    }
    if (std::size_t name_at = declared_name(b, e)) skip.insert(name_at);
    for (std::size_t k = b; k < e; ++k)
      if (t(k).text == "=") {
        for (; k < e; ++k) skip.insert(k);
      }
    return (constant && !is_const ? "const " : "") + text(b, e, subst, skip, true);
  }

  // Substitutes template parameters in a default argument's text.
  static std::string substitute(const std::string& s, const std::map<std::string, std::string>& subst) {
    std::string out, word;
    auto flush = [&] {
      auto it = subst.find(word);
      out += it != subst.end() ? it->second : word;
      word.clear();
    };
    for (char c : s) {
      if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') {
        word += c;
      } else {
        flush();
        out += c;
      }
    }
    flush();
    return out;
  }

  // Whether template argument `arg` can be for parameter p: a literal is no
  // type, a builtin type no value (a name may be either).
  static bool arg_fits(const TemplateParam& p, const std::string& arg) {
    bool literal = !arg.empty() && (std::isdigit(static_cast<unsigned char>(arg[0])) || arg[0] == '-' ||
                                    arg == "true" || arg == "false");
    return p.is_type ? !literal : !is_builtin_type(arg) && arg != "half" && arg != "bfloat";
  }

  // The template `name` names from namespace ns, for explicit template
  // arguments `args` (none: deduced) and `nparams` function parameters (0:
  // the instantiation lists none): among overloads the one they fit, and of
  // several that fit (templates overloaded on their parameters, as PyTorch's
  // fused_sgd) the first for which `same_signature` holds; else the last
  // defined. *overloaded: whether more than one template has that name.
  const KernelDef* find_template(std::string name, const std::string& ns, const std::vector<std::string>* args,
                                 std::size_t nparams, bool* overloaded,
                                 const std::function<bool(const KernelDef&)>& same_signature) const {
    if (name.rfind("::", 0) == 0) name = name.substr(2);
    for (std::string scope = ns;;) {
      auto [first, last] = templates_.equal_range(scope.empty() ? name : scope + "::" + name);
      std::vector<const KernelDef*> fits;
      const KernelDef* latest = nullptr;  // equal keys keep their insertion order
      std::size_t count = 0;
      for (auto it = first; it != last; ++it, ++count) {
        const KernelDef& d = it->second;
        std::size_t required = 0;
        for (const TemplateParam& p : d.tparams) required += p.default_text.empty();
        bool fit = !args || (required <= args->size() && args->size() <= d.tparams.size());
        if (fit && (!args || nparams)) fit = split_commas(d.params_begin, d.params_end).size() == nparams;
        for (std::size_t a = 0; fit && args && a < args->size(); ++a) fit = arg_fits(d.tparams[a], (*args)[a]);
        if (fit) fits.push_back(&d);
        latest = &d;
      }
      *overloaded = count > 1;
      for (const KernelDef* d : fits)
        if (fits.size() == 1 || same_signature(*d)) return d;
      if (latest) return fits.empty() ? latest : fits.front();
      if (scope.empty()) return nullptr;
      std::size_t cut = scope.rfind("::");
      scope = cut == std::string::npos ? "" : scope.substr(0, cut);
    }
  }

  void add_kernel(const std::string& host, const std::string& callee, const KernelDef& def,
                  const std::map<std::string, std::string>& subst, const std::set<std::string>& arg_refs) {
    if (!host_names_.insert(host).second) fail(t(def.params_begin - 2), "a kernel named '" + host + "' is defined twice");
    ParsedKernel pk;
    pk.info.name = host;
    pk.info.line = t(def.params_begin - 2).line;
    pk.callee = callee;
    auto ranges = split_commas(def.params_begin, def.params_end);
    if (ranges.size() == 1 && ranges[0].second - ranges[0].first == 1 && t(ranges[0].first).text == "void")
      ranges.clear();
    int unnamed = 0;
    for (const auto& range : ranges) pk.params.push_back(param(range.first, range.second, subst, unnamed));
    // Metal binds at most 31 buffers; past that (parameters no function
    // constant can remove) no compile is worth its memory.
    if (std::count_if(pk.params.begin(), pk.params.end(),
                      [](const ParsedParam& p) { return enters(p.info) && p.constant.empty(); }) > 31)
      fail(t(def.params_begin - 2), "kernel '" + host + "' takes more than 31 buffers and values; a kernel has at most 31 buffers");
    // Slots and bindings come from the compiler's evaluation of the indices
    // and constants (rewrite.hpp's binding plan, read back at load).
    for (const ParsedParam& p : pk.params) pk.info.params.push_back(p.info);
    const std::size_t cut = def.qualified.rfind("::");
    pk.ns = cut == std::string::npos ? "" : def.qualified.substr(0, cut);
    pk.definition = def.params_begin;
    pk.threadgroup_sizes = threadgroup_sizes(def, subst);
    if (def.max_threads_end > def.max_threads_begin)
      pk.max_threads = text(def.max_threads_begin, def.max_threads_end, subst, {}, true);
    kernel_refs_.push_back(arg_refs);
    kernel_refs_.back().insert(def.name);
    out_.kernels.push_back(std::move(pk));
  }

  ParsedParam param(std::size_t pb, std::size_t pe, const std::map<std::string, std::string>& subst,
                    int& unnamed) const {
    ParsedParam p;
    p.info.line = t(pb).line;
    p.token = pb;
    std::string space;
    bool is_const = false, array = false;
    std::vector<std::string> attrs;
    std::vector<std::pair<std::size_t, std::size_t>> attr_tokens;
    std::set<std::size_t> skip;
    for (std::size_t k = pb; k < pe; ++k) {
      const std::string& x = t(k).text;
      if (attribute_at(k)) {
        std::size_t end = attributes(k, attrs, nullptr, &attr_tokens);
        for (std::size_t q = k; q < end; ++q) skip.insert(q);
        k = end - 1;
      } else if (takes_operand(x) && t(k + 1).text == "(") {
        std::size_t end = match(k + 1, "(", ")");
        for (std::size_t q = k; q <= end; ++q) skip.insert(q);
        k = end;
      } else if (x == "<") {
        k = match_angle(k);  // template arguments: part of the type
      } else if (x == "device" || x == "constant" || x == "threadgroup" || x == "thread" ||
                 x == "threadgroup_imageblock") {
        space = x;
        skip.insert(k);
      } else if (x == "const") {
        is_const = true;
        skip.insert(k);
      } else if (x == "volatile" || x == "restrict" || x == "__restrict" || x == "__restrict__") {
        skip.insert(k);
      } else if (x == "*") {
        p.pointer = true;
        skip.insert(k);
      } else if (x == "&") {
        p.reference = true;
        skip.insert(k);
      } else if (x == "[") {
        array = true;
        std::size_t end = match(k, "[", "]");
        for (std::size_t q = k; q <= end; ++q) skip.insert(q);
        k = end;
      } else if (x == "=") {  // a default argument
        for (std::size_t q = k; q < pe; ++q) skip.insert(q);
        break;
      }
    }
    if (std::size_t name_at = declared_name(pb, pe)) {
      skip.insert(name_at);
      p.info.name = t(name_at).text;
    } else {
      p.info.name = "_" + std::to_string(unnamed++);
    }
    p.info.type = text(pb, pe, subst, skip);
    p.span_begin = t(pb).offset;
    p.span_end = t(pe - 1).offset + t(pe - 1).text.size();
    if (p.info.type.empty()) fail(t(pb), "parameter '" + p.info.name + "' has no type");
    for (std::size_t k = pb; k < pe; ++k)
      if (!skip.count(k) && t(k).kind == Token::Ident && is_texture_type(t(k).text))
        fail(t(pb), "textures and samplers are not supported by bronze (parameter '" + p.info.name + "')");
    p.info.read_only = is_const || space == "constant";
    p.def_type = (p.info.read_only ? "const " : "") + text(pb, pe, {}, skip);
    // Each attribute by its name: what Metal knows, or an error at the
    // parameter (an unknown one would otherwise take an argument).
    std::string attribute, where = "parameter '" + p.info.name + "'";
    bool buffer = false, threadgroup = false;
    for (const auto& range : attr_tokens) {
      const std::size_t b = range.first, e = range.second;  // (a lambda below captures them)
      const std::string name = t(b).text;
      const bool call = e > b + 1 && t(b + 1).text == "(";
      std::string arg = call ? text(b + 2, e - 1, {}, {}, true) : "";
      auto needs_arg = [&](const char* form) {
        if (!call || arg.empty()) fail(t(b), "[[" + name + "]] of " + where + " needs an argument: [[" + form + "]]");
      };
      if (e > b + 1 && t(b + 1).text == "::") continue;  // a vendor's (clang::, gnu::): theirs to check
      if (name == "buffer") {
        needs_arg("buffer(0)");
        buffer = true;
        p.index_expr = arg;
        p.index_token = b + 2;
      } else if (name == "threadgroup") {
        needs_arg("threadgroup(0)");
        threadgroup = true;
        p.index_expr = arg;
        p.index_token = b + 2;
      } else if (name == "function_constant") {
        needs_arg("function_constant(name)");
        p.constant = arg;
        p.constant_token = b + 2;
      } else if (attribute_field(name)) {
        if (call) fail(t(b), "[[" + name + "]] takes no argument (" + where + ")");
        if (!attribute.empty()) fail(t(b), where + " has two thread-position attributes");
        attribute = name;
      } else if (name == "maybe_unused") {  // C++'s own: nothing to bind
      } else if (std::find(std::begin(kUnsupportedAttributes), std::end(kUnsupportedAttributes), name) !=
                 std::end(kUnsupportedAttributes)) {
        fail(t(b), "[[" + name + "]] (" + where + ") is not a compute-kernel parameter bronze supports");
      } else if (const char* near = nearest_attribute(name)) {
        fail(t(b), "unknown attribute [[" + name + "]] on " + where + "; did you mean [[" + near + "]]?");
      } else {
        fail(t(b), "unknown attribute [[" + name + "]] on " + where +
                       "; a kernel parameter takes [[buffer(n)]], [[threadgroup(n)]], [[function_constant(c)]] or a "
                       "thread-position attribute such as [[thread_position_in_grid]]");
      }
    }
    if (!attribute.empty()) {
      if (buffer || threadgroup || !space.empty() || p.pointer || p.reference || array)
        fail(t(pb), "[[" + attribute + "]] is an attribute of a value (uint, ushort2, uint3, ...); " + where +
                        " is not one");
      if (!p.constant.empty()) fail(t(pb), "a thread-position attribute cannot be a function constant's (" + where + ")");
      p.info.kind = ParamKind::Attribute;
      p.info.attribute = attribute;
      return p;
    }
    if (threadgroup || space == "threadgroup") {
      if (buffer) fail(t(pb), where + " is a threadgroup buffer: it takes [[threadgroup(n)]], not [[buffer(n)]]");
      if (space != "threadgroup" || !(p.pointer || p.reference))
        fail(t(pb), "[[threadgroup(n)]] is for threadgroup pointers (threadgroup T* name); " + where + " is not one");
      p.info.kind = ParamKind::ThreadgroupBuffer;
      return p;
    }
    if ((p.pointer || p.reference) && !array && space.empty())
      fail(t(pb), where + " is a pointer or reference without an address space: write device, constant or "
                          "threadgroup (device float* " + p.info.name + ")");
    if ((p.pointer || p.reference) && space == "device") {
      p.info.kind = ParamKind::Buffer;
    } else if (p.pointer && space == "constant") {
      p.info.kind = ParamKind::Buffer;
    } else if (p.reference || array || space.empty() || space == "constant" || space == "thread") {
      p.info.kind = ParamKind::Scalar;
      if (array) p.pointer = true;  // decays to a pointer to the bound bytes
      p.info.by_value = !p.pointer;
    } else {
      fail(t(pb), "unsupported kernel parameter '" + p.info.name + "' (address space " + space + ")");
    }
    return p;
  }

  // "sizeof(T) * (N) * (M)" for each `threadgroup T name[N][M];` in the
  // body; the kernel's own constants (`constexpr int N = 64;`) and type
  // aliases (`using K = Kernel<T, 4>;`, MLX's gemv and sort) are replaced by
  // their values, since the expression is evaluated outside the kernel.
  std::vector<std::string> threadgroup_sizes(const KernelDef& def, const std::map<std::string, std::string>& subst) const {
    // The names in scope at each array: a block's declarations end with
    // it, so an inner `constexpr int N = 4;` does not size an outer array.
    std::vector<std::map<std::string, std::string>> scopes = {subst};
    auto statement_end = [&](std::size_t k) {
      while (k < def.body_end && t(k).text != ";") ++k;
      return k;
    };
    const std::vector<ParsedSource::ThreadgroupVar> vars = threadgroup_vars(def, 0);
    std::vector<std::string> out;
    auto next = vars.begin();
    for (std::size_t k = def.body_begin; k < def.body_end; ++k) {  // in source order: later ones use earlier
      std::map<std::string, std::string>& local = scopes.back();
      if (next != vars.end() && next->first == k) {
        std::string expr = "sizeof(" + text(k + 1, next->name, local, {}, true) + ")";
        for (std::size_t e = next->name + 1; t(e).text == "[";) {
          std::size_t close = match(e, "[", "]");
          expr += " * (" + text(e + 1, close, local, {}, true) + ")";
          e = close + 1;
        }
        out.push_back(expr);
        ++next;
      }
      if (t(k).text == "{") {
        scopes.push_back(scopes.back());
      } else if (t(k).text == "}") {
        if (scopes.size() > 1) scopes.pop_back();
      } else if (t(k).text == "using" && t(k + 1).kind == Token::Ident && t(k + 2).text == "=") {
        local[t(k + 1).text] = text(k + 3, statement_end(k), local, {}, true);
      } else if (t(k).text == "typedef") {
        std::size_t end = statement_end(k);
        if (end - k >= 3 && t(end - 1).kind == Token::Ident) local[t(end - 1).text] = text(k + 1, end - 1, local, {}, true);
      } else if ((t(k).text == "constexpr" || t(k).text == "const") && t(k - 1).text != "if") {
        // Each declarator with an initializer: `constexpr int BM = 32, BN = BM / 2;`
        // (an `=` alone: `==` and `<=` are two tokens here).
        for (auto [b, e] : split_commas(k + 1, statement_end(k))) {
          std::size_t eq = b;
          while (eq < e && !(t(eq).text == "=" && t(eq + 1).text != "=")) ++eq;
          if (eq < e && eq > b && t(eq - 1).kind == Token::Ident) local[t(eq - 1).text] = "(" + text(eq + 1, e, local, {}, true) + ")";
        }
      }
    }
    return out;
  }

  // The body's `threadgroup T name[N][M];` declarations, in order (one
  // declarator each: pointers, references and `this` qualifiers are not
  // storage; `threadgroup T a, b;` stays a static declaration).
  std::vector<ParsedSource::ThreadgroupVar> threadgroup_vars(const KernelDef& def, std::size_t body) const {
    std::vector<ParsedSource::ThreadgroupVar> out;
    for (std::size_t k = def.body_begin; k < def.body_end; ++k) {
      if (t(k).text != "threadgroup") continue;
      std::size_t e = k + 1;
      while (e < def.body_end && t(e).text != ";" && t(e).text != "[" && t(e).text != "*" && t(e).text != "&" &&
             t(e).text != "=" && t(e).text != "(" && t(e).text != ",")
        ++e;
      if (e >= def.body_end || e - k < 3 || t(e - 1).kind != Token::Ident) continue;
      const std::string& x = t(e).text;
      if (x == "*" || x == "&" || x == "(" || x == ",") continue;
      std::size_t end = e;
      while (t(end).text == "[") end = match(end, "[", "]") + 1;
      if (t(end).text != "=" && t(end).text != ";") continue;
      out.push_back({k, e - 1, end, body});
    }
    return out;
  }

  // A kernel is cooperative when its body, or a function or class it refers
  // to (through its template arguments too), uses a barrier or a simdgroup
  // function. Names stand for every function and class so named: at worst
  // a kernel runs cooperatively when it need not.
  void resolve_cooperative() {
    std::set<std::string> coop;
    for (auto& [name, n] : graph_)
      if (n.collective) coop.insert(name);
    for (bool changed = true; changed;) {
      changed = false;
      for (auto& [name, n] : graph_) {
        if (coop.count(name)) continue;
        for (const std::string& r : n.refs)
          if (coop.count(r)) {
            coop.insert(name);
            changed = true;
            break;
          }
      }
    }
    for (std::size_t i = 0; i < out_.kernels.size(); ++i)
      for (const std::string& r : kernel_refs_[i])
        if (coop.count(r)) out_.kernels[i].info.cooperative = true;
    // A helper named other than in a call (`&f`, a template argument, in
    // decltype) has a function type the program relies on: it keeps it.
    std::set<std::string> named, valued;
    for (const Helper& h : helpers_) named.insert(h.name);
    for (std::size_t k = 0; k < out_.tokens.size(); ++k) {
      if (t(k).kind != Token::Ident || !named.count(t(k).text)) continue;
      std::size_t close = t(k + 1).text == "<" ? closing_angle(k + 1) : k;
      if (close && t(close + 1).text != "(") valued.insert(t(k).text);
    }
    for (const Helper& h : helpers_)
      if ((coop.count(h.name) || (!h.member.empty() && coop.count(h.member))) && !declared_.count(h.name) &&
          !valued.count(h.name))
        out_.call_chained.push_back(h.at);
  }

  ParsedSource out_;
  std::size_t bodies_ = 0;  // kernel definitions seen: ThreadgroupVar::body
  std::map<std::string, Node> graph_;
  struct Helper {
    std::string name, member;  // "f"; "Class::f" for a member function
    ParsedSource::CallChained at;
  };
  std::vector<Helper> helpers_;     // function definitions, not kernels
  std::set<std::string> declared_;  // functions declared without a body
  // Every function template by qualified name; overloads (MLX's two
  // block_masked_gemm) are told apart by their template parameters.
  std::multimap<std::string, KernelDef> templates_;
  std::map<std::string, KernelDef> kernel_templates_;  // those marked kernel
  std::vector<std::set<std::string>> kernel_refs_;     // per kernel: its function and template arguments
  std::unordered_set<std::string> host_names_;         // the kernels' names so far
  std::string current_class_;
  // The conversion functions of the class being read (null outside classes).
  struct ClassConversions {
    std::vector<ParsedSource::FloatConversion> to_float;
    bool templated = false;
  };
  ClassConversions* conversions_ = nullptr;
  std::size_t header_ = 0;  // the outer `template` of nested template headers
  struct Member {
    std::size_t first, last;
    bool preferred;
  };
  std::map<std::string, Member> members_;  // member functions by scope and signature
};

}  // namespace

// Declaration specifiers that may stand next to an address space.
bool is_specifier(const std::string& x) {
  return x == "static" || x == "constexpr" || x == "const" || x == "inline" || x == "extern" || x == "volatile" ||
         x == "thread_local";
}

namespace {
// Whether the `>` at k closes a template header (`template <class T>`).
bool closes_template_header(const std::vector<Token>& t, std::size_t k) {
  for (int angle = 0, depth = 0; k > 0; --k) {
    const std::string& x = t[k].text;
    depth += x == ")" || x == "]" ? 1 : x == "(" || x == "[" ? -1 : 0;
    if (depth < 0 || x == ";" || x == "{" || x == "}") return false;
    if (depth == 0) angle += x == ">" ? 1 : x == "<" ? -1 : 0;
    if (angle == 0) return t[k - 1].text == "template";
  }
  return false;
}
}  // namespace

// Whether the `::` at i starts a name at global scope (`::c10::x`,
// `typename ::metal::y`, `template <class T> ::metal::enable_if_t<...> f()`)
// rather than continuing one (`a::b`, `T<int>::c`).
bool global_qualifier(const std::vector<Token>& t, std::size_t i) {
  static const std::set<std::string> words = {
      "typename", "return", "void", "using", "case", "else", "do", "throw", "new", "sizeof", "bool", "char",
      "short", "int", "long", "float", "double", "unsigned", "signed", "auto", "template", "struct", "class",
      "enum", "friend", "device", "constant", "thread", "threadgroup", "kernel", "METAL_FUNC"};
  if (i == 0) return true;
  const Token& prev = t[i - 1];
  if (prev.kind == Token::Ident) return is_specifier(prev.text) || words.count(prev.text) > 0;
  if (prev.text == ">") return closes_template_header(t, i - 1);
  return prev.text != ")" && prev.text != "]";
}

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] != b[j - 1])});
      diag = up;
    }
  }
  return row[b.size()];
}

const char* attribute_field(const std::string& attribute) {
  for (const Attr& a : kAttributes)
    if (attribute == a.name) return a.expr;
  return nullptr;
}

ParsedSource parse(const std::string& unit, const std::string& main_file) { return Parser(unit, main_file).run(); }

const std::string& math_mode_name(const std::string& mode) {
  static const std::string names[] = {"safe", "relaxed", "fast"};
  for (const std::string& n : names)
    if (mode == n) return n;
  throw ValueError("math_mode is 'safe', 'relaxed' or 'fast' (as MTLMathMode), got '" + mode + "'");
}

}  // namespace bronze::shader
