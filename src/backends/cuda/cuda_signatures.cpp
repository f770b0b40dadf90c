#include "backends/cuda/cuda_signatures.hpp"

#include <set>

#include "bronze/error.hpp"
#include "shader/lexer.hpp"
#include "shader/types.hpp"

namespace bronze::cuda {
using namespace shader;  // the front end's lexer and type names
namespace {
[[noreturn]] void fail(const std::string& file, const Token& t, const std::string& what) {
  throw ShaderCompileError(file + ":" + std::to_string(t.line) + ":" + std::to_string(t.col) + ": error: " + what,
                           t.line, t.col);
}

std::size_t match(const std::vector<Token>& t, std::size_t i, const char* open, const char* close) {
  int depth = 0;
  for (; t[i].kind != Token::End; ++i) {
    if (t[i].text == open) ++depth;
    if (t[i].text == close && --depth == 0) return i;
  }
  return i;
}

// C spellings of the types scalar_type() knows by their Metal names.
std::string metal_name(const std::string& c) {
  static const char* const table[][2] = {{"unsigned int", "uint"},       {"unsigned", "uint"},
                                         {"long long", "long"},          {"long long int", "long"},
                                         {"unsigned long long", "ulong"}, {"unsigned long", "ulong"},
                                         {"unsigned short", "ushort"},   {"unsigned char", "uchar"},
                                         {"signed char", "char"},        {"__half", "half"},
                                         {"__nv_bfloat16", "bfloat"}};
  for (const auto& e : table)
    if (c == e[0]) return e[1];
  return c;
}

bool qualifier(const std::string& x) {
  return x == "const" || x == "volatile" || x == "__restrict__" || x == "struct" || x == "*";
}

KernelParam param(const std::vector<Token>& t, std::size_t b, std::size_t e, int binding, const std::string& file) {
  KernelParam p;
  p.binding = p.index = binding;
  p.line = t[b].line;
  bool pointer = false, const_before_star = false;
  std::vector<std::size_t> words;  // the type's words and the name
  for (std::size_t k = b; k < e; ++k) {
    const std::string& x = t[k].text;
    if (x == "&") fail(file, t[k], "kernel parameters cannot be references");
    if (x == "[") fail(file, t[k], "array parameters are not supported: pass a pointer");
    if (x == "*") pointer = true;
    if (x == "const" && !pointer) const_before_star = true;
    if (!qualifier(x)) words.push_back(k);
  }
  bool named = words.size() >= 2 && t[words.back()].kind == Token::Ident && t[words.back() - 1].text != "::";
  p.name = named ? t[words.back()].text : "arg" + std::to_string(binding);
  if (named) words.pop_back();
  for (std::size_t k : words) {
    const std::string& x = t[k].text;
    p.type += (p.type.empty() || x == "::" || p.type.back() == ':' ? "" : " ") + x;
  }
  if (p.type.empty()) fail(file, t[b], "parameter '" + p.name + "' has no type");
  p.kind = pointer ? ParamKind::Buffer : ParamKind::Scalar;
  p.read_only = pointer && const_before_star;
  p.by_value = !pointer;
  ScalarType st = scalar_type(metal_name(p.type));
  if (st.known) p.size = element_size(st.dtype) * static_cast<std::size_t>(st.lanes);  // CUDA's float3 is 12 bytes
  if (st.known) p.type = metal_name(p.type);  // what pack_scalar and the dtype checks read
  return p;
}
}  // namespace

std::vector<CudaKernel> parse_cuda_kernels(const std::string& src, const std::string& file) {
  std::vector<Token> t = lex(src);
  std::vector<CudaKernel> out;
  std::set<std::string> seen;
  std::vector<std::size_t> extern_c_close;  // ends of extern "C" { ... } blocks
  std::size_t decl_start = 0;               // first token of the current declaration
  bool templated_seen = false;
  for (std::size_t i = 0; t[i].kind != Token::End; ++i) {
    const std::string& x = t[i].text;
    if (!extern_c_close.empty() && i == extern_c_close.back()) extern_c_close.pop_back();
    if (x == "extern" && t[i + 1].kind == Token::String && t[i + 1].text == "\"C\"" && t[i + 2].text == "{") {
      extern_c_close.push_back(match(t, i + 2, "{", "}"));
      decl_start = i + 3;
      i += 2;
      continue;
    }
    if (x == ";" || x == "}" || x == "{") decl_start = i + 1;
    if (x != "__global__") continue;
    bool templated = false, extern_c = !extern_c_close.empty();
    for (std::size_t k = decl_start; k < i; ++k) {
      if (t[k].text == "template") templated = true;
      if (t[k].text == "extern" && t[k + 1].text == "\"C\"") extern_c = true;
    }
    std::size_t open = i;
    while (t[open].kind != Token::End && t[open].text != "(") ++open;
    if (t[open].kind == Token::End || open < 1 || t[open - 1].kind != Token::Ident) fail(file, t[i], "a __global__ function without a parameter list");
    const Token& name = t[open - 1];
    std::size_t close = match(t, open, "(", ")");
    if (t[close].kind == Token::End) fail(file, t[open], "unclosed parameter list");
    if (templated) {
      templated_seen = true;
      i = close;
      continue;
    }
    CudaKernel k;
    k.extern_c = extern_c;
    k.info.name = name.text;
    k.info.line = name.line;
    std::size_t b = open + 1;
    int depth = 0;
    for (std::size_t q = open + 1; q <= close; ++q) {
      const std::string& y = t[q].text;
      if (y == "(" || y == "<" || y == "[") ++depth;
      if (y == ")" || y == ">" || y == "]") --depth;
      if ((y == "," && depth == 0) || q == close) {
        if (q > b && !(q == b + 1 && t[b].text == "void"))
          k.info.params.push_back(param(t, b, q, static_cast<int>(k.info.params.size()), file));
        b = q + 1;
      }
    }
    for (std::size_t p = 0; p < k.info.params.size(); ++p) k.info.bound.push_back(static_cast<int>(p));
    if (seen.insert(k.info.name).second) out.push_back(std::move(k));
    i = close;
  }
  if (out.empty())
    throw ShaderCompileError(file + ": error: no __global__ kernel found" +
                             (templated_seen ? std::string(" (template kernels need a non-template extern \"C\" wrapper)") : ""));
  return out;
}

}  // namespace bronze::cuda
