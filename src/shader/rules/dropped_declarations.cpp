// Declarations that leave the unit become spaces (lines and #line
// directives kept): what the parse dropped (ParsedSource::dropped: a member
// function that differs from another only in the address space of `this`,
// the `template <>` of a specialization in class scope) and, when a big
// unit builds in parts, the explicit instantiations of the other parts'
// kernels (RewriteOptions::first_kernel, last_kernel).
#include "shader/rules/rules.hpp"

namespace bronze::shader::rules {

void dropped_declarations(const Input& in, Edits& edits) {
  const ParsedSource& ps = in.ps;
  std::vector<std::pair<std::size_t, std::size_t>> dropped = ps.dropped;
  for (std::size_t k = 0; k < ps.kernels.size(); ++k)
    if (!in.options.has_entry(k) && ps.kernels[k].instantiation_first <= ps.kernels[k].instantiation_last)
      dropped.emplace_back(ps.kernels[k].instantiation_first, ps.kernels[k].instantiation_last);
  for (const auto& [first, last] : dropped) edits.push_back(blank_range(in.src, ps.tokens, first, last));
}

}  // namespace bronze::shader::rules
