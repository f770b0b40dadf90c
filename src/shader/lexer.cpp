#include "shader/lexer.hpp"

#include <cctype>
#include <cstdlib>

#include "bronze/error.hpp"

namespace bronze::shader {
namespace {
// Bytes of UTF-8 sequences are identifier characters: Metal, as C++, takes
// Unicode identifiers (the preprocessor's output spells them in UTF-8).
bool ident_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || static_cast<unsigned char>(c) >= 0x80;
}
bool ident_char(char c) { return ident_start(c) || std::isdigit(static_cast<unsigned char>(c)); }

// "#line 12 \"name\"": the line and name, or false.
bool line_directive(const std::string& d, int& line, std::string& name) {
  std::size_t i = d.find_first_not_of(" \t", 1);
  if (i == std::string::npos || d.compare(i, 4, "line") != 0) return false;
  i = d.find_first_not_of(" \t", i + 4);
  if (i == std::string::npos || !std::isdigit(static_cast<unsigned char>(d[i]))) return false;
  line = std::atoi(d.c_str() + i);
  std::size_t q = d.find('"', i);
  if (q == std::string::npos) return true;  // keeps the file
  name.clear();
  for (std::size_t k = q + 1; k < d.size() && d[k] != '"'; ++k) {
    if (d[k] == '\\' && k + 1 < d.size()) ++k;
    name += d[k];
  }
  return true;
}
}  // namespace

std::vector<Token> lex(const std::string& s, std::vector<std::string>* files) {
  std::vector<Token> out;
  std::size_t i = 0, n = s.size();
  int line = 1, file = 0;
  auto fail = [&](const std::string& what, int l, int c) {
    std::string name = files && !files->empty() ? (*files)[file] : "shader.metal";
    throw ShaderCompileError(name + ":" + std::to_string(l) + ":" + std::to_string(c) + ": error: " + what, l, c);
  };
  std::size_t line_start = 0;
  bool at_line_start = true;  // only whitespace since the last newline
  auto col = [&](std::size_t p) { return static_cast<int>(p - line_start) + 1; };
  auto newline = [&](std::size_t p) {
    ++line;
    line_start = p + 1;
  };
  while (i < n) {
    char c = s[i];
    if (c == '\n') {
      newline(i);
      at_line_start = true;
      ++i;
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    if (c == '/' && i + 1 < n && s[i + 1] == '/') {
      while (i < n && s[i] != '\n') ++i;
      continue;
    }
    if (c == '/' && i + 1 < n && s[i + 1] == '*') {
      int l0 = line, c0 = col(i);
      std::size_t end = s.find("*/", i + 2);
      if (end == std::string::npos) fail("unterminated /* comment", l0, c0);
      for (std::size_t k = i; k < end; ++k)
        if (s[k] == '\n') newline(k);
      i = end + 2;
      continue;
    }
    Token t;
    t.file = file;
    t.line = line;
    t.col = col(i);
    t.offset = i;
    std::size_t start = i;
    if (c == '#' && at_line_start) {
      while (i < n && s[i] != '\n') {
        if (s[i] == '\\' && i + 1 < n && s[i + 1] == '\n') {
          newline(i + 1);
          i += 2;
          continue;
        }
        ++i;
      }
      t.kind = Token::Preproc;
      int l = 0;
      std::string name;
      if (files && line_directive(s.substr(start, i - start), l, name)) {
        if (!name.empty()) {
          file = -1;
          for (std::size_t k = 0; k < files->size(); ++k)
            if ((*files)[k] == name) file = static_cast<int>(k);
          if (file < 0) {
            file = static_cast<int>(files->size());
            files->push_back(name);
          }
        }
        line = l - 1;  // the directive's own newline comes next
      }
    } else if (ident_start(c)) {
      while (i < n && ident_char(s[i])) ++i;
      t.kind = Token::Ident;
    } else if (std::isdigit(static_cast<unsigned char>(c)) ||
               (c == '.' && i + 1 < n && std::isdigit(static_cast<unsigned char>(s[i + 1])))) {
      while (i < n) {
        char d = s[i];
        if ((d == '+' || d == '-') && (s[i - 1] == 'e' || s[i - 1] == 'E' || s[i - 1] == 'p' || s[i - 1] == 'P') &&
            !(s[start] == '0' && start + 1 < n && (s[start + 1] == 'x' || s[start + 1] == 'X') && (s[i - 1] == 'e' || s[i - 1] == 'E'))) {
          ++i;
          continue;
        }
        if (!ident_char(d) && d != '.') break;
        ++i;
      }
      t.kind = Token::Number;
    } else if (c == '"' || c == '\'') {
      ++i;
      while (i < n && s[i] != c) {
        if (s[i] == '\\') ++i;
        if (i < n && s[i] == '\n') fail("unterminated string or character literal", t.line, t.col);
        ++i;
      }
      if (i >= n) fail("unterminated string or character literal", t.line, t.col);
      ++i;
      t.kind = Token::String;
    } else {
      i += (i + 1 < n && ((c == ':' && s[i + 1] == ':') || (c == '-' && s[i + 1] == '>'))) ? 2 : 1;
      t.kind = Token::Punct;
    }
    at_line_start = false;
    t.text = s.substr(start, i - start);
    out.push_back(std::move(t));
  }
  Token end;
  end.kind = Token::End;
  end.line = line;
  end.col = col(n);
  end.offset = n;
  out.push_back(end);
  return out;
}

}  // namespace bronze::shader
