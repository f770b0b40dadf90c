#include "shader/rewrite.hpp"

#include <algorithm>

namespace bronze::shader {
namespace {
struct Edit {
  std::size_t offset, length;
  std::string text;
};

bool is_uint3_field(const std::string& f) {
  return f == "tpig" || f == "tpitg" || f == "tgpig" || f == "tptg" || f == "dtptg" || f == "tpg" || f == "tgpg";
}
}  // namespace

int vector_components(const std::string& type) {
  char last = type.empty() ? ' ' : type.back();
  return last == '2' ? 2 : last == '3' ? 3 : last == '4' ? 4 : 1;
}

std::string attribute_expr(const KernelParam& k) {
  std::string f = std::string("id.") + attribute_field(k.attribute);
  if (!is_uint3_field(attribute_field(k.attribute))) return "(" + k.type + ")(" + f + ")";
  int n = vector_components(k.type);
  if (n == 1) return "(" + k.type + ")(" + f + ".x)";
  std::string e = k.type + "(" + f + ".x, " + f + ".y";
  if (n >= 3) e += ", " + f + ".z";
  return e + ")";
}

std::string rewrite_body(const std::string& src, const ParsedSource& ps, Target target, bool validate) {
  const auto& t = ps.tokens;
  std::vector<Edit> edits;
  if (validate) {  // signatures first: their edits cover the tokens inside
    for (const ParsedKernel& pk : ps.kernels)
      for (const ParsedParam& p : pk.params)
        if (checked(p, true))
          edits.push_back({p.span_begin, p.span_end - p.span_begin,
                           "bronze_bounded<" + p.def_cast_type + "> " + p.info.name});
  }
  auto blank = [&](const Token& tok) { edits.push_back({tok.offset, tok.text.size(), std::string(tok.text.size(), ' ')}); };
  int depth = 0;
  for (std::size_t i = 0; t[i].kind != Token::End; ++i) {
    const Token& tok = t[i];
    if (tok.kind == Token::Preproc) {
      if (tok.text.find("include") != std::string::npos && tok.text.find("metal_") != std::string::npos) blank(tok);
      continue;
    }
    if (tok.kind == Token::Number) {
      char last = tok.text.back();
      bool hex = tok.text.size() > 1 && (tok.text[1] == 'x' || tok.text[1] == 'X');
      if ((last == 'h' || last == 'H') && !hex)  // half literal
        edits.push_back({tok.offset, tok.text.size(), "((half)" + tok.text.substr(0, tok.text.size() - 1) + ")"});
      continue;
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
    if (tok.kind != Token::Ident) continue;
    const std::string& x = tok.text;
    if (x == "kernel" || x == "device" || x == "thread" || x == "threadgroup_imageblock") {
      if (t[i + 1].text != "::") blank(tok);
    } else if (x == "constant") {
      edits.push_back({tok.offset, tok.text.size(), "const   "});
    } else if (x == "threadgroup") {
      std::size_t k = i + 1;
      while (t[k].kind != Token::End && t[k].text != "*" && t[k].text != "&" && t[k].text != ";" &&
             t[k].text != "[" && t[k].text != "=" && t[k].text != "(" && t[k].text != ")" && t[k].text != ",")
        ++k;
      bool variable = depth > 0 && t[k].text != "*" && t[k].text != "&" && t[k].text != ")" && t[k].text != ",";
      if (variable) edits.push_back({tok.offset, tok.text.size(), target == Target::Cuda ? "__shared__" : "static thread_local"});
      else blank(tok);
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
  return body;

}

std::string generated_file(const std::string& filename, const std::string& body, const std::string& entries,
                           const std::string& preamble) {
  return "#include \"bronze_metal.h\"\n" + preamble + "namespace bronze_msl {\n#line 1 \"" + filename + "\"\n" +
         body + "\n#line 1 \"bronze-entry\"\n" + entries + "}  // namespace bronze_msl\n";
}

}  // namespace bronze::shader
