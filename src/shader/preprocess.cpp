#include "shader/preprocess.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>

#include "bronze/error.hpp"
#include "jit/disk_cache.hpp"
#include "jit/files.hpp"
#include "jit/host_compiler.hpp"
#include "jit/serial.hpp"
#include "jit/sha256.hpp"
#include "shader/diagnostics.hpp"
#include "shader/includes.hpp"
#include "shader/parser.hpp"

namespace bronze::shader {
namespace {
// Stub system headers: the emulation itself (bronze_metal.h) is included by
// the generated file after preprocessing, so these only have to exist.
const char* const kMetalHeaders[] = {
    "metal_stdlib",  "metal_math",       "metal_atomic",     "metal_compute",          "metal_simdgroup",
    "metal_integer", "metal_common",     "metal_geometric",  "metal_relational",       "metal_numeric",
    "metal_types",   "metal_pack",       "metal_matrix",     "metal_simdgroup_matrix", "metal_type_traits",
    "metal_limits",  "metal_extended_vector", "metal_utility", "metal_initializer_list", "metal_array",
    "metal_quadgroup", "metal_stdint", "metal_config", "metal_functional", "metal_tuple", "metal_logging",
};
// Metal 4's tensor library has no emulation: a clear error at the include.
const char* const kUnsupportedHeaders[][2] = {
    {"metal_tensor", "<metal_tensor> (Metal 4 tensors)"},
    {"MetalPerformancePrimitives/MetalPerformancePrimitives.h", "<MetalPerformancePrimitives> (Metal 4)"},
};
constexpr const char* kSdkDir = ".metal-sdk";

// Absolute, normalized and with links resolved; "" for a path that does not exist.
std::string absolute(const std::string& path) {
  std::error_code ec;
  std::string a = std::filesystem::canonical(path, ec);
  return ec ? std::string() : a;
}

bool is_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

// A header name of `headers=`: relative, without "..", so it stays inside
// the build folder.
void check_header_name(const std::string& n) {
  bool bad = n.empty() || n[0] == '/' || n.find('\\') != std::string::npos;
  for (std::size_t b = 0; !bad && b <= n.size();) {
    std::size_t e = n.find('/', b);
    if (e == std::string::npos) e = n.size();
    std::string part = n.substr(b, e - b);
    bad = part.empty() || part == "..";
    b = e + 1;
  }
  if (bad || n.rfind(kSdkDir, 0) == 0)
    throw ValueError("headers: '" + n + "' is not a relative file name (like \"ops.h\" or \"detail/ops.h\")");
}

// `text` with every comment turned into spaces (newlines kept), so its lines
// can stand in for the preprocessor's, which drops comments.
std::string blank_comments(const std::string& s) {
  std::string o = s;
  for (std::size_t i = 0, n = s.size(); i < n;) {
    char c = s[i];
    if (c == '"' || c == '\'') {
      for (++i; i < n && s[i] != c && s[i] != '\n'; ++i)
        if (s[i] == '\\') ++i;
      ++i;
    } else if (c == '/' && i + 1 < n && s[i + 1] == '/') {
      for (; i < n && s[i] != '\n'; ++i) o[i] = ' ';
    } else if (c == '/' && i + 1 < n && s[i + 1] == '*') {
      std::size_t end = s.find("*/", i + 2);
      end = end == std::string::npos ? n : end + 2;
      for (; i < end; ++i)
        if (o[i] != '\n') o[i] = ' ';
    } else {
      ++i;
    }
  }
  return o;
}

std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos <= s.size()) {
    std::size_t end = s.find('\n', pos);
    if (end == std::string::npos) end = s.size();
    out.push_back(s.substr(pos, end - pos));
    pos = end + 1;
  }
  return out;
}

std::string squeeze(const std::string& s) {
  std::string o;
  for (char c : s)
    if (!std::isspace(static_cast<unsigned char>(c))) o += c;
  return o;
}

