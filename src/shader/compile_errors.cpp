// Compiler messages mapped back to the user's source.
#include <algorithm>
#include <cstdio>

#include "bronze/error.hpp"
#include "shader/library_impl.hpp"

namespace bronze::shader {
namespace {
std::string source_excerpt(const std::string& src, int line, int col) {
  std::size_t start = 0;
  for (int l = 1; l < line && start != std::string::npos; ++l) {
    start = src.find('\n', start);
    if (start != std::string::npos) ++start;
  }
  if (start == std::string::npos) return "";
  std::string text = src.substr(start, src.find('\n', start) - start);
  std::string num = std::to_string(line);
  return " " + num + " | " + text + "\n " + std::string(num.size(), ' ') + " | " +
         std::string(std::max(col - 1, 0), ' ') + "^\n";
}

std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos < s.size()) {
    std::size_t end = s.find('\n', pos);
    out.push_back(s.substr(pos, end == std::string::npos ? std::string::npos : end - pos));
    pos = end == std::string::npos ? s.size() : end + 1;
  }
  return out;
}

// One error of the user's file: its line, column (0 when unknown) and the
// message in GCC's "file:line:col: error: text" form.
struct Diagnostic {
  int line = 0, col = 0;
  std::string text;
};

bool parse_line(const std::vector<std::string>& lines, std::size_t i, const std::string& file, Diagnostic& d) {
  const std::string& l = lines[i];
  if (l.rfind(file, 0) != 0) return false;
  const char* rest = l.c_str() + file.size();
  int line = 0, col = 0, used = 0;
  if (std::sscanf(rest, ":%d:%d: error: %n", &line, &col, &used) == 2 && used) {  // GCC, Clang
    d = {line, col, l};
    return true;
  }
  if (std::sscanf(rest, "(%d): error: %n", &line, &used) == 1 && used) {  // NVRTC: the caret two lines on
    if (i + 2 < lines.size()) {
      std::size_t caret = lines[i + 2].find('^');
      if (caret != std::string::npos && lines[i + 2].find_first_not_of(" ^") == std::string::npos && caret >= 2)
        col = static_cast<int>(caret) - 1;  // NVRTC indents the echoed line by two spaces
    }
    d = {line, col, file + ":" + std::to_string(line) + ":" + std::to_string(col) + ": error: " + (rest + used)};
    return true;
  }
  return false;
}
}  // namespace

[[noreturn]] void raise_compile_error(const std::string& diag, const std::string& src, const std::string& file) {
  std::vector<std::string> lines = split_lines(diag);
  Diagnostic first;
  std::string rest;
  int others = 0;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    Diagnostic d;
    if (!parse_line(lines, i, file, d)) continue;
    if (first.text.empty()) first = d;
    else if (others++ < 5) rest += d.text + "\n";
  }
  if (first.text.empty()) {
    // Nothing in the user's file: an error bronze's generated entry exposed.
    throw ShaderCompileError(file + ": error: the kernel signature could not be compiled:\n" + diag);
  }
  throw ShaderCompileError(first.text + "\n" + source_excerpt(src, first.line, first.col) + rest, first.line,
                           first.col);
}

}  // namespace bronze::shader
