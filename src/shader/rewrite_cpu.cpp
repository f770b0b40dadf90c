#include "shader/rewrite_cpu.hpp"

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

int components(const std::string& type) {
  char last = type.empty() ? ' ' : type.back();
  return last == '2' ? 2 : last == '3' ? 3 : last == '4' ? 4 : 1;
}

// Buffer pointers become bounds-checked views under validate=True.
bool checked(const ParsedParam& p, bool validate) {
  return validate && p.info.kind == ParamKind::Buffer && p.pointer;
}

// Kernels whose only thread attribute is thread_position_in_grid, on a 1-D
// grid, run as one flat loop over their range with the arguments hoisted:
// the shape the host compiler vectorizes.
bool flat_loop_ok(const ParsedKernel& pk) {
  if (pk.info.cooperative) return false;
  for (const ParsedParam& p : pk.params) {
    if (p.info.kind == ParamKind::ThreadgroupBuffer) return false;
    if (p.info.kind == ParamKind::Attribute && p.info.attribute != "thread_position_in_grid") return false;
  }
  return true;
}

std::string flat_arg_expr(const ParsedParam& p) {
  if (p.info.kind != ParamKind::Attribute) return "a" + std::to_string(p.info.binding);
  int n = components(p.info.type);
  if (n == 1) return "(" + p.info.type + ")(i)";
  return p.info.type + (n == 2 ? "((uint)i, 0u)" : "((uint)i, 0u, 0u)");
}


std::string arg_expr(const ParsedParam& p, bool validate) {
  const KernelParam& k = p.info;
  std::string b = std::to_string(k.binding);
  switch (k.kind) {
    case ParamKind::Buffer:
      if (checked(p, validate))
        return "bronze_bounded<" + p.cast_type + ">((" + p.cast_type + "*)a[" + b + "], L->arg_bytes[" + b +
               "] / sizeof(" + p.cast_type + "), \"" + k.name + "\", L->fault)";
      return p.pointer ? "(" + p.cast_type + "*)a[" + b + "]" : "*(" + p.cast_type + "*)a[" + b + "]";
    case ParamKind::Scalar:
      return p.pointer ? "(" + p.cast_type + "*)a[" + b + "]" : "*(" + p.cast_type + "*)a[" + b + "]";
    case ParamKind::ThreadgroupBuffer:
      return "(" + p.cast_type + "*)bronze_rt::tg_buffer(" + std::to_string(k.index) + ", L)";
    case ParamKind::Attribute: {
      std::string f = std::string("id.") + attribute_field(k.attribute);
      if (!is_uint3_field(attribute_field(k.attribute))) return "(" + k.type + ")(" + f + ")";
      int n = components(k.type);
      if (n == 1) return "(" + k.type + ")(" + f + ".x)";
      std::string e = k.type + "(" + f + ".x, " + f + ".y";
      if (n >= 3) e += ", " + f + ".z";
      return e + ")";
    }
  }
  return "";
}

std::string hoisted_arg(const ParsedParam& p, bool validate) {
  std::string b = std::to_string(p.info.binding);
  if (checked(p, validate)) return "  auto a" + b + " = " + arg_expr(p, true) + ";\n";
  bool ref = !p.pointer;
  return "  " + p.cast_type + (ref ? "& a" : "* a") + b + " = " + (ref ? "*(" : "(") + p.cast_type + "*)a[" + b + "];\n";
}
}  // namespace

std::string rewrite_for_cpu(const std::string& src, const ParsedSource& ps, const std::string& filename,
                            bool validate) {
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
      if (variable) edits.push_back({tok.offset, tok.text.size(), "static thread_local"});
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

  // Only the entries are exported (-fvisibility=hidden): kernel functions
  // that cannot be interposed are inlined into the loops and vectorized.
  std::string out = "#line 1 \"" + filename + "\"\n" + body +
                    "\n#line 1 \"bronze-entry.cpp\"\n#define BRONZE_EXPORT __attribute__((visibility(\"default\")))\n";
  for (std::size_t k = 0; k < ps.kernels.size(); ++k) {
    const ParsedKernel& pk = ps.kernels[k];
    std::string n = std::to_string(k);
    std::string args;
    for (const ParsedParam& p : pk.params) args += (args.empty() ? "" : ", ") + arg_expr(p, validate);
    std::string flat;
    if (flat_loop_ok(pk)) {
      std::string hoist, fargs;
      for (const ParsedParam& p : pk.params) {
        if (p.info.kind != ParamKind::Attribute) hoist += hoisted_arg(p, validate);
        fargs += (fargs.empty() ? "" : ", ") + flat_arg_expr(p);
      }
      flat = "  if (L->grid[1] == 1 && L->grid[2] == 1) {\n" + hoist +
             "    uint64_t begin = g0 * L->group[0], end = g1 * L->group[0];\n"
             "    if (end > L->grid[0]) end = L->grid[0];\n"
             "    for (uint64_t i = begin; i < end; ++i) " + pk.call + "(" + fargs + ");\n"
             "    return;\n  }\n";
    }
    out += "extern \"C\" BRONZE_EXPORT void bronze_entry_" + n +
           "(void* const* a, const bronze_launch* L, uint64_t g0, uint64_t g1) {\n"
           "  (void)a;\n" + flat +
           "  auto f = [&](const bronze_rt::ids& id) { (void)id; " + pk.call + "(" + args + "); };\n"
           "  bronze_rt::" + (pk.info.cooperative ? "run_groups_cooperative" : "run_groups") + "(L, g0, g1, f);\n}\n";
    out += "extern \"C\" BRONZE_EXPORT const unsigned long long bronze_sizes_" + n + "[] = {";
    for (int b : pk.info.bound) out += "sizeof(" + pk.params[b].info.type + "), ";
    out += "0};\n";
    std::string tg = "0";
    for (const std::string& e : pk.threadgroup_sizes) tg += " + " + e;
    out += "extern \"C\" BRONZE_EXPORT const unsigned long long bronze_tgmem_" + n + " = " + tg + ";\n";
  }
  return out;
}

}  // namespace bronze::shader
