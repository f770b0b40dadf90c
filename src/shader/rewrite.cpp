#include "shader/rewrite.hpp"

#include <algorithm>
#include <set>
#include <utility>

#include "shader/rules/conditional_operands.hpp"
#include "shader/rules/divergent_shuffles.hpp"
#include "shader/rules/rules.hpp"
#include "shader/types.hpp"

namespace bronze::shader {

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
  const rules::Input in = rules::make_input(src, ps, options, spelling);
  rules::Edits edits;
  for (rules::Rule rule : rules::kTokenRules) rule(in, edits);
  std::string body = rules::hoist_divergent_shuffles(rules::apply_edits(src, std::move(edits)));
  return body.find('?') == std::string::npos ? body : rules::convert_conditional_operands(body);
}

std::string max_threads_decl(const ParsedKernel& pk, std::size_t k) {
  if (pk.max_threads.empty()) return "";
  const std::string c = "constexpr unsigned bronze_max_threads_value_" + std::to_string(k) + " = (" + pk.max_threads + ");\n";
  return pk.ns.empty() ? c : "namespace " + pk.ns + " {\n" + c + "}\n";
}

std::string max_threads_name(const ParsedKernel& pk, std::size_t k) {
  return (pk.ns.empty() ? "" : pk.ns + "::") + "bronze_max_threads_value_" + std::to_string(k);
}

std::string generated_file(const std::string& body, const std::string& entries, const std::string& preamble) {
  return preamble + "#include \"bronze_metal.h\"\n" + "namespace bronze_msl {\n" + body +
         "\n#line 1 \"bronze-entry\"\n" + entries + "}  // namespace bronze_msl\n";
}

}  // namespace bronze::shader
