#include "shader/rewrite.hpp"

#include <algorithm>
#include <cctype>
#include <set>

#include "shader/conditional_operands.hpp"
#include "shader/divergent_shuffles.hpp"
#include "shader/types.hpp"

namespace bronze::shader {
namespace {
struct Edit {
  std::size_t offset, length;
  std::string text;
};

// The text of tokens [a, b] as the source has it.
std::string text_of(const std::string& src, const std::vector<Token>& t, std::size_t a, std::size_t b) {
  return src.substr(t[a].offset, t[b].offset + t[b].text.size() - t[a].offset);
}

// A numeric literal as the compilers read it: Metal's half literal `1.5h`
// becomes a cast, and an unsuffixed floating literal a float (Metal has no
// double). Empty where the literal stays as written.
std::string literal_edit(const std::string& x) {
  const char last = x.back();
  const bool hex = x.size() > 1 && (x[1] == 'x' || x[1] == 'X');
  if (hex) return "";
  if (last == 'h' || last == 'H') return "((half)" + x.substr(0, x.size() - 1) + ")";
  if (x.find_first_of(".eE") != std::string::npos && (std::isdigit((unsigned char)last) || last == '.')) return x + "f";
  return "";
}

// GNU designated initializers of a local array, which Clang (Metal) takes
// and G++ refuses in C++: `float s[N] = { [0 ... N-1] = 0.0f, [3] = 1 };`
// (llama.cpp's ggml-metal). Given the braces [open, close], the statements
// that store the designated values once the array is declared with `{}`;
// empty where this is not such an initializer.
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

std::string param_type(std::size_t k, std::size_t i) {
  return "bronze_rt::param_t<" + function_type(k) + ", " + std::to_string(i) + ">";
}

std::string attribute_expr(std::size_t k, std::size_t i, const KernelParam& p) {
  return "bronze_rt::dim<" + param_type(k, i) + ">(" + attribute_field(p.attribute) + ")";
}

std::string function_typedef(const ParsedKernel& pk, std::size_t k) {
  return "typedef decltype(" + pk.callee + ") " + function_type(k) + ";\n";
}

std::string plan_name(const ParsedKernel& pk) {
  return "::bronze_msl::" + (pk.ns.empty() ? "" : pk.ns + "::") + "bronze_plan_" + std::to_string(pk.definition);
}

std::string present_expr(const ParsedKernel& pk, std::size_t i) {
  return plan_name(pk) + "[" + std::to_string(i) + "].present";
}

std::size_t entry_position(const ParsedKernel& pk, std::size_t i) {
  std::size_t n = 0;
  for (std::size_t j = 0; j < i; ++j) n += enters(pk.params[j].info);
  return n;
}

std::string layout_initializer(const ParsedKernel& pk, std::size_t k) {
  const std::string plan = plan_name(pk);
  std::string s = "{";
  for (std::size_t i = 0; i < pk.params.size(); ++i) {
    std::string v = "bronze_rt::value_t<" + param_type(k, i) + ">", at = plan + "[" + std::to_string(i) + "]";
    s += "(unsigned long long)bronze_rt::plan_slot(" + plan + ", " + std::to_string(i) + "), " + at + ".present, " +
         "bronze_rt::size_of<" + v + ">::value, bronze_rt::type_code<" + v + ">::value,\n";
  }
  return s + "0}";
}

namespace {
// A #line directive that puts what follows at `tok`'s line of its file,
// and spaces up to its column less `before` characters: the compiler's
// message then points at the user's token.
std::string at_line(const ParsedSource& ps, const Token& tok, std::size_t before = 0) {
  const std::string& file = ps.files[std::min<std::size_t>(static_cast<std::size_t>(tok.file), ps.files.size() - 1)];
  std::string q;
  for (char c : file) {
    if (c == '"' || c == '\\') q += '\\';
    q += c;
  }
  const std::size_t col = static_cast<std::size_t>(std::max(tok.col, 1)) - 1;
  return "#line " + std::to_string(tok.line) + " \"" + q + "\"\n" + std::string(col > before ? col - before : 0, ' ');
}
}  // namespace

std::string binding_plans(const ParsedSource& ps, const RewriteOptions& options) {
  std::string out;
  // A value given by index must name a constant: the compiler compares the
  // indices it evaluated.
  for (const GivenConstant& g : ps.given) {
    if (!g.by_index()) continue;
    std::string any = "false";
    for (const FunctionConstant& fc : ps.function_constants)
      any += " || ::bronze_msl::" + (fc.ns.empty() ? "" : fc.ns + "::") + index_name(fc.name) + " == " + g.key;
    out += "static_assert(" + any + ", \"constants: the source declares no function constant with index " + g.key +
           "\");\n";
  }
  // static_assert(test(args), "message") at `tok`: each piece a compiler
  // may place its message at (Clang 15-18 the keyword, Clang 19 the test,
  // GCC the test's opening parenthesis) lands on the user's token.
  auto assertion = [&](const Token& tok, const std::string& test, const std::string& args, const std::string& message) {
    const std::string at = at_line(ps, tok);
    return at + "static_assert(\n" + at + test + "\n" + at + "(" + args + "), \"" + message + "\");\n";
  };
  std::set<std::size_t> planned;  // definitions: kernels of one template share its plan
  for (std::size_t k = 0; k < ps.kernels.size(); ++k) {
    if (!options.has_entry(k)) continue;
    const ParsedKernel& pk = ps.kernels[k];
    if (planned.insert(pk.definition).second) {
      // In the kernel's namespace, so its attributes' names mean what they
      // mean in its signature; each expression at its place in the user's
      // line, where the compiler then reports what it finds wrong with it.
      const std::string plan = "bronze_plan_" + std::to_string(pk.definition), cast = "static_cast<bool>(";
      std::string checks;
      out += pk.ns.empty() ? "" : "namespace " + pk.ns + " {\n";
      out += "constexpr bronze_rt::plan_param " + plan + "[] = {\n";
      for (std::size_t i = 0; i < pk.params.size(); ++i) {
        const ParsedParam& p = pk.params[i];
        const Token& at = ps.tokens[p.token];
        const bool binding = enters(p.info), tg = p.info.kind == ParamKind::ThreadgroupBuffer;
        out += std::string("{") + (binding ? "bronze_rt::plan_binding" : tg ? "bronze_rt::plan_threadgroup" : "bronze_rt::plan_other") +
               ",\n" + (p.index_expr.empty() ? "false, -1" : "true,\n" + at_line(ps, ps.tokens[p.index_token]) + p.index_expr) + ",\n" +
               (p.constant.empty() ? "true" : at_line(ps, ps.tokens[p.constant_token], cast.size()) + cast + p.constant + ")") +
               "},\n";
        const std::string what = "parameter '" + p.info.name + "'", args = plan + ", " + std::to_string(i);
        if (binding) {
          checks += assertion(at, "bronze_rt::plan_in_range", args + ", 31",
                              what + (p.index_expr.empty() ? " takes a buffer index past 30: a kernel has at most 31 buffers"
                                                           : ": a [[buffer(n)]] index is 0 to 30"));
          if (!p.index_expr.empty())
            checks += assertion(at, "bronze_rt::plan_unique", args, what + ": its [[buffer(n)]] index is another parameter's too");
        } else if (tg && !p.index_expr.empty()) {
          checks += assertion(at, "bronze_rt::plan_in_range", args + ", 8", what + ": bronze takes [[threadgroup(n)]] indices 0 to 7");
          checks += assertion(at, "bronze_rt::plan_unique", args, what + ": its [[threadgroup(n)]] index is another parameter's too");
        }
      }
      out += "{bronze_rt::plan_other, false, -1, false}};\n" + checks + (pk.ns.empty() ? "" : "}\n");
    }
    // The function itself, as the compiler resolved it.
    out += function_typedef(pk, k);
    out += assertion(ps.tokens[pk.definition - 2], "bronze_rt::returns_void<" + function_type(k) + ">{}", "",
                     "a kernel function returns void");
    for (std::size_t i = 0; i < pk.params.size(); ++i) {
      const ParsedParam& p = pk.params[i];
      if (p.info.kind == ParamKind::Attribute)
        out += assertion(ps.tokens[p.token], "bronze_rt::is_position<bronze_rt::value_t<" + param_type(k, i) + ">>{}", "",
                         "[[" + p.info.attribute + "]] takes a uint or ushort value or vector (parameter '" + p.info.name + "')");
    }
  }
  return out + "#line 1 \"bronze-entry\"\n";
}

std::string rewrite_body(const std::string& src, const ParsedSource& ps, const RewriteOptions& options,
                         const TargetSpelling& spelling) {
  const bool wrap = options.wraps_buffers(), carve_threadgroup = options.carve_threadgroup;
  const auto& t = ps.tokens;
  std::vector<Edit> edits;
  // Carved arrays: `threadgroup T x[N];` becomes `T (&x)[N] =
  // bronze_rt::tg_carve<T[N], (earlier arrays of the kernel)...>();`.
  auto carved = ps.threadgroup_vars.begin();
  std::string carved_before;  // ", T[N], U[M]": the kernel's arrays so far
  auto tokens_text = [&](std::size_t b, std::size_t e) {
    std::string s;
    for (; b < e; ++b) s += t[b].text + " ";
    return s;
  };
  if (wrap) {  // signatures first: their edits cover the tokens inside
    for (const ParsedKernel& pk : ps.kernels)
      for (const ParsedParam& p : pk.params)
        if (checked(p, true))
          edits.push_back({p.span_begin, p.span_end - p.span_begin, "bronze_bounded<" + p.def_type + "> " + p.info.name});
  }
  std::vector<std::pair<std::size_t, std::size_t>> dropped = ps.dropped;
  for (std::size_t k = 0; k < ps.kernels.size(); ++k)  // another part's kernels
    if (!options.has_entry(k) && ps.kernels[k].instantiation_first <= ps.kernels[k].instantiation_last)
      dropped.emplace_back(ps.kernels[k].instantiation_first, ps.kernels[k].instantiation_last);
  for (const auto& [first, last] : dropped) {  // before the token edits inside them
    std::size_t b = t[first].offset, e = t[last].offset + t[last].text.size();
    std::string spaces = src.substr(b, e - b);
    for (char& c : spaces)
      if (c != '\n') c = ' ';
    for (std::size_t k = first; k <= last; ++k)  // #line directives stay: they keep the lines
      if (t[k].kind == Token::Preproc) spaces.replace(t[k].offset - b, t[k].text.size(), t[k].text);
    edits.push_back({b, e - b, spaces});
  }
  auto blank = [&](const Token& tok) { edits.push_back({tok.offset, tok.text.size(), std::string(tok.text.size(), ' ')}); };
  // Function constants become compile-time constants of their value (given,
  // or the type's zero: Metal leaves an undefined one without a value), each
  // with companions on its line: whether it was given, and its index.
  for (const FunctionConstant& fc : ps.function_constants) {
    if (!fc.has_constexpr) edits.push_back({t[fc.first].offset, 0, "constexpr "});
    const std::string index = "static_cast<long long>(" + fc.index_expr + ")";
    std::string value = fc.type + "()", defined = "false";
    for (const GivenConstant& g : ps.given) {  // the last given that names it counts
      std::string given = "(" + fc.type + ")(" + g.value + ")";
      if (g.key == fc.name) {
        value = given, defined = "true";
      } else if (g.by_index()) {
        value = "(" + index + " == " + g.key + " ? " + given + " : " + value + ")";
        defined = "(" + index + " == " + g.key + " || " + defined + ")";
      }
    }
    edits.push_back({t[fc.semicolon].offset, 0, " = " + value});
    edits.push_back({t[fc.semicolon].offset + 1, 0,
                     " constexpr bool " + defined_name(fc.name) + " = " + defined + "; constexpr long long " +
                         index_name(fc.name) + " = " + index + ";"});
  }
  for (const ParsedSource::Defined& q : ps.defined_queries) {
    // is_function_constant_defined(p::c) -> (p::bronze_fc_defined_c): the
    // compiler finds the constant as the code names it.
    std::size_t b = t[q.first].offset, e = t[q.last].offset + 1, n = t[q.first + 2].offset;
    std::string scope = src.substr(n, t[q.name].offset - n);
    if (scope.rfind("::", 0) == 0) scope = "::bronze_msl" + scope;
    edits.push_back({b, e - b, "(" + scope + defined_name(t[q.name].text) + ")"});
  }
  auto find = [&](std::size_t k, auto stop) {
    int depth = 0;
    for (; t[k].kind != Token::End; ++k) {
      const std::string& x = t[k].text;
      if (depth == 0 && stop(x)) return k;
      if (x == "(" || x == "[" || x == "{") ++depth;
      if (x == ")" || x == "]" || x == "}") --depth;
      if (depth < 0) return k;
    }
    return k;
  };
  // The '.' of each designator and each ',' between them in the braces
  // opening at `open` (`{ .a = x, .b = f(y, z) }`); empty unless every
  // element is designated.
  auto designators = [&](std::size_t open) {
    std::vector<std::size_t> marks;
    for (std::size_t q = open + 1; t[q].text != "}";) {
      if (t[q].text != "." || t[q + 1].kind != Token::Ident || t[q + 2].text != "=") return std::vector<std::size_t>{};
      marks.push_back(q);
      q = find(q, [](const std::string& x) { return x == ","; });
      if (t[q].text != ",") break;  // the closing brace, or the end
      marks.push_back(q++);
    }
    return marks;
  };
  int depth = 0;
  for (std::size_t i = 0; t[i].kind != Token::End; ++i) {
    const Token& tok = t[i];
    if (tok.kind == Token::Preproc) {  // #line, #pragma
      // `#pragma unroll (MIN(DK8/2, 4*NSG))`: the preprocessor that ran
      // before leaves pragmas unexpanded and takes its macros with it, so a
      // count that is not a number is dropped (the unrolling is a hint).
      if (tok.text.find("unroll") == std::string::npos) continue;  // a unit has a #line per few lines
      std::vector<Token> d = lex(tok.text.substr(1));
      if (d.size() > 2 && d[0].text == "pragma" && d[1].text == "unroll" &&
          std::any_of(d.begin() + 2, d.end(), [](const Token& x) { return x.kind == Token::Ident; }))
        edits.push_back({tok.offset, tok.text.size(), "#pragma unroll"});
      continue;
    }
    if (tok.kind == Token::Number) {
      std::string lit = literal_edit(tok.text);
      if (!lit.empty()) edits.push_back({tok.offset, tok.text.size(), lit});
      continue;
    }
    // The user's global namespace is bronze_msl, where the unit is compiled.
    if (tok.text == "::" && t[i + 1].kind == Token::Ident && global_qualifier(t, i)) {
      edits.push_back({tok.offset, tok.text.size(), "::bronze_msl::"});
      continue;
    }
    if (tok.text == "{" && t[i + 1].text == "[" && t[i + 2].text != "[") {
      std::size_t close = find(i + 1, [](const std::string&) { return false; });
      if (std::string fills = designated_fills(src, t, i, close); !fills.empty()) {
        edits.push_back({tok.offset, t[close].offset + 1 - tok.offset, "{}"});
        edits.push_back({t[close + 1].offset + 1, 0, fills});
        i = close;
        continue;
      }
    }
    if (tok.text == "{") ++depth;
    if (tok.text == "}") --depth;
    if (tok.text == "[" && t[i + 1].text == "[") {  // attribute group: blank it all
      int d = 0;
      std::size_t k = i;
      for (; t[k].kind != Token::End; ++k) {
        if (t[k].text == "[") ++d;
        if (t[k].text == "]" && --d == 0) break;
      }
      for (std::size_t q = i; q <= k && t[q].kind != Token::End; ++q) blank(t[q]);
      if (t[k].kind == Token::End) break;  // unclosed: the compiler reports it
      i = k;
      continue;
    }
    if (tok.text == "(" && t[i + 1].kind == Token::Ident) {
      // A C compound literal, `(float4){ a, b, c, d }` (gpt-oss's kernels):
      // Clang and G++ take it, NVRTC not; without the parentheses it is
      // C++'s `float4{...}`. Only where an expression starts: `if (x) {`
      // and `f(int) {` follow a name or a ')'.
      std::size_t k = i + 1;
      while (t[k + 1].text == "::" && t[k + 2].kind == Token::Ident) k += 2;
      static const std::set<std::string> starts = {"=", "(", ",", "return", "?", ":", "{", "[", "+", "-", "*", "/"};
      if (t[k + 1].text == ")" && t[k + 2].text == "{" && i > 0 && starts.count(t[i - 1].text)) {
        if (std::vector<std::size_t> marks = designators(k + 2); !marks.empty()) {
          // `(S){ .a = x, .b = y }`, which NVRTC takes only as C++20: a
          // lambda that sets each field of a value-initialized S. Edits
          // around the tokens, so the lines and the edits inside stay.
          edits.push_back({tok.offset, 1, depth > 0 ? "[&]() { " : "[]() { "});
          edits.push_back({t[k + 1].offset, 1, " bronze_literal{};"});
          blank(t[k + 2]);
          for (std::size_t q : marks)
            edits.push_back({t[q].offset, 1, t[q].text == "." ? "bronze_literal." : ";"});
          std::size_t close = find(k + 3, [](const std::string&) { return false; });
          edits.push_back({t[close].offset, 1, "; return bronze_literal; }()"});
        } else {
          blank(tok);
          blank(t[k + 1]);
        }
        i = k + 1;
        continue;
      }
    }
    if (tok.kind != Token::Ident) continue;
    const std::string& x = tok.text;
    if (wrap && x == "reinterpret_cast" && t[i + 1].text == "<") {
      // A bounds-checked buffer is a class: reinterpret_cast takes its
      // pointer (bronze_rt::raw), and the fence checks what the cast reaches.
      std::size_t k = i + 1;
      for (int angle = 0; t[k].kind != Token::End; ++k) {
        angle += t[k].text == "<" ? 1 : t[k].text == ">" ? -1 : t[k].text == ">>" ? -2 : 0;
        if (angle <= 0) break;
      }
      if (t[k].kind == Token::End || t[k + 1].text != "(") continue;
      std::size_t close = find(k + 2, [](const std::string&) { return false; });
      if (t[close].text != ")") continue;
      edits.push_back({t[k + 1].offset + 1, 0, "bronze_rt::raw("});
      edits.push_back({t[close].offset, 0, ")"});
      continue;
    }
    if (x == "coherent" && t[i + 1].text == "(") {  // coherent(system) device T*: both compilers see all writes
      std::size_t close = find(i + 2, [](const std::string&) { return false; });
      for (std::size_t q = i; q <= close && t[q].kind != Token::End; ++q) blank(t[q]);
      i = close;
      continue;
    }
    if (x == "kernel" || x == "device" || x == "thread" || x == "threadgroup_imageblock" ||
        (x == "__extension__" && spelling.drop_gnu_extension)) {
      // `device ::c10::x* p` (PyTorch's instantiations) is the address space; `device::x` a name.
      if (t[i + 1].text != "::" || t[i + 1].offset > tok.offset + tok.text.size()) blank(tok);
    } else if (x == "constant") {
      // `constant const T&`, `static constant constexpr`: the const is there already.
      bool has_const = false;
      for (std::size_t k = i; k > 0 && is_specifier(t[k - 1].text); --k) has_const |= t[k - 1].text == "const" || t[k - 1].text == "constexpr";
      for (std::size_t k = i + 1; is_specifier(t[k].text); ++k) has_const |= t[k].text == "const" || t[k].text == "constexpr";
      if (has_const) blank(tok);
      else edits.push_back({tok.offset, tok.text.size(), "const   "});
    } else if (x == "threadgroup") {
      std::size_t k = i + 1;
      while (t[k].kind != Token::End && t[k].text != "*" && t[k].text != "&" && t[k].text != ";" &&
             t[k].text != "[" && t[k].text != "=" && t[k].text != "(" && t[k].text != ")" && t[k].text != ",")
        ++k;
      // After a parameter list it qualifies `this` (`f() threadgroup`).
      bool qualifier = i > 0 && (t[i - 1].text == ")" || t[i - 1].text == "const" || t[i - 1].text == "volatile");
      // A parameter (`f(threadgroup T shared[N])`) is a pointer, whatever its spelling.
      bool parameter = i > 0 && (t[i - 1].text == "(" || t[i - 1].text == ",");
      bool variable = depth > 0 && !qualifier && !parameter && t[k].text != "*" && t[k].text != "&" &&
                      t[k].text != ")" && t[k].text != ",";
      if (!variable) {
        blank(tok);
        continue;
      }
      while (carved != ps.threadgroup_vars.end() && carved->first < i) ++carved;
      if (carve_threadgroup && carved != ps.threadgroup_vars.end() && carved->first == i) {
        const ParsedSource::ThreadgroupVar& v = *carved;
        if (carved == ps.threadgroup_vars.begin() || (carved - 1)->body != v.body) carved_before.clear();
        std::string array = tokens_text(i + 1, v.name) + tokens_text(v.name + 1, v.end);
        blank(tok);
        edits.push_back({t[v.name].offset, 0, "(&"});
        edits.push_back({t[v.name].offset + t[v.name].text.size(), 0, ")"});
        edits.push_back({t[v.end].offset, 0, "= bronze_rt::tg_carve<" + array + carved_before + ">() "});
        carved_before += ", " + array;
      } else {
        edits.push_back({tok.offset, tok.text.size(), spelling.threadgroup_storage});
      }
      // `threadgroup T x[N] = init;`: group storage takes no initializer, so
      // each thread stores the value where the declaration stands.
      std::size_t eq = find(i + 1, [](const std::string& s) { return s == "=" || s == ";"; });
      if (t[eq].text != "=") continue;
      std::size_t semi = find(eq, [](const std::string& s) { return s == ";"; });
      if (t[semi].text != ";") continue;  // unterminated: the compiler reports it
      std::size_t nb = i + 1;  // the declared name: before its brackets or the '='

      for (std::size_t q = i + 1; q < eq; ++q)
        if (t[q].kind == Token::Ident && t[q + 1].text != "::" && (t[q + 1].text == "[" || t[q + 1].text == "=")) nb = q;
      std::string decl, name = t[nb].text;
      for (std::size_t q = i + 1; q < semi; ++q) decl += (q == nb ? "bronze_tg_init" : t[q].text) + " ";
      edits.push_back({t[eq].offset, t[semi].offset - t[eq].offset, ""});
      edits.push_back({t[semi].offset, 1, "; { " + decl + "; bronze_rt::tg_store(" + name + ", bronze_tg_init); }"});
    }
  }
  // Stable: a signature edit comes before the token edits inside its span,
  // which the loop below then skips.
  std::stable_sort(edits.begin(), edits.end(), [](const Edit& a, const Edit& b) { return a.offset < b.offset; });
  std::string body;
  std::size_t pos = 0;
  for (const Edit& e : edits) {
    if (e.offset < pos) continue;
    body.append(src, pos, e.offset - pos);
    body += e.text;
    pos = e.offset + e.length;
  }
  body.append(src, pos, std::string::npos);
  body = hoist_divergent_shuffles(body);
  return body.find('?') == std::string::npos ? body : convert_conditional_operands(body);
}

std::string generated_file(const std::string& body, const std::string& entries, const std::string& preamble) {
  return preamble + "#include \"bronze_metal.h\"\n" + "namespace bronze_msl {\n" + body +
         "\n#line 1 \"bronze-entry\"\n" + entries + "}  // namespace bronze_msl\n";
}

}  // namespace bronze::shader
