// Parses kernel signatures out of Metal source: kernels (plain and template
// instantiations with [[host_name]]), their parameters with address spaces
// and attributes, and whether each needs cooperative (barrier/simd) execution.
#pragma once

#include <string>
#include <vector>

#include "bronze/shader.hpp"
#include "shader/lexer.hpp"

namespace bronze::shader {

struct ParsedParam {
  KernelParam info;
  std::string cast_type;  // C++ type for the entry's cast, address spaces removed ("const float")
  bool pointer = false;
  bool reference = false;
  // As written in the (template) definition, for rewriting the signature:
  std::string def_cast_type;      // "const T", address spaces removed
  std::size_t span_begin = 0;     // byte offsets of the whole parameter
  std::size_t span_end = 0;
};

struct ParsedKernel {
  KernelInfo info;
  std::string call;  // the C++ function to call: "full", "add<float>"
  std::vector<ParsedParam> params;
  std::vector<std::string> threadgroup_sizes;  // C++ size expressions of its threadgroup arrays
};

struct ParsedSource {
  std::vector<Token> tokens;
  std::vector<ParsedKernel> kernels;
};

// Throws ShaderCompileError (user file positions) on what it cannot accept.
ParsedSource parse(const std::string& source, const std::string& filename);

// Attribute name -> the field of bronze_rt::ids holding it, or nullptr.
const char* attribute_field(const std::string& attribute);

}  // namespace bronze::shader
