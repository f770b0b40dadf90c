// Metal's address spaces leave the code (bronze has one address space):
// `device`, `thread`, `threadgroup_imageblock` and
// `coherent(system)` are blanked, `constant` becomes `const` (blanked where
// a const or constexpr stands beside it), and `threadgroup` where it does
// not declare a group variable (a pointer, a reference, a parameter, a
// qualifier of `this`; threadgroup_variables takes the variables). GNU's
// `__extension__` goes too where the target spells it so
// (TargetSpelling::drop_gnu_extension). `device::x` is a name, not a space.
// `kernel` becomes `inline`: a build then compiles only the kernels its
// entries call (one kernel's build on first use, a part of a library),
// not every plain kernel of the unit; in an explicit instantiation, which
// may not be inline, and beside an `inline` already there, it is blanked.
//   kernel void f(device float* o, constant uint& n)  ->  inline void f(float* o, const    uint& n)
#include "shader/rules/rules.hpp"

namespace bronze::shader::rules {

void address_spaces(const Input& in, Edits& edits) {
  const auto& t = in.ps.tokens;
  std::vector<bool> instantiation(t.size());
  for (const ParsedKernel& pk : in.ps.kernels)
    for (std::size_t k = pk.instantiation_first; k <= pk.instantiation_last; ++k) instantiation[k] = true;
  auto beside_inline = [&](std::size_t i) {
    for (std::size_t k = i; k > 0 && is_specifier(t[k - 1].text); --k)
      if (t[k - 1].text == "inline") return true;
    for (std::size_t k = i + 1; is_specifier(t[k].text); ++k)
      if (t[k].text == "inline") return true;
    return false;
  };
  for (std::size_t i = 0; t[i].kind != Token::End; ++i) {
    const Token& tok = t[i];
    if (tok.kind != Token::Ident) continue;
    const std::string& x = tok.text;
    if (x == "coherent" && t[i + 1].text == "(") {  // coherent(system) device T*: both compilers see all writes
      std::size_t close = closing(t, i + 2);
      edits.push_back(blank_range(in.src, t, i, t[close].kind == Token::End ? close - 1 : close));
      i = close;
    } else if (x == "kernel" && t[i + 1].text != "::") {
      edits.push_back(instantiation[i] || beside_inline(i) ? blank(tok) : Edit{tok.offset, tok.text.size(), "inline"});
    } else if (x == "device" || x == "thread" || x == "threadgroup_imageblock" ||
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
