// The CUDA backend's code generator for Metal: the front end's parse becomes
// CUDA C++ for NVRTC (shader/rewrite.hpp's shared edits, with threadgroup
// variables as __shared__, or references into dynamic shared memory), and an
// extern "C" __global__ entry per kernel: the launch record, then one
// parameter per binding (buffers and arrays as pointers, scalars by value),
// masking the threads a partial threadgroup has past the grid's end.
#pragma once

#include <string>

#include "shader/rewrite.hpp"

namespace bronze::cuda {

// The generated CUDA C++. Symbols per kernel i (of options' range):
// bronze_entry_<i>; bronze_layout_<i>, a __device__ array; with
// carve_threadgroup, bronze_tgmem_<i>: the bytes its carved arrays take
// before its threadgroup buffers (rewrite.hpp).
std::string generate(const std::string& unit, const shader::ParsedSource& parsed,
                     const shader::RewriteOptions& options = {});

}  // namespace bronze::cuda
