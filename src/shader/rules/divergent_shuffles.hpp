// A rewrite rule of the Metal -> C++ rewrite (on the edited text, after the
// token rules of rules.hpp): shuffles under a branch read
// the source lane's value as on an Apple GPU.
//
// On an Apple GPU a simdgroup's lanes run in lockstep: a shuffle under
// `if (lane >= 1) x += simd_shuffle_up(x, 1);` reads lane 0's x although
// lane 0 did not take the branch (a warp scan written this way is common).
// A CUDA warp that diverged leaves lane 0 out of the shuffle (its value is
// undefined there), and the CPU's fibers have no value of lane 0 at all. A
// shuffle has no side effects, so it can run before the branch, with every
// lane that reaches the `if`:
//
//   if (c) x += simd_shuffle_up(x, 1);
//   ->
//   { auto bronze_shuffled_0 = simd_shuffle_up(x, 1); if (c) x += bronze_shuffled_0; }
//
// Hoisted only where that cannot change what the program computes: an `if`
// without `else` whose condition and shuffle operands have no side effects
// (no assignment, increment or call), whose body is one statement (or one
// statement in braces) holding one such shuffle. Reductions, prefix
// operations, ballots and broadcast_first are over the active lanes, so they
// stay where they are. Lines keep their numbers.
#pragma once

#include <string>

namespace bronze::shader::rules {

std::string hoist_divergent_shuffles(const std::string& body);

}  // namespace bronze::shader::rules
