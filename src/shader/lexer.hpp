// Tokens of Metal Shading Language source, with their positions, so the
// rewriter can edit the source in place and errors can name the user's line.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace bronze::shader {

struct Token {
  enum Kind { Ident, Number, String, Punct, Preproc, End } kind;
  std::string text;
  int line = 1, col = 1;     // 1-based
  std::size_t offset = 0;    // byte offset in the source
};

// Throws ShaderCompileError on an unterminated comment or string.
std::vector<Token> lex(const std::string& src);

}  // namespace bronze::shader
