// A threadgroup variable declared in a function body becomes the target's
// group storage (TargetSpelling::threadgroup_storage: a per-thread static on
// the CPU, where one OS thread runs a threadgroup at a time; __shared__ on
// CUDA), or with RewriteOptions::carve_threadgroup a reference into CUDA's
// dynamic shared memory, each kernel's arrays from offset 0 in declaration
// order. Group storage takes no initializer, so each thread stores the
// value where the declaration stands.
//   threadgroup float s[64];      ->  static thread_local float s[64];
//   (carved)                      ->  float (&s)[64] = bronze_rt::tg_carve<float [ 64 ] >() ;
//   threadgroup int n = 0;        ->  static thread_local int n ; { int bronze_tg_init = 0 ; bronze_rt::tg_store(n, bronze_tg_init); }
#include "shader/rules/rules.hpp"

namespace bronze::shader::rules {

bool threadgroup_variable(const Input& in, std::size_t i) {
  const auto& t = in.ps.tokens;
  std::size_t k = i + 1;
  while (t[k].kind != Token::End && t[k].text != "*" && t[k].text != "&" && t[k].text != ";" && t[k].text != "[" &&
         t[k].text != "=" && t[k].text != "(" && t[k].text != ")" && t[k].text != ",")
    ++k;
  // After a parameter list it qualifies `this` (`f() threadgroup`).
  bool qualifier = i > 0 && (t[i - 1].text == ")" || t[i - 1].text == "const" || t[i - 1].text == "volatile");
  // A parameter (`f(threadgroup T shared[N])`) is a pointer, whatever its spelling.
  bool parameter = i > 0 && (t[i - 1].text == "(" || t[i - 1].text == ",");
  return in.depth[i] > 0 && !qualifier && !parameter && t[k].text != "*" && t[k].text != "&" && t[k].text != ")" &&
         t[k].text != ",";
}

void threadgroup_variables(const Input& in, Edits& edits) {
  const auto& t = in.ps.tokens;
  auto tokens_text = [&](std::size_t b, std::size_t e) {
    std::string s;
    for (; b < e; ++b) s += t[b].text + " ";
    return s;
  };
  auto carved = in.ps.threadgroup_vars.begin();
  std::string carved_before;  // ", T[N], U[M]": the kernel's arrays so far
  for (std::size_t i = 0; t[i].kind != Token::End; ++i) {
    if (t[i].kind != Token::Ident || t[i].text != "threadgroup" || !threadgroup_variable(in, i)) continue;
    while (carved != in.ps.threadgroup_vars.end() && carved->first < i) ++carved;
    if (in.options.carve_threadgroup && carved != in.ps.threadgroup_vars.end() && carved->first == i) {
      // `threadgroup T x[N];` -> `T (&x)[N] = bronze_rt::tg_carve<T[N], (earlier arrays of the kernel)...>();`
      const ParsedSource::ThreadgroupVar& v = *carved;
      if (carved == in.ps.threadgroup_vars.begin() || (carved - 1)->body != v.body) carved_before.clear();
      std::string array = tokens_text(i + 1, v.name) + tokens_text(v.name + 1, v.end);
      edits.push_back(blank(t[i]));
      edits.push_back({t[v.name].offset, 0, "(&"});
      edits.push_back({t[v.name].offset + t[v.name].text.size(), 0, ")"});
      edits.push_back({t[v.end].offset, 0, "= bronze_rt::tg_carve<" + array + carved_before + ">() "});
      carved_before += ", " + array;
    } else {
      edits.push_back({t[i].offset, t[i].text.size(), in.spelling.threadgroup_storage});
    }
    std::size_t eq = find_at_depth(t, i + 1, [](const std::string& s) { return s == "=" || s == ";"; });
    if (t[eq].text != "=") continue;
    std::size_t semi = find_at_depth(t, eq, [](const std::string& s) { return s == ";"; });
    if (t[semi].text != ";") continue;  // unterminated: the compiler reports it
    std::size_t nb = i + 1;             // the declared name: before its brackets or the '='
    for (std::size_t q = i + 1; q < eq; ++q)
      if (t[q].kind == Token::Ident && t[q + 1].text != "::" && (t[q + 1].text == "[" || t[q + 1].text == "=")) nb = q;
    std::string decl, name = t[nb].text;
    for (std::size_t q = i + 1; q < semi; ++q) decl += (q == nb ? "bronze_tg_init" : t[q].text) + " ";
    edits.push_back({t[eq].offset, t[semi].offset - t[eq].offset, ""});
    edits.push_back({t[semi].offset, 1, "; { " + decl + "; bronze_rt::tg_store(" + name + ", bronze_tg_init); }"});
  }
}

}  // namespace bronze::shader::rules
