// validate=True (RewriteOptions::wraps_buffers): each buffer pointer
// parameter becomes a bounds-checked view, bronze_bounded<T>, which records
// an access out of range instead of making it. The view is a class, so
// reinterpret_cast takes its pointer (bronze_rt::raw), and the fence around
// the buffer checks what the cast reaches.
//   device float* out        ->  bronze_bounded<float> out
//   reinterpret_cast<T*>(p)  ->  reinterpret_cast<T*>(bronze_rt::raw(p))
#include "shader/rules/rules.hpp"

namespace bronze::shader::rules {

void checked_buffers(const Input& in, Edits& edits) {
  if (!in.options.wraps_buffers()) return;
  for (const ParsedKernel& pk : in.ps.kernels)
    for (const ParsedParam& p : pk.params)
      if (checked(p, true))
        edits.push_back({p.span_begin, p.span_end - p.span_begin, "bronze_bounded<" + p.def_type + "> " + p.info.name});
  const auto& t = in.ps.tokens;
  for (std::size_t i = 0; t[i].kind != Token::End; ++i) {
    if (t[i].kind != Token::Ident || t[i].text != "reinterpret_cast" || t[i + 1].text != "<") continue;
    std::size_t k = i + 1;
    for (int angle = 0; t[k].kind != Token::End; ++k) {
      angle += t[k].text == "<" ? 1 : t[k].text == ">" ? -1 : t[k].text == ">>" ? -2 : 0;
      if (angle <= 0) break;
    }
    if (t[k].kind == Token::End || t[k + 1].text != "(") continue;
    std::size_t close = closing(t, k + 2);
    if (t[close].text != ")") continue;
    edits.push_back({t[k + 1].offset + 1, 0, "bronze_rt::raw("});
    edits.push_back({t[close].offset, 0, ")"});
  }
}

}  // namespace bronze::shader::rules
