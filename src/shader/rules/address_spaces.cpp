// Metal's address spaces leave the code (bronze has one address space):
// `kernel`, `device`, `thread`, `threadgroup_imageblock` and
// `coherent(system)` are blanked, `constant` becomes `const` (blanked where
// a const or constexpr stands beside it), and `threadgroup` where it does
// not declare a group variable (a pointer, a reference, a parameter, a
// qualifier of `this`; threadgroup_variables takes the variables). GNU's
// `__extension__` goes too where the target spells it so
// (TargetSpelling::drop_gnu_extension). `device::x` is a name, not a space.
//   kernel void f(device float* o, constant uint& n)  ->  void f(float* o, const    uint& n)
#include "shader/rules/rules.hpp"

namespace bronze::shader::rules {

void address_spaces(const Input& in, Edits& edits) {
  const auto& t = in.ps.tokens;
  for (std::size_t i = 0; t[i].kind != Token::End; ++i) {
    const Token& tok = t[i];
    if (tok.kind != Token::Ident) continue;
    const std::string& x = tok.text;
    if (x == "coherent" && t[i + 1].text == "(") {  // coherent(system) device T*: both compilers see all writes
      std::size_t close = closing(t, i + 2);
      edits.push_back(blank_range(in.src, t, i, t[close].kind == Token::End ? close - 1 : close));
      i = close;
    } else if (x == "kernel" || x == "device" || x == "thread" || x == "threadgroup_imageblock" ||
               (x == "__extension__" && in.spelling.drop_gnu_extension)) {
      // `device ::c10::x* p` (PyTorch's instantiations) is the address space; `device::x` a name.
      if (t[i + 1].text != "::" || t[i + 1].offset > tok.offset + tok.text.size()) edits.push_back(blank(tok));
    } else if (x == "constant") {
      // `constant const T&`, `static constant constexpr`: the const is there already.
      bool has_const = false;
      for (std::size_t k = i; k > 0 && is_specifier(t[k - 1].text); --k)
        has_const |= t[k - 1].text == "const" || t[k - 1].text == "constexpr";
      for (std::size_t k = i + 1; is_specifier(t[k].text); ++k) has_const |= t[k].text == "const" || t[k].text == "constexpr";
      edits.push_back(has_const ? blank(tok) : Edit{tok.offset, tok.text.size(), "const   "});
    } else if (x == "threadgroup" && !threadgroup_variable(in, i)) {
      edits.push_back(blank(tok));
    }
  }
}

}  // namespace bronze::shader::rules
