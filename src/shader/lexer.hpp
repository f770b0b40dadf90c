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
  int line = 1, col = 1;     // 1-based, in the user's file
  int file = 0;              // index into the file names (`#line` directives)
  std::size_t offset = 0;    // byte offset in the lexed text
};

// Throws ShaderCompileError on an unterminated comment or string. With
// `files`, `#line N "name"` directives set the following tokens' file and
// line (a preprocessed translation unit); `files` then holds the names,
// files[0] the first one seen.
std::vector<Token> lex(const std::string& src, std::vector<std::string>* files = nullptr);

}  // namespace bronze::shader
