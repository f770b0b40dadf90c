#include "shader/includes.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <map>

#include "bronze/error.hpp"
#include "jit/files.hpp"
#include "jit/sha256.hpp"

namespace bronze::shader {
namespace {
constexpr const char* kViewDir = ".v";
constexpr const char* kRefused = "bronze-refused-";
constexpr std::size_t kMaxInclude = 1ull << 30;  // as the preprocessor's memory cap

bool ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || static_cast<unsigned char>(c) >= 0x80;
}

// "a/./b/../c" -> "a/c"; absolute paths stay absolute ("/.." stays "/..",
// outside every root).
std::string normalize(const std::string& path) {
  std::vector<std::string> parts;
  const bool absolute = !path.empty() && path[0] == '/';
  for (std::size_t b = absolute ? 1 : 0; b <= path.size();) {
    std::size_t e = path.find('/', b);
    if (e == std::string::npos) e = path.size();
    std::string part = path.substr(b, e - b);
    if (part == ".." && !parts.empty() && parts.back() != "..") parts.pop_back();
    else if (!part.empty() && part != ".") parts.push_back(part);
    b = e + 1;
  }
  std::string out = absolute ? "/" : "";
  for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? "/" : "") + parts[i];
  return out;
}

const char* file_kind(mode_t m) {
  return S_ISFIFO(m) ? "a FIFO" : S_ISCHR(m) ? "a character device" : S_ISBLK(m) ? "a block device"
         : S_ISSOCK(m) ? "a socket" : "not a regular file";
}

// What one path on disk holds for an #include: stat first, so nothing but a
// regular file is ever opened (a FIFO would block the open, a device may act
// on it); folders are passed over, as the preprocessor's search does.
enum class Found { File, Absent, Refused };
Found read_include(const std::string& path, std::string& text, std::string& why) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) return Found::Absent;
    why = std::strerror(errno);
    return Found::Refused;
  }
  if (S_ISDIR(st.st_mode)) return Found::Absent;
  if (!S_ISREG(st.st_mode)) {
    why = std::string("it is ") + file_kind(st.st_mode) + "; bronze includes regular files only";
    return Found::Refused;
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    why = std::strerror(errno);
    return Found::Refused;
  }
  bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);  // the file opened is the one looked at
  if (!ok) why = "it changed while being read; bronze includes regular files only";
  if (ok && static_cast<unsigned long long>(st.st_size) > kMaxInclude) {
    ok = false;
    why = "it is larger than 1 GiB";
  }
  text.clear();
  char buf[1 << 16];
  while (ok) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) why = std::strerror(errno);
    if (n <= 0) {
      ok = n == 0;
      break;
    }
    text.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return ok ? Found::File : Found::Refused;
}

// A path as a header name, which takes no escapes: "path", or <path> for a
// name with a '"' in it (a file named so, found by <...>).
std::string header_name_of(const std::string& path) {
  return path.find('"') == std::string::npos ? "\"" + path + "\"" : "<" + path + ">";
}

// A span of a file's text to replace.
struct Edit {
  std::size_t at, len;
  std::string text;
};

class Resolver {
 public:
  Resolver(const std::string& work, const std::vector<IncludeRoot>& roots, IncludeView& view)
      : work_(work), roots_(roots), view_(view) {
    if (work.find_first_of("\"\n") != std::string::npos)
      throw Error("bronze's build folder '" + work + "' has a '\"' or a newline in its path");
  }

  // Adds the main source and everything it may include; writes the copies.
  void run(const std::string& main_name, const std::string& main_display, const std::string& source) {
    files_.push_back({0, main_name, source, main_display, -1});
    by_path_[roots_[0].dir + "/" + main_name] = 0;
    for (std::size_t f = 0; f < files_.size(); ++f) write(f, rewrite(f));  // rewrite() may add files
    view_.main_path = view_path(0);
    for (const File& f : files_)
      if (roots_[f.root].user) view_.files.emplace_back(f.display, f.text);
  }

 private:
  struct File {
    std::size_t root;
    std::string rel;  // its name under the root's dir
    std::string text;
    std::string display;
    int chain;  // the root it was found in by a search (#include_next goes on after it), -1 otherwise
  };

