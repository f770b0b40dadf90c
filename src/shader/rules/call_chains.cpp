// A helper function that reaches a collective takes where it is called, and
// opens a frame with it for the collectives it reaches:
//   float reduce(float v) { return simd_sum(v); }
//   ->
//   float reduce(float v BRONZE_CALLER) { BRONZE_FRAME return simd_sum(v); }
// The CPU's fibers key a simdgroup's exchange by the chain of calls that
// led each lane to its collective, so `if (c) a = reduce(x); b = reduce(y);`
// runs the first call with the lanes where c holds and the second with all
// of them, as a GPU does, not both as one. The macros (bronze_metal.h) are
// empty on CUDA, whose warps know their active lanes.
#include "shader/rules/rules.hpp"

namespace bronze::shader::rules {

void call_chains(const Input &in, Edits &edits) {
  const auto &t = in.ps.tokens;
  for (const ParsedSource::CallChained &f : in.ps.call_chained) {
    edits.push_back({t[f.rparen].offset, 0, f.no_params ? "BRONZE_CALLER_ONLY" : " BRONZE_CALLER"});
    edits.push_back({t[f.body].offset + 1, 0, " BRONZE_FRAME"});
  }
}

}  // namespace bronze::shader::rules
