#include "shader/diagnostics.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "bronze/error.hpp"
#include "jit/host_compiler.hpp"
#include "runtime/shader_module.hpp"

namespace bronze::shader {
namespace {
// The line with a caret under `col` (none when col is 0).
std::string source_excerpt(const std::string& src, int line, int col) {
  std::size_t start = 0;
  for (int l = 1; l < line && start != std::string::npos; ++l) {
    start = src.find('\n', start);
    if (start != std::string::npos) ++start;
  }
  if (start == std::string::npos || line < 1) return "";
  std::string text = src.substr(start, src.find('\n', start) - start);
  std::string num = std::to_string(line);
  std::string out = " " + num + " | " + text + "\n";
  if (col > 0) out += " " + std::string(num.size(), ' ') + " | " + std::string(col - 1, ' ') + "^\n";
  return out;
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

// One error: its file, line, column (0 when unknown) and the message in
// GCC's "file:line:col: error: text" form.
struct Diagnostic {
  std::string file;
  int line = 0, col = 0;
  std::string text;
};

// Reads "file:12:5: error: ..." (GCC, Clang; "fatal error" too) and
// "file(12): error: ..." with NVRTC's caret two lines on.
bool parse_line(const std::vector<std::string>& lines, std::size_t i, Diagnostic& d) {
  const std::string& l = lines[i];
  for (std::size_t p = l.find(':'); p != std::string::npos && p > 0; p = l.find(':', p + 1)) {
    for (const char* form : {":%d:%d: error: %n", ":%d:%d: fatal error: %n"}) {
      int line = 0, col = 0, used = 0;
      if (std::sscanf(l.c_str() + p, form, &line, &col, &used) == 2 && used) {
        d = {l.substr(0, p), line, col, l};
        return true;
      }
    }
  }
  std::size_t paren = l.find("): error: ");
  std::size_t open = paren == std::string::npos ? std::string::npos : l.rfind('(', paren);
  if (open != std::string::npos && open > 0) {
    int line = std::atoi(l.c_str() + open + 1);
    if (line <= 0) return false;
    int col = 0;
    if (i + 2 < lines.size()) {
      std::size_t caret = lines[i + 2].find('^');
      if (caret != std::string::npos && lines[i + 2].find_first_not_of(" ^") == std::string::npos && caret >= 2)
        col = static_cast<int>(caret) - 1;  // NVRTC indents the echoed line by two spaces
    }
    std::string file = l.substr(0, open);
    d = {file, line, col, file + ":" + std::to_string(line) + ":" + std::to_string(col) + ": error: " + l.substr(paren + 10)};
    return true;
  }
  return false;
}

// "In file included from shader.metal:3:" (GCC): where a header was included.
bool included_from(const std::string& l, const std::vector<SourceFile>& files, Diagnostic& d) {
  std::size_t at = l.find("from ");
  if (at == std::string::npos) return false;
  std::string rest = l.substr(at + 5);
  std::size_t colon = rest.find(':');
  if (colon == std::string::npos) return false;
  std::string file = rest.substr(0, colon);
  for (const SourceFile& f : files)
    if (f.name == file) {
      d.file = file;
      d.line = std::atoi(rest.c_str() + colon + 1);
      return true;
    }
  return false;
}

// Where the user's code instantiated a template of bronze's headers that
// failed there: GCC's "f.metal:42:7:   required from here" (before the error),
// Clang's "f.metal:42:7: note: in instantiation of ... requested here" and
// NVRTC's "detected during ... at line 42 of f.metal" (both after it).
bool instantiated_at(const std::string& l, Diagnostic& d) {
  std::size_t note = l.find(": note: ");
  if (note != std::string::npos && l.size() >= 14 && l.compare(l.size() - 14, 14, "requested here") == 0) {
    std::size_t c2 = l.rfind(':', note - 1), c1 = c2 == std::string::npos || c2 == 0 ? std::string::npos : l.rfind(':', c2 - 1);
    if (c1 == std::string::npos) return false;
    d.file = l.substr(0, c1);
    d.line = std::atoi(l.c_str() + c1 + 1);
    d.col = std::atoi(l.c_str() + c2 + 1);
    return d.line > 0;
  }
  std::size_t req = l.find(":   required from");
  if (req != std::string::npos) {
    std::size_t c2 = l.rfind(':', req - 1), c1 = c2 == std::string::npos || c2 == 0 ? std::string::npos : l.rfind(':', c2 - 1);
    if (c1 == std::string::npos) return false;
    d.file = l.substr(0, c1);
    d.line = std::atoi(l.c_str() + c1 + 1);
    d.col = std::atoi(l.c_str() + c2 + 1);
    return d.line > 0;
  }
  std::size_t at = l.find(" at line ");
  std::size_t of = at == std::string::npos ? at : l.find(" of ", at);
  if (of == std::string::npos) return false;
  d.line = std::atoi(l.c_str() + at + 9);
  d.col = 0;
  d.file = l.substr(of + 4);
  if (d.file.size() > 1 && d.file.front() == '"') d.file = d.file.substr(1, d.file.find('"', 1) - 1);
  return d.line > 0;
}

bool user_file(const std::string& name, const std::vector<SourceFile>& files) {
  for (const SourceFile& f : files)
    if (f.name == name) return true;
  return files.empty() && name != "bronze-entry" && name.find("bronze_metal") == std::string::npos;
}
}  // namespace

namespace {
// Clang writes a failed static_assert as "static assertion failed due to
// requirement 'bronze_rt::plan_unique(bronze_plan_6, 0)': message", naming
// bronze's generated checks; GCC as "static assertion failed: message".
// Messages read alike whichever compiler built the kernel.
std::string gcc_wording(std::string l) {
  const std::string clang = "static assertion failed due to requirement '";
  std::size_t at = l.find(clang);
  if (at == std::string::npos) return l;
  std::size_t end = l.find("': ", at + clang.size());
  if (end == std::string::npos) return l;
  return l.substr(0, at) + "static assertion failed: " + l.substr(end + 3);
}

// GCC 13 and later take float -> _Float16 as no implicit conversion (C++23's
// rule for a lower-ranked floating type, which no option turns off), where
// Metal converts float to half implicitly. A cast of a class with operator
// float gets its way to half from the rewrite (rules/half_conversions.cpp);
// an implicit conversion (`half h = x;`, an argument) has none, and GCC's
// error names neither: this note does.
std::string float16_rank_note(const std::string& error) {
  const std::size_t to = error.rfind(" to ");
  if (to == std::string::npos || error.find("_Float16", to) == std::string::npos) return {};
  for (const char* gcc : {"cannot convert", "invalid cast from type", "static_cast\u2019 from type",
                          "static_cast' from type", "invalid user-defined conversion from"})
    if (error.find(gcc) != std::string::npos)
      return "note: if this value reaches half through float (a class's operator float): GCC 13 and later convert "
             "float to half (_Float16) only explicitly, where Metal converts implicitly; a cast (half(x)) builds "
             "with every compiler, and GCC 12 and Clang follow Metal ($BRONZE_CXX chooses)\n";
  return {};
}
}  // namespace

[[noreturn]] void raise_compile_error(const std::string& diag, const std::vector<SourceFile>& files) {
  std::vector<std::string> lines = split_lines(diag);
  for (std::string& l : lines) l = gcc_wording(l);
  Diagnostic first, other, include, required, other_at;
  std::string rest, generated;  // generated: the errors in bronze's own code, without its file names
  int others = 0;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    Diagnostic d;
    if (included_from(lines[i], files, d) && other.text.empty()) include = d;
    if (instantiated_at(lines[i], d) && user_file(d.file, files)) {
      if (other.text.empty()) required = d;       // GCC: before the error
      else if (other_at.file.empty()) other_at = d;  // NVRTC: after it
      continue;
    }
    if (!parse_line(lines, i, d)) continue;
    if (!user_file(d.file, files)) {
      if (other.text.empty()) {
        other = d;
        other_at = required;
      }
      std::size_t e = d.text.find("error: ");
      generated += "\n" + d.text.substr(e == std::string::npos ? 0 : e + 7);
      continue;
    }
    if (first.text.empty()) first = d;
    else if (others++ < 5) rest += d.text + "\n";
  }
  bool not_supported = false;  // the header is one bronze has no emulation of
  if (first.text.empty() && !other.text.empty() && !include.file.empty()) {
    // An error inside a header bronze provides (an unsupported Metal
    // header): reported at the user's #include.
    std::string msg = other.text.substr(other.text.find(": error: ") != std::string::npos
                                            ? other.text.find(": error: ") + 9
                                            : other.text.find("error: ") + 7);
    if (std::size_t at = msg.find(kNotSupported); at != std::string::npos) {  // the #error's text alone
      not_supported = true;
      msg = msg.substr(at, msg.find('"', at) - at);
    }
    first = include;
    first.col = 0;
    first.text = include.file + ":" + std::to_string(include.line) + ": error: " + msg;
  }
  if (first.text.empty() && !other.text.empty() && !other_at.file.empty()) {
    // An error inside bronze's headers, in a template the user's line
    // instantiated (`as_type<half4>(u.xy)` of sizes that differ): there.
    std::size_t e = other.text.find("error: ");
    first = other_at;
    first.text = other_at.file + ":" + std::to_string(other_at.line) + ":" + std::to_string(other_at.col) + ": " +
                 other.text.substr(e == std::string::npos ? 0 : e);
  }
  if (first.text.empty()) {
    std::string name = files.empty() ? "shader.metal" : files[0].name;
    // Nothing in the user's files: an error bronze's generated entry
    // exposed (its messages, not where in bronze's files), or none at all:
    // a tool failed (the linker on a full disk, a compiler that would not
    // run), in its own words.
    if (!generated.empty()) throw ShaderCompileError(name + ": error: the kernel signature could not be compiled:" + generated);
    std::string said;
    for (const std::string& l : lines)
      if (l.find_first_not_of(" \t") != std::string::npos) said += "\n" + l;
    throw ShaderCompileError(name + ": error: the build failed:" + (said.empty() ? "\n(the compiler printed nothing)" : said));
  }
  std::string excerpt;
  for (const SourceFile& f : files)
    if (f.name == first.file) {
      if (f.expanded_lines.count(first.line) && first.col > 0) {
        // The column is the macro expansion's: name the line alone.
        std::string at = f.name + ":" + std::to_string(first.line) + ":" + std::to_string(first.col) + ":";
        if (first.text.rfind(at, 0) == 0)
          first.text = f.name + ":" + std::to_string(first.line) + ": (in a macro expansion)" + first.text.substr(at.size());
        first.col = 0;
      }
      if (!f.text.empty()) excerpt = source_excerpt(f.text, first.line, first.col);
    }
  if (not_supported) throw ShaderNotSupportedError(first.text + "\n" + excerpt + rest, first.line, first.col);
  throw ShaderCompileError(first.text + "\n" + excerpt + rest + float16_rank_note(first.text), first.line, first.col);
}

namespace {
// The function an Itanium-mangled name names, unqualified:
}  // namespace

[[noreturn]] void raise_build_error(const std::string& diag, const ParsedSource& ps,
                                    const std::vector<SourceFile>& files) {
  // GCC's linker: "undefined reference to `bronze_msl::helper(float)'";
  // NVRTC's ptxas: "Unresolved extern function '_ZN10bronze_msl6helperEf'".
  std::string symbol, name;
  for (const char* marker : {"undefined reference to `", "Unresolved extern function '"}) {
    std::size_t at = diag.find(marker);
    if (at == std::string::npos) continue;
    std::size_t b = at + std::char_traits<char>::length(marker);
    symbol = diag.substr(b, diag.find('\'', b) - b);
    name = jit::function_name(symbol);
  }
  if (!name.empty()) {
    const auto& t = ps.tokens;
    for (std::size_t i = 1; i + 1 < t.size(); ++i) {
      // A call: the name, then '(', not after a type (that is a declaration).
      if (t[i].text != name || t[i + 1].text != "(" || (t[i - 1].kind == Token::Ident && t[i - 1].text != "return"))
        continue;
      raise_compile_error(ps.files[t[i].file] + ":" + std::to_string(t[i].line) + ":" + std::to_string(t[i].col) +
                              ": error: '" + name + "' is called but never defined (declared only: " + symbol + ")",
                          files);
    }
  }
  // The names the source's own #line directives give are the user's too
  // (not bronze's generated code), though bronze has no text of them.
  std::vector<SourceFile> named = files;
  for (const std::string& n : ps.files)
    if (std::none_of(named.begin(), named.end(), [&](const SourceFile& f) { return f.name == n; }))
      named.emplace_back(n, "");
  raise_compile_error(diag, named);
}

void check_stack_usage(const std::string& usage, const std::vector<SourceFile>& files, const ParsedSource* parsed) {
  auto too_big = [&](const std::string& where, unsigned long bytes, const std::string& what) {
    raise_compile_error(where + ": error: " + what + " needs " + std::to_string((bytes + 1023) / 1024) +
                            " KiB of stack per thread (its private arrays and locals); a thread may have " +
                            std::to_string(runtime::kMaxPrivateBytes / 1024) + " KiB, as on CUDA",
                        files);
  };
  std::istringstream lines(usage);
  for (std::string l; std::getline(lines, l);) {
    const std::size_t tab = l.find('\t');
    if (tab == std::string::npos) continue;
    const unsigned long bytes = std::strtoul(l.c_str() + tab + 1, nullptr, 10);
    if (bytes <= runtime::kMaxPrivateBytes) continue;
    // A kernel's entry, into which the compiler inlined the kernel: the
    // kernel's frame, reported at its definition.
    const std::size_t entry = l.rfind("bronze_entry_", tab);
    if (parsed && entry != std::string::npos) {
      const std::size_t k = std::strtoul(l.c_str() + entry + 13, nullptr, 10);
      if (k < parsed->kernels.size()) {
        const Token& at = parsed->tokens[parsed->kernels[k].definition];
        too_big(parsed->files[at.file] + ":" + std::to_string(at.line) + ":" + std::to_string(at.col),
                bytes, "kernel '" + parsed->kernels[k].info.name + "'");
      }
    }
    const SourceFile* file = nullptr;
    for (const SourceFile& f : files)
      if (l.rfind(f.name + ":", 0) == 0) file = &f;
    if (!file) continue;
    const char* rest = l.c_str() + file->name.size() + 1;
    int line = 0, col = 1;
    if (std::sscanf(rest, "%d:%d:", &line, &col) < 1) continue;  // Clang writes no column
    too_big(file->name + ":" + std::to_string(line) + ":" + std::to_string(col), bytes, "this function");
  }
}

}  // namespace bronze::shader