  std::string view_path(std::size_t f) const {
    return work_ + "/" + kViewDir + "/" + std::to_string(files_[f].root) + "/" + files_[f].rel;
  }

  void write(std::size_t f, const std::string& text) {
    const std::string path = view_path(f);
    // A byte order mark counts only at a file's start, where the #line now stands.
    const std::size_t bom = text.compare(0, 3, "\xEF\xBB\xBF") == 0 ? 3 : 0;
    jit::write_file(path, "#line 1 " + quoted(files_[f].display) + "\n" + text.substr(bom));
    view_.names.emplace_back(path, files_[f].display);
  }

  // The root holding an absolute, normalized path: `prefer` if it does, else the first.
  int root_of(const std::string& path, int prefer) const {
    auto holds = [&](std::size_t r) { return path.rfind(roots_[r].allowed + "/", 0) == 0; };
    if (prefer >= 0 && holds(static_cast<std::size_t>(prefer))) return prefer;
    for (std::size_t r = 0; r < roots_.size(); ++r)
      if (holds(r)) return static_cast<int>(r);
    return -1;
  }

  // The file at `path` in root r, read once; -1 when there is none (`why`
  // says why when one is there and refused).
  int file_at(const std::string& path, std::size_t r, int chain, std::string& why) {
    if (auto it = by_path_.find(path); it != by_path_.end()) return it->second;
    if (auto it = no_file_.find(path); it != no_file_.end()) {
      why = it->second;
      return -1;
    }
    const IncludeRoot& root = roots_[r];
    const std::string rel = path.substr(root.dir.size() + 1);
    std::string text;
    if (root.on_disk) {
      Found found = read_include(path, text, why);
      view_.disk_files.push_back({path, found == Found::File ? jit::sha256_hex(text) : std::string()});
      if (found != Found::File) {
        no_file_[path] = why;
        return -1;
      }
    } else {
      auto it = root.files.begin();
      while (it != root.files.end() && normalize(it->first) != rel) ++it;
      if (it == root.files.end()) return -1;
      text = it->second;
    }
    files_.push_back({r, rel, std::move(text), printable(root.display + rel), chain});
    return by_path_[path] = static_cast<int>(files_.size() - 1);
  }

  // `name` as `#include "name"` (angled: <name>) in file `from` finds it:
  // the view path of its copy, or the stand-in path of a refusal saying why.
  std::string resolve(const std::string& name, bool angled, bool next, std::size_t from, const std::string& at) {
    const std::size_t from_root = files_[from].root;  // files_ grows below
    const int from_chain = files_[from].chain;
    std::vector<std::pair<std::string, int>> candidates;  // path, root index when it is a search root
    if (!name.empty() && name[0] == '/') {
      candidates.emplace_back(normalize(name), -1);
    } else {
      if (!angled && !next) {
        std::string dir = roots_[from_root].dir + "/" + files_[from].rel;
        candidates.emplace_back(normalize(dir.substr(0, dir.rfind('/')) + "/" + name), -1);
      }
      for (std::size_t r = next && from_chain >= 0 ? from_chain + 1 : 0; r < roots_.size(); ++r)
        if (!(angled && roots_[r].quote_only)) candidates.emplace_back(normalize(roots_[r].dir + "/" + name), r);
    }
    const std::string shown = angled ? "<" + name + ">" : "\"" + name + "\"";
    const bool climbs = ("/" + name + "/").find("/../") != std::string::npos;
    bool outside = false;
    for (const auto& [path, search] : candidates) {
      // A path that leaves the roots (absolute, or by "..") is passed over
      // whether or not it exists there: bronze looks at nothing outside
      // them, and a name that finds nothing inside is refused as leaving
      // them. `attention/../utils.metal` of a source in the include folder
      // that holds utils.metal stays inside. A root that does not hold a
      // plain name (torch's folder outside c10/metal) is passed over.
      int r = root_of(path, search >= 0 ? search : static_cast<int>(from_root));
      if (r < 0) {
        outside = outside || search < 0 || climbs;
        continue;
      }
      std::string why;
      int file = file_at(path, static_cast<std::size_t>(r), search, why);
      if (file >= 0) return view_path(static_cast<std::size_t>(file));
      if (!why.empty()) return refuse(at, "cannot include " + shown + " (" + printable(path) + "): " + why);
    }
    if (outside)
      return refuse(at, shown + " reaches outside the source's folder, include_dirs, headers and torch's Metal "
                            "headers; bronze reads no other file");
    return refuse(at, shown + ": no such file in the source's folder, include_dirs, headers or torch's Metal headers");
  }

