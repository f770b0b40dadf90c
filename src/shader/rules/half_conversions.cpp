// A class's conversion to float reaches half in a cast, as in Metal, where
// float -> half is a standard conversion: GCC 13 and later take float ->
// _Float16 (a lower rank, C++23's rule) as none, so `static_cast<half>(x)`
// or `T(x)` with T = half found no way for MLX's fp8_e8m0. Beside the
// conversion the class gets bronze_metal.h's BRONZE_HALF_THROUGH, an
// explicit conversion template to half through it, with its qualifiers:
//   operator float() thread const { ... }
//     ->  operator float() thread const { ... } BRONZE_HALF_THROUGH(float, const)
#include "shader/rules/rules.hpp"

namespace bronze::shader::rules {

void half_conversions(const Input& in, Edits& edits) {
  const std::vector<Token>& t = in.ps.tokens;
  for (const ParsedSource::FloatConversion& c : in.ps.float_conversions) {
    std::string quals;  // of `this`, less its address space (`constant` is const, as the rewrite makes it)
    for (std::size_t k = c.rparen + 1; k < c.last && t[k].text != "{" && t[k].text != ";"; ++k) {
      const std::string& x = t[k].text;
      if (x == "const" || x == "constant" || x == "volatile") quals += x == "volatile" ? " volatile" : " const";
      if (x == "&") quals += t[k - 1].text == "&" && t[k - 1].offset + 1 == t[k].offset ? "&" : " &";  // && is two
    }
    const Token& last = t[c.last];
    edits.push_back({last.offset + last.text.size(), 0,
                     " BRONZE_HALF_THROUGH(" + t[c.op + 1].text + "," + quals + ")"});
  }
}

}  // namespace bronze::shader::rules
