#include "shader/preprocess.hpp"

#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <map>

#include "bronze/error.hpp"
#include "jit/disk_cache.hpp"
#include "jit/files.hpp"
#include "jit/host_compiler.hpp"
#include "shader/diagnostics.hpp"
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
constexpr const char* kTorchDir = ".torch";

void write_file(const std::string& path, const std::string& text) {
  for (std::size_t slash = path.find('/', 1); slash != std::string::npos; slash = path.find('/', slash + 1))
    ::mkdir(path.substr(0, slash).c_str(), 0700);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
  if (!f.flush()) throw Error("cannot write " + path);
}

std::string absolute(const std::string& path) {
  char buf[PATH_MAX];
  return ::realpath(path.c_str(), buf) ? std::string(buf) : std::string();
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
  if (bad || n.rfind(kSdkDir, 0) == 0 || n.rfind(kTorchDir, 0) == 0)
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

// "# 12 "name" 1 3" (GCC and Clang line markers): the line and name;
// `entering` for flag 1, the start of an included file.
bool line_marker(const std::string& l, int& line, std::string& name, bool* entering = nullptr) {
  std::size_t i = 0;
  if (l.size() < 4 || l[0] != '#') return false;
  i = l.find_first_not_of(' ', 1);
  if (i == std::string::npos || !std::isdigit(static_cast<unsigned char>(l[i]))) return false;
  line = std::atoi(l.c_str() + i);
  std::size_t q = l.find('"', i);
  if (q == std::string::npos) return false;
  name.clear();
  std::size_t k = q + 1;
  for (; k < l.size() && l[k] != '"'; ++k) {
    if (l[k] == '\\' && k + 1 < l.size()) ++k;
    name += l[k];
  }
  if (entering) *entering = l.find(" 1", k) == k + 1;
  return true;
}

// "detail/../ops.h" -> "ops.h", "./a.h" -> "a.h": the path without dot segments.
std::string normalize(const std::string& path) {
  std::vector<std::string> parts;
  std::size_t b = 0;
  while (b <= path.size()) {
    std::size_t e = path.find('/', b);
    if (e == std::string::npos) e = path.size();
    std::string part = path.substr(b, e - b);
    if (part == ".." && !parts.empty() && parts.back() != ".." && !parts.back().empty()) parts.pop_back();
    else if (part != "." && !(part.empty() && !parts.empty())) parts.push_back(part);
    b = e + 1;
  }
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? "/" : "") + parts[i];
  return out;
}

std::string quoted(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    o += c;
  }
  return o + "\"";
}
}  // namespace