// "# 12 "name" 1 3" (GCC and Clang line markers): the line and the name,
// its C escapes undone (GCC writes \\, \" and \n, Clang octal escapes).
bool line_marker(const std::string& l, long long& line, std::string& name, bool* entering = nullptr) {
  if (l.size() < 4 || l[0] != '#') return false;
  std::size_t i = l.find_first_not_of(' ', 1);
  if (i == std::string::npos || !std::isdigit(static_cast<unsigned char>(l[i]))) return false;
  line = std::strtoll(l.c_str() + i, nullptr, 10);
  std::size_t q = l.find('"', i);
  if (q == std::string::npos) return false;
  name.clear();
  std::size_t k = q + 1;
  for (; k < l.size() && l[k] != '"'; ++k) {
    if (l[k] != '\\' || k + 1 >= l.size()) {
      name += l[k];
    } else if (l[k + 1] >= '0' && l[k + 1] <= '7') {
      int v = 0;
      for (int d = 0; d < 3 && k + 1 < l.size() && l[k + 1] >= '0' && l[k + 1] <= '7'; ++d) v = v * 8 + (l[++k] - '0');
      name += static_cast<char>(v);
    } else {
      ++k;
      name += l[k] == 'n' ? '\n' : l[k] == 't' ? '\t' : l[k] == 'r' ? '\r' : l[k];
    }
  }
  if (entering) *entering = l.compare(k + 1, 2, " 1") == 0 && (k + 3 == l.size() || l[k + 3] == ' ');
  return true;
}

// The preprocessor's output with identifiers in UTF-8: GCC writes `核` as
// `\U00006838`, which bronze's reader would not take for one identifier,
// and the user's own line (UTF-8) would no longer match it. The compilers
// take either spelling. Literals keep theirs.
std::string utf8_identifiers(const std::string& s) {
  std::string o;
  o.reserve(s.size());
  for (std::size_t i = 0, n = s.size(); i < n;) {
    const char c = s[i];
    if (c == '"' || c == '\'') {  // to the closing quote (the output holds no raw strings GCC would split)
      std::size_t e = i + 1;
      while (e < n && s[e] != c && s[e] != '\n') e += s[e] == '\\' ? 2 : 1;
      e = std::min(e + 1, n);
      o.append(s, i, e - i);
      i = e;
      continue;
    }
    const std::size_t digits = c == '\\' && i + 1 < n ? (s[i + 1] == 'u' ? 4 : s[i + 1] == 'U' ? 8 : 0) : 0;
    if (digits && i + 2 + digits <= n &&
        std::all_of(s.begin() + i + 2, s.begin() + i + 2 + digits, [](char h) { return std::isxdigit(static_cast<unsigned char>(h)); })) {
      unsigned long cp = std::strtoul(s.substr(i + 2, digits).c_str(), nullptr, 16);
      if (cp < 0x80) o += static_cast<char>(cp);
      else if (cp < 0x800) o += {static_cast<char>(0xc0 | (cp >> 6)), static_cast<char>(0x80 | (cp & 0x3f))};
      else if (cp < 0x10000)
        o += {static_cast<char>(0xe0 | (cp >> 12)), static_cast<char>(0x80 | ((cp >> 6) & 0x3f)), static_cast<char>(0x80 | (cp & 0x3f))};
      else
        o += {static_cast<char>(0xf0 | (cp >> 18)), static_cast<char>(0x80 | ((cp >> 12) & 0x3f)),
              static_cast<char>(0x80 | ((cp >> 6) & 0x3f)), static_cast<char>(0x80 | (cp & 0x3f))};
      i += 2 + digits;
      continue;
    }
    o += c;
    ++i;
  }
  return o;
}
}  // namespace