  std::string refuse(const std::string& at, const std::string& why) {
    view_.refusals.push_back(at + ": error: " + why);
    return work_ + "/" + kRefused + std::to_string(view_.refusals.size() - 1);
  }

  // File f's text with every file name resolved; the files those names
  // find are added to files_ (resolved in turn by run()). The text is read
  // as the preprocessor reads it, or a directive it sees would pass
  // unresolved: line splices removed first (GCC takes `#inc\<newline>lude`),
  // a UTF-8 byte order mark skipped, `%:` for `#`, raw strings by their
  // exact prefixes.
  std::string rewrite(std::size_t f) {
    const std::string text = files_[f].text;  // a copy: files_ grows meanwhile
    std::string s;                            // text without its line splices
    std::vector<std::size_t> at_text;         // s[i] is text[at_text[i]]
    for (std::size_t i = 0; i < text.size(); ++i) {
      if (text[i] == '\\') {  // a backslash, blanks, a newline: a splice (GCC allows the blanks)
        std::size_t k = text.find_first_not_of(" \t\r\f\v", i + 1);
        if (k != std::string::npos && text[k] == '\n') {
          i = k;
          continue;
        }
      }
      s += text[i];
      at_text.push_back(i);
    }
    at_text.push_back(text.size());
    const std::size_t n = s.size();
    std::vector<Edit> edits;  // in s's offsets
    std::vector<std::size_t> line_starts = {0};
    for (std::size_t i = 0; i < text.size(); ++i)
      if (text[i] == '\n') line_starts.push_back(i + 1);
    auto position = [&](std::size_t offset) {
      const std::size_t t = at_text[offset];
      std::size_t line = std::upper_bound(line_starts.begin(), line_starts.end(), t) - line_starts.begin();
      return std::make_pair(static_cast<int>(line), static_cast<int>(t - line_starts[line - 1]) + 1);
    };
    auto where = [&](std::size_t offset) {
      auto [line, col] = position(offset);
      return files_[f].display + ":" + std::to_string(line) + ":" + std::to_string(col);
    };
    auto fail = [&](std::size_t offset, const std::string& why) {
      auto [line, col] = position(offset);
      throw ShaderCompileError(where(offset) + ": error: " + why, line, col);
    };
    // Skips blanks and comments from i (newlines too outside a directive).
    auto skip = [&](std::size_t i, bool in_directive) {
      while (i < n) {
        if (s[i] == '/' && i + 1 < n && s[i + 1] == '*') {
          std::size_t e = s.find("*/", i + 2);
          i = e == std::string::npos ? n : e + 2;
        } else if (s[i] == '/' && i + 1 < n && s[i + 1] == '/') {
          i = std::min(s.find('\n', i), n);
        } else if (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\f' || s[i] == '\v' ||
                   (!in_directive && s[i] == '\n')) {
          ++i;
        } else {
          break;
        }
      }
      return i;
    };
    auto identifier = [&](std::size_t i) {
      std::size_t e = i;
      while (e < n && ident_char(s[e])) ++e;
      return s.substr(i, e - i);
    };
    // A string or character literal from i (raw strings too); returns its end.
    auto literal_end = [&](std::size_t i) {
      std::size_t p = i;
      while (p > 0 && ident_char(s[p - 1])) --p;
      const std::string prefix = s.substr(p, i - p);
      if (s[i] == '"' && (prefix == "R" || prefix == "u8R" || prefix == "uR" || prefix == "UR" || prefix == "LR")) {
        std::size_t open = s.find('(', i);
        if (open == std::string::npos) return n;
        std::string close = ")" + s.substr(i + 1, open - i - 1) + "\"";
        std::size_t e = s.find(close, open);
        return e == std::string::npos ? n : e + close.size();
      }
      const char q = s[i];
      for (++i; i < n && s[i] != q && s[i] != '\n'; ++i)
        if (s[i] == '\\') ++i;
      return i < n && s[i] == q ? i + 1 : std::min(i, n);  // unterminated: to the line's end
    };
    // A header name ("x.h" or <x.h>) at i: its name, end, and whether angled.
    auto header_name = [&](std::size_t i, std::string& name, std::size_t& end, bool& angled) {
      if (i >= n || (s[i] != '"' && s[i] != '<')) return false;
      angled = s[i] == '<';
      std::size_t e = s.find_first_of(angled ? ">\n" : "\"\n", i + 1);
      if (e == std::string::npos || s[e] == '\n') return false;
      name = s.substr(i + 1, e - i - 1);
      end = e + 1;
      return true;
    };
    // The text of `GCC dependency` outside a #pragma line (a _Pragma string,
    // a macro that builds one) names a path bronze cannot see to resolve.
    auto no_dependency = [&](std::size_t b, std::size_t e) {
      for (std::size_t at = s.find("GCC", b); at != std::string::npos && at < e; at = s.find("GCC", at + 3)) {
        if ((at > 0 && ident_char(s[at - 1])) || (at + 3 < n && ident_char(s[at + 3]))) continue;
        std::size_t k = at + 3;
        while (k < n && (std::isspace(static_cast<unsigned char>(s[k])) || s[k] == '\\')) ++k;
        if (identifier(k) == "dependency")
          fail(at, "'GCC dependency' outside a '#pragma GCC dependency' line (a _Pragma or a macro): bronze "
                   "resolves the file names of directives written out only");
      }
    };
    auto resolved = [&](std::size_t at, std::size_t end, const std::string& name, bool angled, bool next) {
      edits.push_back({at, end - at, header_name_of(resolve(name, angled, next, f, where(at)))});
    };
    // Each __has_include(...) in [b, e) with its operand resolved.
    auto has_includes = [&](std::size_t b, std::size_t e) {
      for (std::size_t i = b; i < e;) {
        if (!ident_char(s[i])) {
          std::size_t k = skip(i, true);
          i = k > i ? k : s[i] == '"' || s[i] == '\'' ? literal_end(i) : i + 1;
          continue;
        }
        const std::string id = identifier(i);
        i += id.size();
        const bool next = id == "__has_include_next";
        if (id != "__has_include" && !next && id != "__has_embed") continue;
        std::size_t open = skip(i, true);
        if (open >= e || s[open] != '(') continue;  // `defined(__has_include)`, `#ifdef __has_include`
        std::string name;
        std::size_t end = 0;
        bool angled = false;
        std::size_t op = skip(open + 1, true);
        if (!header_name(op, name, end, angled))
          fail(op, id + " of a computed name (a macro): bronze resolves file names written out in the source only");
        resolved(op, end, name, angled, next);
        i = end;
      }
    };

    bool line_start = true;
    for (std::size_t i = s.compare(0, 3, "\xEF\xBB\xBF") == 0 ? 3 : 0; i < n;) {
      const char c = s[i];
      if (c == '\n') {
        line_start = true;
        ++i;
        continue;
      }
      if (std::size_t k = skip(i, true); k > i) {
        i = k;
        continue;
      }
      const std::size_t hash = c == '#' ? 1 : c == '%' && i + 1 < n && s[i + 1] == ':' ? 2 : 0;
      if (hash && line_start) {
        // The directive's logical line: to a newline outside comments.
        std::size_t e = i + hash;
        while (e < n && s[e] != '\n') {
          std::size_t k = skip(e, true);
          if (k > e) e = k;
          else if (s[e] == '"' || s[e] == '\'') e = literal_end(e);
          else ++e;
        }
        const std::size_t name_at = skip(i + hash, true);
        const std::string directive = identifier(name_at);
        const std::size_t op = skip(name_at + directive.size(), true);
        std::string name;
        std::size_t end = 0;
        bool angled = false;
        if (directive == "include" || directive == "include_next" || directive == "import" || directive == "embed" ||
            directive == "__include_macros") {  // Clang's, for -imacros
          if (!header_name(op, name, end, angled))
            fail(op, "#" + directive + " of a computed name (a macro): bronze resolves file names written out in "
                     "the source only");
          resolved(op, end, name, angled, directive == "include_next");
          has_includes(end, e);  // #embed's parameters
        } else if (directive == "pragma" && identifier(op) == "GCC" &&
                   identifier(skip(op + 3, true)) == "dependency") {
          const std::size_t at = skip(skip(op + 3, true) + 10, true);
          if (!header_name(at, name, end, angled))
            fail(at, "#pragma GCC dependency of a computed name: bronze resolves file names written out only");
          resolved(at, end, name, angled, false);
        } else {
          no_dependency(i, e);
          has_includes(op, e);
        }
        i = e;
        line_start = false;
        continue;
      }
      line_start = false;
      if (c == '"' || c == '\'') {
        std::size_t e = literal_end(i);
        no_dependency(i, e);
        i = e;
      } else if (ident_char(c)) {
        std::size_t e = i + identifier(i).size();
        if (e < n && s[e] == '"') {  // a literal's prefix (u8, R, ...)
          i = e;
          continue;
        }
        if (s.compare(i, e - i, "GCC") == 0) no_dependency(i, skip(e, false) + 10);
        i = e;
      } else {
        ++i;
      }
    }
    // The edits in the text's own offsets; the newlines of splices an edit
    // spans come back as splices, so every later line keeps its number.
    std::string out;
    std::size_t pos = 0;
    for (const Edit& ed : edits) {
      const std::size_t from = at_text[ed.at], to = at_text[ed.at + ed.len - 1] + 1;
      out.append(text, pos, from - pos);
      out += ed.text;
      for (std::size_t k = from; k < to; ++k)
        if (text[k] == '\n') out += "\\\n";
      pos = to;
    }
    return out + text.substr(pos);
  }