bool DiskFile::unchanged() const {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && st.st_size == size &&
         st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec == mtime_ns;
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

TranslationUnit preprocess(const std::string& source, const SourceOptions& o) {
  std::string base = o.filename.substr(o.filename.find_last_of('/') + 1);
  if (base.empty() || base[0] == '.') base = "shader.metal";
  std::vector<std::string> flags = {"-undef", "-nostdinc", "-x", "c++", "-std=c++17"};  // + the compiler's own for plain messages
  for (const std::string& m : metal_predefined_macros()) flags.push_back("-D" + m);
  for (const auto& [name, value] : o.defines) {
    if (!is_identifier(name)) throw ValueError("defines: '" + name + "' is not a macro name");
    flags.push_back("-D" + name + "=" + value);
  }
  // "x.h" from the main source: the build folder (headers=) first, then the
  // folder of the user's file, when it names one on disk.
  if (o.filename.find('/') != std::string::npos) {
    std::string dir = absolute(o.filename.substr(0, o.filename.find_last_of('/')));
    if (!dir.empty()) flags.push_back("-iquote" + dir);
  }
  for (const std::string& d : o.include_dirs) {
    std::string a = absolute(d);
    struct stat st;
    if (a.empty() || ::stat(a.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      throw ValueError("include_dirs: no folder '" + d + "'");
    flags.push_back("-I" + a);
  }
  flags.push_back(std::string("-I") + kSdkDir);
  if (!o.torch_include_dir.empty()) flags.push_back(std::string("-I") + kTorchDir);

  std::string work = jit::DiskCache::instance().make_work_dir();
  jit::PreprocessResult r;
  try {
    write_file(work + "/" + base, source);
    for (const auto& [name, text] : o.headers) {
      check_header_name(name);
      if (name == base) throw ValueError("headers: '" + name + "' has the name of the source file");
      write_file(work + "/" + name, text);
    }
    for (const char* h : kMetalHeaders) write_file(work + "/" + kSdkDir + "/" + h, "");
    for (const auto& [h, what] : kUnsupportedHeaders)
      write_file(work + "/" + kSdkDir + "/" + h,
                 std::string("#error \"") + kNotSupported + what + ": no emulation of it exists\"\n");
    if (!o.torch_include_dir.empty()) {
      ::mkdir((work + "/" + kTorchDir).c_str(), 0700);
      ::mkdir((work + "/" + kTorchDir + "/c10").c_str(), 0700);
      std::string target = o.torch_include_dir + "/c10/metal";
      if (::symlink(target.c_str(), (work + "/" + kTorchDir + "/c10/metal").c_str()) != 0)
        throw Error("cannot link PyTorch's Metal headers from " + target);
    }
    // A name like an option ("-E.metal", "--help") is a path to the compiler.
    r = jit::run_preprocessor(work, base[0] == '-' ? "./" + base : base, flags);
  } catch (...) {
    jit::remove_tree(work);
    throw;
  }

  // Names as the preprocessor wrote them -> as the user knows them.
  auto display = [&](const std::string& raw) -> std::string {
    std::string n = normalize(raw);
    if (n == base) return o.filename;
    std::string torch = std::string(kTorchDir) + "/";
    if (n.rfind(torch, 0) == 0) return n.substr(torch.size());
    return n;
  };
  auto is_user_file = [&](const std::string& n) {
    return !n.empty() && n[0] != '<' && n.rfind(kSdkDir, 0) != 0;
  };

  // Includes stay inside the roots the caller named: the source's folder,
  // include_dirs, headers (the build folder) and torch's c10/metal link.
  std::vector<std::string> roots;
  for (const std::string& f : flags)
    if (f.rfind("-I/", 0) == 0 || f.rfind("-iquote/", 0) == 0) roots.push_back(f.substr(f[1] == 'I' ? 2 : 7) + "/");
  auto inside = [&](const std::string& n) {
    if (n.empty() || n[0] == '<') return true;
    if (n[0] != '/') return normalize(n).rfind("..", 0) != 0;
    std::string a = normalize(n);
    for (const std::string& root : roots)
      if (a.rfind(root, 0) == 0) return true;
    return false;
  };

  TranslationUnit tu;
  tu.files.push_back({o.filename, source});
  std::map<std::string, std::vector<std::string>> lines_of;  // raw name -> its comment-free lines
  std::map<std::string, std::set<int>> expanded;             // display name -> lines a macro changed
  auto load = [&](const std::string& raw) -> const std::vector<std::string>* {
    if (!is_user_file(raw) || !inside(raw)) return nullptr;  // a #line naming another file: never read
    auto it = lines_of.find(raw);
    if (it != lines_of.end()) return &it->second;
    std::string name = display(raw), text;
    if (const SourceFile* f = tu.file(name)) {
      text = f->text;
    } else {
      std::string path = raw[0] == '/' ? raw : work + "/" + raw;
      if (!jit::read_file(path, text)) return nullptr;
      tu.files.push_back({name, text});
      struct stat st;
      if ((raw[0] == '/' || raw.rfind(kTorchDir, 0) == 0) && ::stat(path.c_str(), &st) == 0)
        tu.disk_files.push_back({absolute(path), st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec,
                                 static_cast<long long>(st.st_size)});
    }
    return &lines_of.emplace(raw, split_lines(blank_comments(text))).first->second;
  };

  if (!r.ok) {
    // Messages name files as the preprocessor saw them: rename them.
    std::string diag;
    for (const std::string& l : split_lines(r.diagnostics)) {
      std::string lead = "In file included from ";
      std::size_t at = l.rfind(lead, 0) == 0 ? lead.size() : l.rfind("                 from ", 0) == 0 ? 22 : 0;
      std::size_t colon = l.find(':', at);
      if (colon != std::string::npos) {
        std::string raw = l.substr(at, colon - at);
        load(raw);
        diag += l.substr(0, at) + display(raw) + l.substr(colon) + "\n";
      } else {
        diag += l + "\n";
      }
    }
    jit::remove_tree(work);
    raise_compile_error(diag, tu.files);
  }

  std::string out;
  std::string raw;
  int line = 0;
  const std::vector<std::string>* orig = nullptr;
  for (const std::string& l : split_lines(r.output)) {
    int n = 0;
    std::string name;
    bool entering = false;
    if (line_marker(l, n, name, &entering) && entering && !inside(name)) {
      jit::remove_tree(work);
      throw ShaderCompileError(display(raw) + ":" + std::to_string(line) + ": error: #include of '" + name +
                                   "' reaches outside the source's folder, include_dirs, headers and torch's Metal "
                                   "headers; bronze reads no other file",
                               line, 0);
    }
    if (line_marker(l, n, name)) {
      raw = name;
      line = n;
      orig = load(raw);
      // "# 0" and the built-in pseudo files precede the source: no #line for them.
      if (n > 0 && name[0] != '<') out += "#line " + std::to_string(n) + " " + quoted(display(raw));
      out += "\n";
      continue;
    }
    // Where no macro changed a line, the user's own line (comments blanked)
    // keeps the columns that the preprocessor's spacing loses.
    if (orig && line >= 1 && static_cast<std::size_t>(line) <= orig->size() && !l.empty() &&
        squeeze((*orig)[line - 1]) == squeeze(l)) {
      out += (*orig)[line - 1];
    } else {
      out += l;
      if (orig && l.find_first_not_of(" \t") != std::string::npos) expanded[display(raw)].insert(line);
    }
    out += '\n';
    ++line;
  }
  jit::remove_tree(work);
  out += constant_pragmas(o.constants);
  out += std::string("#pragma ") + kMathModePragma + " " + math_mode_name(o.math_mode) + "\n";
  for (SourceFile& f : tu.files) f.expanded_lines = std::move(expanded[f.name]);
  tu.text = std::move(out);
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
