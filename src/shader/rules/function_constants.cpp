// Function constants become compile-time constants of their value (given,
// or the type's zero: Metal leaves an undefined one without a value), each
// with companions on its line: whether it was given, and its index (the
// compiler evaluates the index; a value given by index applies where it
// equals the declaration's). is_function_constant_defined(p::c) reads the
// companion, found by the compiler as the code names c.
//   constant bool f [[function_constant(1)]];
//   -> constexpr constant bool f [[function_constant(1)]] = bool(); constexpr bool
//      bronze_fc_defined_f = false; constexpr long long bronze_fc_index_f = static_cast<long long>(1);
// (address_spaces and attributes edit the rest of the line).
#include "shader/rules/rules.hpp"

namespace bronze::shader::rules {

void function_constants(const Input& in, Edits& edits) {
  const ParsedSource& ps = in.ps;
  const auto& t = ps.tokens;
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
    std::size_t b = t[q.first].offset, e = t[q.last].offset + 1, n = t[q.first + 2].offset;
    std::string scope = in.src.substr(n, t[q.name].offset - n);
    if (scope.rfind("::", 0) == 0) scope = "::bronze_msl" + scope;
    edits.push_back({b, e - b, "(" + scope + defined_name(t[q.name].text) + ")"});
  }
}

}  // namespace bronze::shader::rules