  std::string work_;
  const std::vector<IncludeRoot>& roots_;
  IncludeView& view_;
  std::vector<File> files_;
  std::map<std::string, int> by_path_;  // absolute path -> file
  std::map<std::string, std::string> no_file_;  // a path on disk with no file to include -> why ("" absent)
};
}  // namespace

std::string quoted(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (c == '\n') o += "\\n";
    else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      char oct[5];
      std::snprintf(oct, sizeof oct, "\\%03o", static_cast<unsigned char>(c));
      o += oct;
    } else {
      o += c;
    }
  }
  return o + "\"";
}

std::string printable(const std::string& name) {
  std::string q = quoted(name);
  std::string o;
  for (std::size_t i = 1; i + 1 < q.size(); ++i) {  // keeps the control characters' escapes only
    if (q[i] == '\\' && (q[i + 1] == '"' || q[i + 1] == '\\')) ++i;
    o += q[i];
  }
  return o;
}

std::string IncludeView::display(const std::string& name) const {
  for (const auto& [path, shown] : names)
    if (path == name) return shown;
  return name;
}

std::string IncludeView::diagnostics(const std::string& raw) const {
  std::string out;
  const std::string refused = work + "/" + kRefused;
  for (std::size_t b = 0; b < raw.size();) {
    std::size_t e = raw.find('\n', b);
    if (e == std::string::npos) e = raw.size();
    std::string l = raw.substr(b, e - b);
    b = e + 1;
    if (std::size_t at = l.find(refused); at != std::string::npos) {
      std::size_t k = std::strtoul(l.c_str() + at + refused.size(), nullptr, 10);
      if (k < refusals.size()) l = refusals[k];
    }
    for (const auto& [path, shown] : names)
      for (std::size_t at = l.find(path); at != std::string::npos; at = l.find(path, at + shown.size()))
        l.replace(at, path.size(), shown);
    for (std::size_t at = l.find(work + "/"); at != std::string::npos; at = l.find(work + "/", at))
      l.erase(at, work.size() + 1);
    out += l + "\n";
  }
  return out;
}

IncludeView make_include_view(const std::string& work, const std::string& main_name, const std::string& main_display,
                              const std::string& source, const std::vector<IncludeRoot>& roots) {
  IncludeView view;
  view.work = work;
  Resolver(work, roots, view).run(main_name, main_display, source);
  return view;
}

}  // namespace bronze::shader