bool DiskFile::unchanged() const {
  std::string text;
  if (sha256.empty()) {  // looked at and passed over: still nothing to include there
    struct stat st;
    return ::stat(path.c_str(), &st) != 0 ? errno == ENOENT || errno == ENOTDIR : S_ISDIR(st.st_mode);
  }
  return jit::read_file(path, text) && jit::sha256_hex(text) == sha256;
}

const SourceFile* TranslationUnit::file(const std::string& name) const {
  for (const SourceFile& f : files)
    if (f.name == name) return &f;
  return nullptr;
}

const std::vector<std::string>& metal_predefined_macros() {
  static const std::vector<std::string> m = {
      "__METAL_VERSION__=320", "__METAL__=1",          "__METAL_MACOS__=1",
      "__HAVE_BFLOAT__=1",     "__METAL_MEMORY_SCOPE_SYSTEM__=3",
  };
  return m;
}

namespace {
// A unit preprocessed before, in the compile cache (".pp"), under a key of
// everything its preprocessing read besides the files it included: the
// source, the options, the working folder (relative paths), the
// preprocessor and this build of bronze (its stand-in headers and macros).
// The files are in the record, each with its SHA-256 (or its absence):
// the unit is taken only while every one of them is as it was read.
constexpr const char* kPreprocessedFormat = "bronze-preprocessed-1";

std::string preprocessed_key(const std::string& source, const SourceOptions& o) {
  const std::string pp = jit::preprocessor_path();
  std::error_code ec;
  const std::string cwd = std::filesystem::current_path(ec);
  if (pp.empty() || ec || !jit::DiskCache::instance().enabled()) return {};
  jit::RecordWriter w;
  w.str(kPreprocessedFormat).str(jit::bronze_build()).str(pp).str(jit::probe_compiler(pp).version).str(cwd);
  w.str(o.filename).str(o.torch_include_dir).str(o.math_mode);
  for (const auto* pairs : {&o.headers, &o.defines, &o.constants}) {
    w.num(static_cast<long long>(pairs->size()));
    for (const auto& [a, b] : *pairs) w.str(a).str(b);
  }
  w.num(static_cast<long long>(o.include_dirs.size()));
  for (const std::string& d : o.include_dirs) w.str(d);
  return jit::Sha256().update(w.out).update(source).hex();
}

std::optional<TranslationUnit> recall_preprocessed(const std::string& key) {
  std::optional<std::string> data = key.empty() ? std::nullopt : jit::DiskCache::instance().read(key, ".pp");
  if (!data) return std::nullopt;
  jit::RecordReader r(*data);
  TranslationUnit tu;
  tu.text = r.str();
  for (long long i = 0, n = r.num(); r.ok && i < n; ++i) {
    std::string name = r.str();
    SourceFile& f = tu.files.emplace_back(std::move(name), r.str());
    for (long long k = 0, lines = r.num(); r.ok && k < lines; ++k) f.expanded_lines.insert(static_cast<int>(r.num()));
  }
  for (long long i = 0, n = r.num(); r.ok && i < n; ++i) {
    DiskFile& d = tu.disk_files.emplace_back();
    d.path = r.str();
    d.sha256 = r.str();
  }
  if (!r.ok) return std::nullopt;
  for (const DiskFile& d : tu.disk_files)
    if (!d.unchanged()) return std::nullopt;
  return tu;
}

void remember_preprocessed(const std::string& key, const TranslationUnit& tu) {
  if (key.empty()) return;
  jit::RecordWriter w;
  w.str(tu.text).num(static_cast<long long>(tu.files.size()));
  for (const SourceFile& f : tu.files) {
    w.str(f.name).str(f.text).num(static_cast<long long>(f.expanded_lines.size()));
    for (int l : f.expanded_lines) w.num(l);
  }
  w.num(static_cast<long long>(tu.disk_files.size()));
  for (const DiskFile& d : tu.disk_files) w.str(d.path).str(d.sha256);
  jit::DiskCache::instance().write(key, ".pp", w.out);
}

TranslationUnit run_preprocessor(const std::string& source, const SourceOptions& o) {
  std::string base = o.filename.substr(o.filename.find_last_of('/') + 1);
  if (base.empty() || base[0] == '.') base = "shader.metal";
  const std::string shown = printable(o.filename);
  std::vector<std::string> flags = {"-undef", "-nostdinc", "-x", "c++", "-std=c++17"};  // + the compiler's own for plain messages
  for (const std::string& m : metal_predefined_macros()) flags.push_back("-D" + m);
  // The caller's macros as #define lines of a file, not -D options: any
  // number of them fits (the command line has a limit), and a value cannot
  // reach past its own line.
  std::string defines = "#line 1 \"<command-line>\"\n";
  for (const auto& [name, value] : o.defines) {
    if (!is_identifier(name)) throw ValueError("defines: '" + name + "' is not a macro name");
    if (value.find_first_of("\r\n") != std::string::npos)
      throw ValueError("defines: the value of '" + name + "' is more than one line");
    defines += "#define " + name + " " + value + "\n";
  }

  // Where names resolve, in the preprocessor's order: "x.h" beside the
  // including file (the main source: beside headers=), the source file's
  // folder, include_dirs, bronze's <metal_*> stand-ins, torch's c10/metal.
  std::string work = jit::DiskCache::instance().make_work_dir();
  std::vector<IncludeRoot> roots(1);
  roots[0].dir = roots[0].allowed = work;
  roots[0].on_disk = false;
  roots[0].files = o.headers;
  if (o.filename.find('/') != std::string::npos) {
    std::string dir = absolute(o.filename.substr(0, o.filename.find_last_of('/')));
    if (!dir.empty()) {
      IncludeRoot& r = roots.emplace_back();
      r.dir = r.allowed = dir;
      r.quote_only = true;
      r.display = dir + "/";
    }
  }
  for (const std::string& d : o.include_dirs) {
    std::string a = absolute(d);
    std::error_code ec;
    if (a.empty() || !std::filesystem::is_directory(a, ec)) {
      jit::remove_tree(work);
      throw ValueError("include_dirs: no folder '" + d + "'");
    }
    IncludeRoot& r = roots.emplace_back();
    r.dir = r.allowed = a == "/" ? "" : a;  // "/" + "/x" would never hold "/x"
    r.display = r.dir + "/";
  }
  IncludeRoot& sdk = roots.emplace_back();
  sdk.dir = sdk.allowed = work + "/" + kSdkDir;
  sdk.on_disk = false;
  sdk.user = false;
  sdk.display = std::string(kSdkDir) + "/";
  for (const char* h : kMetalHeaders) sdk.files.emplace_back(h, "");
  for (const auto& [h, what] : kUnsupportedHeaders)
    sdk.files.emplace_back(h, std::string("#error \"") + kNotSupported + what + ": no emulation of it exists\"\n");
  if (!o.torch_include_dir.empty() && !absolute(o.torch_include_dir).empty()) {
    IncludeRoot& r = roots.emplace_back();
    r.dir = absolute(o.torch_include_dir);
    r.allowed = r.dir + "/c10/metal";
  }

  jit::PreprocessResult r;
  IncludeView view;
  TranslationUnit tu;
  try {
    for (const auto& [name, text] : o.headers) {
      check_header_name(name);
      if (name == base) throw ValueError("headers: '" + name + "' has the name of the source file");
    }
    view = make_include_view(work, base, shown, source, roots);
    const std::string prelude = work + "/defines.h";
    jit::write_file(prelude, defines);
    view.names.emplace_back(prelude, "<command-line>");
    flags.insert(flags.end(), {"-include", prelude});
    r = jit::run_preprocessor(work, view.main_path, flags);
    tu.files = view.files;
    tu.disk_files = view.disk_files;
    // Every file the preprocessor entered is one of bronze's copies: had
    // it reached another (a directive bronze's reading missed), nothing it
    // said is shown.
    for (const std::string& l : split_lines(r.output)) {
      long long n = 0;
      std::string raw;
      bool entering = false;
      if (line_marker(l, n, raw, &entering) && entering && raw[0] != '<' && view.display(raw) == raw)
        throw ShaderCompileError(shown + ": error: the preprocessor opened '" + printable(raw) +
                                 "', which bronze did not resolve; bronze reads no file outside the source's folder, "
                                 "include_dirs, headers and torch's Metal headers");
    }
    if (!r.ok) raise_compile_error(view.diagnostics(r.diagnostics), tu.files);
  } catch (...) {
    jit::remove_tree(work);
    throw;
  }
  jit::remove_tree(work);

  std::map<std::string, std::vector<std::string>> lines_of;  // display name -> its comment-free lines
  std::map<std::string, std::set<int>> expanded;             // display name -> lines a macro changed
  auto lines = [&](const std::string& name) -> const std::vector<std::string>* {
    const SourceFile* f = tu.file(name);
    if (!f) return nullptr;  // a #line naming another file: never read
    auto it = lines_of.find(name);
    if (it == lines_of.end()) it = lines_of.emplace(name, split_lines(blank_comments(f->text))).first;
    return &it->second;
  };

  std::string out;
  std::string name;
  long long line = 0;
  const std::vector<std::string>* orig = nullptr;
  auto past_int = [&](long long n) {
    if (n <= INT_MAX) return;
    throw ShaderCompileError(name + ": error: line " + std::to_string(n) + " is past the last line number (" +
                             std::to_string(INT_MAX) + ", set by #line)");
  };
  for (const std::string& l : split_lines(utf8_identifiers(r.output))) {
    long long n = 0;
    std::string raw;
    if (line_marker(l, n, raw)) {
      name = printable(view.display(raw));
      line = n;
      past_int(line);
      orig = lines(name);
      // "# 0" and the built-in pseudo files precede the source: no #line for them.
      if (n > 0 && name[0] != '<') out += "#line " + std::to_string(n) + " " + shader::quoted(name);
      out += "\n";
      continue;
    }
    if (l.find_first_not_of(" \t") != std::string::npos) past_int(line);
    // Where no macro changed a line, the user's own line (comments blanked)
    // keeps the columns that the preprocessor's spacing loses.
    if (orig && line >= 1 && static_cast<std::size_t>(line) <= orig->size() && !l.empty() &&
        squeeze((*orig)[line - 1]) == squeeze(l)) {
      out += (*orig)[line - 1];
    } else {
      out += l;
      if (orig && l.find_first_not_of(" \t") != std::string::npos) expanded[name].insert(static_cast<int>(line));
    }
    out += '\n';
    ++line;
  }
  out += constant_pragmas(o.constants);
  out += std::string("#pragma ") + kMathModePragma + " " + math_mode_name(o.math_mode) + "\n";
  for (SourceFile& f : tu.files) f.expanded_lines = std::move(expanded[f.name]);
  tu.text = std::move(out);
  return tu;
}
}  // namespace

TranslationUnit preprocess(const std::string& source, const SourceOptions& o) {
  const std::string key = preprocessed_key(source, o);
  if (auto tu = recall_preprocessed(key)) return std::move(*tu);
  TranslationUnit tu = run_preprocessor(source, o);
  remember_preprocessed(key, tu);
  return tu;
}

std::string constant_pragmas(const std::vector<std::pair<std::string, std::string>>& constants) {
  std::string out;
  for (const auto& [key, value] : constants) {
    if (value.find('\n') != std::string::npos || key.find('\n') != std::string::npos)
      throw ValueError("constants: a name and a value are one line each");
    out += std::string("#pragma ") + kConstantPragma + " " + key + " " + value + "\n";
  }
  return out;
}

}  // namespace bronze::shader
