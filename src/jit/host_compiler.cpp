#include "jit/host_compiler.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iterator>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include "bronze/error.hpp"
#include "jit/disk_cache.hpp"
#include "jit/env.hpp"
#include "jit/files.hpp"
#include "jit/interrupt.hpp"
#include "jit/log.hpp"
#include "jit/sha256.hpp"

extern char** environ;

namespace bronze::jit {
namespace {
constexpr const char* kBronzeAbi = "bronze-cpu-jit-1";

std::string which(const std::string& name) {
  if (name.find('/') != std::string::npos) return ::access(name.c_str(), X_OK) == 0 ? name : "";
  const char* path = std::getenv("PATH");
  std::stringstream ss(path ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    std::string p = (dir.empty() ? "." : dir) + "/" + name;
    if (::access(p.c_str(), X_OK) == 0) return p;
  }
  return "";
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The names in dir ending in `ext`.
std::vector<std::string> files_ending(const std::string& dir, const std::string& ext) {
  std::vector<std::string> names;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::string n = it->path().filename();
    if (n.size() > ext.size() && n.compare(n.size() - ext.size(), ext.size(), ext) == 0) names.push_back(n);
  }
  return names;
}

// A compiler under RLIMIT_AS fails its allocations: GCC says "out of
// memory" or "virtual memory exhausted"; an abort signal counts too.
bool killed_for_memory(const std::string& text) {
  return text.find("out of memory") != std::string::npos || text.find("virtual memory exhausted") != std::string::npos ||
         text.find("cannot allocate memory") != std::string::npos || text.find("std::bad_alloc") != std::string::npos;
}

// What a compiler run may take before it is stopped ($BRONZE_COMPILE_TIMEOUT
// seconds, $BRONZE_COMPILE_MEMORY bytes with an optional K/M/G unit):
// generous, so no real kernel meets them, but an include of /dev/zero or a
// macro bomb cannot take the machine.
struct Limits {
  unsigned long long seconds = 600;
  unsigned long long memory = 8ull << 30;
};

const Limits& limits() {
  static const Limits l = [] {
    Limits x;
    x.seconds = env_size("BRONZE_COMPILE_TIMEOUT", x.seconds);
    x.memory = env_size("BRONZE_COMPILE_MEMORY", x.memory);
    return x;
  }();
  return l;
}

// Runs argv with its messages (stderr, and stdout when `out` is empty)
// into `messages` and its stdout into the file `out`, in `cwd` when given,
// under limits(); returns the exit status. Messages come through a pipe,
// not a file: on a full disk the linker's "No space left on device" would
// be lost with the file. The compiler's stdin is /dev/null: it never reads
// the process's input. Past a limit the run is killed and
// ShaderCompileError says which limit; interrupted (jit/interrupt.hpp), it
// is killed and Interrupted thrown, unless `interruptible` is false.
int run(const std::vector<std::string>& argv, std::string& messages, const std::string& out = {},
        const std::string& cwd = {}, unsigned long long memory_cap = ~0ull, bool interruptible = true) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  Limits lim = limits();
  lim.memory = std::min(lim.memory, memory_cap);
  // Everything the child needs is ready before fork: after it, only
  // async-signal-safe calls until exec.
  const rlimit mem{static_cast<rlim_t>(lim.memory), static_cast<rlim_t>(lim.memory)};
  // The time limit also as CPU seconds, which every process the compiler
  // starts inherits: bounded even when this process dies and its deadline
  // with it (the driver itself dies with its parent: PR_SET_PDEATHSIG).
  const rlim_t cpu = static_cast<rlim_t>(std::min<unsigned long long>(lim.seconds, 1ull << 40)) + 1;
  const rlimit cpu_limit{cpu, cpu + 1};
  const pid_t parent = ::getpid();
  const char* out_path = out.empty() ? nullptr : out.c_str();
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) throw Error(std::string("cannot start the compiler: ") + std::strerror(errno));
  pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    throw Error("cannot start the compiler " + argv[0] + ": " + std::strerror(err));
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(126);  // the parent died before the line above
    ::setrlimit(RLIMIT_AS, &mem);
    ::setrlimit(RLIMIT_CPU, &cpu_limit);
    int in = ::open("/dev/null", O_RDONLY);
    int o = out_path ? ::open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600) : pipe_fds[1];
    if (in < 0 || o < 0 || (!cwd.empty() && ::chdir(cwd.c_str()) != 0)) ::_exit(126);
    ::dup2(in, 0);
    ::dup2(o, 1);
    ::dup2(pipe_fds[1], 2);
    ::execve(args[0], args.data(), environ);
    ::_exit(127);
  }
  ::close(pipe_fds[1]);
  int reader = pipe_fds[0];
  ::fcntl(reader, F_SETFL, O_NONBLOCK);
  messages.clear();
  // Reads what the pipe holds now; closes it at its end. A compiler's
  // messages are kept up to 1 MiB (a macro bomb's errors could fill memory).
  auto drain = [&] {
    char buf[1 << 14];
    for (;;) {
      const ssize_t n = ::read(reader, buf, sizeof buf);
      if (n > 0) {
        messages.append(buf, std::min<std::size_t>(static_cast<std::size_t>(n), (1u << 20) - std::min<std::size_t>(messages.size(), 1u << 20)));
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n == 0) {  // every writer has closed it
        ::close(reader);
        reader = -1;
      }
      return;
    }
  };
  // Waits with the deadline: a pidfd to poll where the kernel has one,
  // else short sleeps; in slices, between which an interrupt is looked for.
  // (At most 2^32 s, about 136 years: a larger limit would overflow the clock.)
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(std::min<unsigned long long>(lim.seconds, 1ull << 32));
  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  int status = 0;
  bool timed_out = false, stopped = false;
  for (;;) {
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) {
      if (reader >= 0) ::close(reader);
      if (pidfd >= 0) ::close(pidfd);
      throw Error("waiting for the compiler failed");
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    stopped = interruptible && interrupted();
    if (left.count() <= 0 || stopped) {
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      timed_out = !stopped;
      break;
    }
    pollfd p[2] = {{pidfd, POLLIN, 0}, {reader, POLLIN, 0}};
    const int slice = static_cast<int>(std::min<long long>(left.count(), 50));
    if (pidfd >= 0 || reader >= 0) ::poll(p, 2, pidfd >= 0 ? slice : std::min(slice, 2));  // negative fds are passed over
    else ::usleep(2000);
    if (reader >= 0) drain();
  }
  if (reader >= 0) {
    drain();  // what the pipe still holds (a process the compiler left behind may keep it open: no waiting)
    if (reader >= 0) ::close(reader);
  }
  if (pidfd >= 0) ::close(pidfd);
  if (stopped) throw Interrupted();
  if (timed_out)
    throw ShaderCompileError("the compiler ran past its time limit of " + std::to_string(lim.seconds) +
                             " s and was stopped ($BRONZE_COMPILE_TIMEOUT sets the limit)");
  if (WIFSIGNALED(status)) {  // named: a helper's crash is not the compiler's
    const std::string program = argv[0].substr(argv[0].rfind('/') + 1);
    throw ShaderCompileError(program + " was killed by signal " + std::to_string(WTERMSIG(status)) + " (" +
                             ::strsignal(WTERMSIG(status)) + "; its memory limit is " +
                             std::to_string(lim.memory >> 20) + " MiB: $BRONZE_COMPILE_MEMORY)");
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0 && killed_for_memory(messages))
    throw ShaderCompileError("the compiler ran out of its memory limit of " + std::to_string(lim.memory >> 20) +
                             " MiB and was stopped" +
                             (lim.memory < limits().memory ? std::string(" (a preprocessor run's cap)")
                                                           : std::string(" ($BRONZE_COMPILE_MEMORY sets the limit)")));
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
    throw Error("cannot start the compiler " + argv[0]);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

// Predefined macros say what a compiler is, whatever its file is called
// (`c++` is either; Clang defines __GNUC__ too, so it is asked first).
constexpr const char* kProbeSource =
    "#if defined(__clang__)\n"
    "bronze_compiler_kind clang __clang_major__ __clang_minor__ __clang_patchlevel__\n"
    "#elif defined(__GNUC__)\n"
    "bronze_compiler_kind gcc __GNUC__ __GNUC_MINOR__ __GNUC_PATCHLEVEL__\n"
    "#else\n"
    "bronze_compiler_kind unknown 0 0 0\n"
    "#endif\n";

// What every kernel needs of the compiler: C++17, _Float16 (half on the
// CPU), __builtin_bit_cast, a shared object linked with -Wl,-z,defs.
constexpr const char* kWorksSource =
    "static_assert(__cplusplus >= 201703L, \"C++17\");\n"
    "typedef _Float16 half;\n"
    "extern \"C\" __attribute__((visibility(\"default\"))) float bronze_probe(float x) {\n"
    "  half h = (half)x;\n"
    "  return (float)(h * h) + __builtin_bit_cast(float, (unsigned int)__builtin_bit_cast(unsigned short, h));\n"
    "}\n";

// The first lines of a compiler's output, for a message.
std::string first_lines(const std::string& text, int n = 4) {
  std::string out;
  std::stringstream ss(text);
  for (std::string l; n > 0 && std::getline(ss, l);) {
    if (l.empty()) continue;
    out += (out.empty() ? "" : "\n") + l;
    --n;
  }
  return out.empty() ? "(it printed nothing)" : out;
}

// A shared object, not (say) `cpp`'s text under its name.
bool is_elf(const std::string& path) {
  char magic[4] = {0};
  std::ifstream f(path, std::ios::binary);
  return f.read(magic, 4) && std::memcmp(magic, "\x7f" "ELF", 4) == 0;
}

// Runs `argv` in a fresh folder holding `file` (name, text); returns the
// exit status (-1 when it could not run: `log` then says why) with its
// stdout in `out` (when asked) and its messages in `log`. With `elf`, a
// run that leaves no ELF file of that name counts as failed.
int run_in_scratch(std::vector<std::string> argv, const std::pair<std::string, std::string>& file, std::string& log,
                   std::string* out, const char* elf = nullptr) {
  std::string work = DiskCache::instance().make_work_dir();
  int rc = -1;
  try {
    write_file(work + "/" + file.first, file.second);
    // Not interruptible: these short runs (the compiler's probes) hold locks
    // that a thread holding Python's GIL may wait on, and looking for a
    // Python signal takes the GIL.
    rc = run(argv, log, out ? work + "/out" : std::string(), work, 1ull << 30, false);
    if (out) *out = read_file(work + "/out");
    if (rc == 0 && elf && !is_elf(work + "/" + elf)) {
      rc = 1;
      log = std::string("it exited successfully but wrote no shared object (") + elf + " is not an ELF file)\n" + log;
    }
  } catch (const ValueError&) {  // a bad $BRONZE_COMPILE_* value: the user's to fix, not the compiler's fault
    jit::remove_tree(work);
    throw;
  } catch (const std::exception& e) {
    log = e.what();
    rc = -1;
  }
  jit::remove_tree(work);
  return rc;
}

// Clang before 19 writes each -fstack-usage line with the unit's own file
// name (kernel.cpp) but the line its #line directives give: the file is put
// back from those directives (the one at that line whose text names the
// function, else the first). GCC's and newer Clang's lines pass unchanged.
std::string presumed_stack_usage(const std::string& usage, const std::string& unit_path, const std::string& source) {
  struct Line {
    std::string file, text;
  };
  std::multimap<long, Line> by_line;
  std::string file;
  long line = 0;
  std::stringstream src(source);
  for (std::string l; std::getline(src, l);) {
    if (l.rfind("#line ", 0) == 0) {
      char* end = nullptr;
      long n = std::strtol(l.c_str() + 6, &end, 10);
      std::size_t q = l.find('"');
      if (n > 0) {
        if (q != std::string::npos) {
          file.clear();
          for (std::size_t i = q + 1; i < l.size() && l[i] != '"'; ++i) file += l[i] == '\\' && i + 1 < l.size() ? l[++i] : l[i];
        }
        line = n;
        continue;
      }
    }
    if (line > 0) by_line.emplace(line++, Line{file, l});
  }
  std::string out;
  std::stringstream in(usage);
  for (std::string l; std::getline(in, l);) {
    for (const std::string& unit : {unit_path, std::string("kernel.cpp")}) {
      if (l.rfind(unit + ":", 0) != 0) continue;
      const char* rest = l.c_str() + unit.size() + 1;
      char* end = nullptr;
      long n = std::strtol(rest, &end, 10);
      if (n <= 0 || *end != ':') break;
      std::string fn = function_name(std::string(end + 1, std::strcspn(end + 1, "\t")));
      auto [b, e] = by_line.equal_range(n);
      if (b == e) break;
      auto pick = b;
      for (auto it = b; it != e; ++it)
        if (!fn.empty() && it->second.text.find(fn) != std::string::npos) {
          pick = it;
          break;
        }
      l = pick->second.file + ":" + std::string(rest);
      break;
    }
    out += l + "\n";
  }
  return out;
}
}  // namespace

std::string HostCompiler::kind_name() const {
  return kind == CompilerKind::Gcc ? "GCC" : kind == CompilerKind::Clang ? "Clang" : "unknown";
}

std::string HostCompiler::describe() const {
  std::string d = path;
  if (kind != CompilerKind::Unknown) d += " (" + kind_name() + " " + version;
  else d += " (";
  d += chosen_by.empty() ? std::string(kind != CompilerKind::Unknown ? ")" : "not identified)")
                         : std::string(kind != CompilerKind::Unknown ? ", " : "") + "from " + chosen_by + ")";
  return d;
}

std::vector<std::string> HostCompiler::plain_diagnostics_flags() const {
  // GCC spells "no source excerpt" -fno-diagnostics-show-caret, Clang
  // -fno-caret-diagnostics (and refuses GCC's spelling); both take
  // -fdiagnostics-color=never.
  if (kind == CompilerKind::Clang) return {"-fdiagnostics-color=never", "-fno-caret-diagnostics", "-fno-diagnostics-fixit-info"};
  return {"-fdiagnostics-color=never", "-fno-diagnostics-show-caret"};
}

namespace {
// The program a path runs, as a cache key that changes when it is
// replaced: the name run (`clang` and `clang++` are one file), the file it
// resolves to, its size and time.
std::string file_identity(const std::string& p) {
  std::error_code ec;
  std::string resolved = std::filesystem::canonical(p, ec);
  if (ec) resolved = p;
  struct stat st {};
  ::stat(resolved.c_str(), &st);
  return p + ":" + resolved + ":" + std::to_string(st.st_size) + ":" + std::to_string(st.st_mtime);
}
}  // namespace

const CompilerProbe& probe_compiler(const std::string& path) {
  static std::mutex mu;
  static std::map<std::string, CompilerProbe> probes;
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = probes.find(path); it != probes.end()) return it->second;
  CompilerProbe p;
  // What a compiler is, once per file: running it is most of a later
  // process's first call (tens of milliseconds for GCC, up to 0.2 s for
  // Clang), so the disk cache keeps what it printed.
  DiskCache& cache = DiskCache::instance();
  const std::string key = sha256_hex("bronze-compiler-probe-1:" + file_identity(path));
  std::string out;
  if (auto known = cache.read(key, ".probe", false)) {
    out = *known;
  } else {
    std::string log;
    int rc = run_in_scratch({path, "-E", "-x", "c++", "probe.cpp"}, {"probe.cpp", kProbeSource}, log, &out);
    if (rc != 0 || out.find("bronze_compiler_kind ") == std::string::npos) {
      p.status = rc == 0 ? "running it with -E (as the C preprocessor) printed no preprocessed C++"
                         : "running it with -E (as the C preprocessor) failed: " + first_lines(log, 2);
      return probes.emplace(path, p).first->second;
    }
    out = out.substr(out.find("bronze_compiler_kind "));
    out = out.substr(0, out.find('\n'));
    cache.write(key, ".probe", out, false);
  }
  char kind[16] = {0};
  int major = 0, minor = 0, patch = 0;
  std::sscanf(out.c_str(), "bronze_compiler_kind %15s %d %d %d", kind, &major, &minor, &patch);
  p.kind = std::strcmp(kind, "clang") == 0 ? CompilerKind::Clang
           : std::strcmp(kind, "gcc") == 0 ? CompilerKind::Gcc
                                           : CompilerKind::Unknown;
  p.major = major;
  p.version = std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
  if (p.kind == CompilerKind::Unknown)
    p.status = "it is neither GCC nor Clang (it defines neither __GNUC__ nor __clang__), the compilers bronze knows "
               "the options of";
  return probes.emplace(path, p).first->second;
}

const std::string& HostCompiler::works() const {
  static std::mutex mu;
  static std::map<std::string, std::string> results;
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = results.find(path); it != results.end()) return it->second;
  std::string why;
  if (!available()) {
    why = status;
  } else {
    std::vector<std::string> argv = {path, "-std=c++17", "-O1", "-fPIC", "-shared", "-w"};
    for (const auto& f : plain_diagnostics_flags()) argv.push_back(f);
    argv.insert(argv.end(), {"-Wl,-z,defs", "-o", "probe.so", "probe.cpp"});
    std::string log;
    int rc = run_in_scratch(argv, {"probe.cpp", kWorksSource}, log, nullptr, "probe.so");
    if (rc != 0)
      why = describe() + " cannot build bronze's kernels (C++17 with _Float16 into a shared object; bronze needs "
            "GCC 12 or newer, or Clang 15 or newer): " + first_lines(log);
  }
  return results.emplace(path, why).first->second;
}

void HostCompiler::raise_unusable(const std::string& why) const {
  if (!chosen_by.empty() && !status.empty()) throw ValueError(why);
  throw NotSupportedError("the CPU backend compiles shaders with a host compiler: " + why);
}

const HostCompiler& HostCompiler::get() {
  static const HostCompiler c = [] {
    HostCompiler h;
    auto take = [&](const std::string& p) {
      const CompilerProbe& probe = probe_compiler(p);
      h.path = p;
      h.identity = file_identity(p);
      h.kind = probe.kind;
      h.version = probe.version;
      h.major = probe.major;
      h.clang = probe.kind == CompilerKind::Clang;
      h.status = probe.status;
    };
    for (const char* var : {"BRONZE_CXX", "CXX"}) {
      const char* v = std::getenv(var);
      if (!v || !*v) continue;
      // The one named is used or is an error: never another silently.
      h.chosen_by = std::string("$") + var;
      std::string p = which(v);
      struct stat st {};
      if (p.empty() || ::stat(p.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
        h.path = v;
        h.status = h.chosen_by + "='" + v + "' names no executable file" +
                   (std::string(v).find_first_of(" \t") != std::string::npos
                        ? " (it takes one program, without options: bronze chooses the options)"
                        : "") +
                   "; set it to a C++ compiler (g++, clang++, or a path to one) or unset it";
        return h;
      }
      take(p);
      if (!h.status.empty()) h.status = h.chosen_by + "='" + v + "' (" + p + ") is not a C++ compiler bronze can use: " + h.status;
      return h;
    }
    std::string first_problem;
    for (const char* n : {"c++", "g++", "clang++"}) {
      std::string p = which(n);
      if (p.empty()) continue;
      take(p);
      if (h.status.empty()) return h;
      if (first_problem.empty()) first_problem = p + ": " + h.status;
    }
    h = HostCompiler();
    h.status = "no C++ compiler found (tried $BRONZE_CXX, $CXX, c++, g++, clang++" +
               (first_problem.empty() ? std::string() : "; " + first_problem) + "); install g++";
    return h;
  }();
  return c;
}

std::string preprocessor_path() {
  static const std::string p = [] {
    const HostCompiler& cc = HostCompiler::get();
    if (cc.available()) return cc.path;
    if (!cc.chosen_by.empty()) return std::string();  // the one chosen or none, never another
    // GCC's preprocessor alone (a CUDA machine without g++) takes the same flags.
    std::string cpp = which("cpp");
    if (cpp.empty() || !probe_compiler(cpp).status.empty()) return std::string();
    log(LogLevel::Info, [&] { return "no C++ compiler (" + cc.status + "): Metal sources are preprocessed by " + cpp; });
    return cpp;
  }();
  return p;
}

PreprocessResult run_preprocessor(const std::string& dir, const std::string& main_file,
                                  const std::vector<std::string>& flags) {
  const HostCompiler& cc = HostCompiler::get();
  if (!cc.available() && !cc.chosen_by.empty()) cc.raise_unusable(cc.status);
  std::string path = preprocessor_path();
  if (path.empty())
    throw NotSupportedError("compile_shader runs a C preprocessor before it reads Metal, and none was found "
                            "(tried $BRONZE_CXX, $CXX, c++, g++, clang++, cpp); install g++, or on a CUDA machine "
                            "without a host compiler the preprocessor alone (Debian: apt-get install cpp)");
  HostCompiler pp = cc;
  pp.kind = probe_compiler(path).kind;
  std::vector<std::string> argv = {path, "-E"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  for (const auto& f : pp.plain_diagnostics_flags()) argv.push_back(f);
  argv.push_back(main_file);
  PreprocessResult r;
  const std::string out = dir + "/preprocessed.out";
  // Preprocessing needs little memory: a lower cap stops a macro bomb early.
  const auto start = std::chrono::steady_clock::now();
  r.ok = run(argv, r.diagnostics, out, dir, 1ull << 30) == 0;
  log(LogLevel::Info, [&] {
    return "preprocess " + LogScope::name() + ": " + (r.ok ? "done" : "failed") + " in " + elapsed(start) + ": " +
           command_line(argv);
  });
  r.output = read_file(out);
  ::unlink(out.c_str());
  return r;
}

namespace {
// A compile's cache key: everything its output depends on.
std::string compile_key(const HostCompiler& cc, const std::vector<std::string>& flags,
                        const std::vector<std::pair<std::string, std::string>>& headers, const std::string& source) {
  Sha256 key;
  key.update(kBronzeAbi).update("\0", 1).update(cc.identity).update("\0", 1);
  for (const auto& f : flags) key.update(f).update("\0", 1);
  for (const auto& [name, text] : headers) key.update(name).update("\0", 1).update(text).update("\0", 1);
  key.update(source);
  return key.hex();
}

// Runs the compiler over `source` (kernel.cpp, `headers` beside it) in the
// fresh folder `work`, output to `output` there (none for "-"): "" when it
// succeeds, else its messages, which name bronze's generated files, never
// the build folder. A compiler that cannot build even a small unit says so
// instead, rather than through every kernel's messages (Clang 14 has no
// _Float16, `cpp` builds nothing).
std::string compile_in(const HostCompiler& cc, const std::string& work, const std::string& source,
                       const std::vector<std::pair<std::string, std::string>>& headers,
                       const std::vector<std::string>& flags, const std::string& output,
                       std::vector<std::string>& files) {
  files.push_back("kernel.cpp");
  for (const auto& [name, text] : headers) {
    write_file(work + "/" + name, text);
    files.push_back(name);
  }
  write_file(work + "/kernel.cpp", source);
  std::vector<std::string> argv = {cc.path};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.push_back("-I" + work);
  if (output != "-") argv.insert(argv.end(), {"-o", work + "/" + output});
  argv.push_back(work + "/kernel.cpp");
  for (const auto& [name, text] : headers)  // objects given beside the code are linked with it
    if (name.size() > 2 && name.compare(name.size() - 2, 2, ".o") == 0) argv.push_back(work + "/" + name);
  std::string messages;
  const auto start = std::chrono::steady_clock::now();
  int rc = run(argv, messages);
  if (rc == 0 && output != "-" && !is_elf(work + "/" + output)) rc = 1;
  log(LogLevel::Info, [&] {
    return std::string(output == "-" ? "check " : "compile ") + LogScope::name() + " on cpu: cache miss, " +
           (rc == 0 ? "done" : "failed") + " in " + elapsed(start) + ": " + command_line(argv);
  });
  if (rc == 0) return "";
  for (std::size_t at = messages.find(work + "/"); at != std::string::npos; at = messages.find(work + "/", at))
    messages.erase(at, work.size() + 1);
  if (const std::string& why = cc.works(); !why.empty()) cc.raise_unusable(why);
  return messages.empty() ? "the compiler failed without a message" : messages;
}
}  // namespace

int run_helper(const std::vector<std::string>& argv, std::string& messages) { return run(argv, messages); }

std::string helper_path(const std::string& name) {
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void*>(&run_helper), &info) || !info.dli_fname) return "";
  std::string dir = info.dli_fname;
  const std::string path = dir.substr(0, dir.rfind('/') + 1) + name;
  return ::access(path.c_str(), X_OK) == 0 ? path : std::string();
}

std::optional<std::string> cached_shared_object(const std::string& key) {
  // What is loaded is a pin of the entry: another process's trim may remove
  // the entry before the dlopen (then, before the pin: built again).
  DiskCache& cache = DiskCache::instance();
  if (auto hit = cache.lookup(key, ".so")) {
    log(LogLevel::Info, [&] { return "compile " + LogScope::name() + " on cpu: cache hit (" + key + ".so)"; });
    return cache.pin(*hit);
  }
  return std::nullopt;
}

std::string check_source(const std::string& source, const std::vector<std::pair<std::string, std::string>>& headers,
                         std::vector<std::string> flags) {
  const HostCompiler& cc = HostCompiler::get();
  if (!cc.available()) cc.raise_unusable(cc.status);
  flags.push_back("-fsyntax-only");
  const std::string k = compile_key(cc, flags, headers, source);
  DiskCache& cache = DiskCache::instance();
  if (cache.lookup(k, ".checked")) {
    log(LogLevel::Info, [&] { return "check " + LogScope::name() + " on cpu: cache hit (" + k + ".checked)"; });
    return "";
  }
  std::string work = cache.make_work_dir();
  std::vector<std::string> files;
  try {
    std::string messages = compile_in(cc, work, source, headers, flags, "-", files);
    jit::remove_tree(work);
    if (messages.empty()) cache.write(k, ".checked", "");  // a pass is an empty entry
    return messages;
  } catch (...) {
    jit::remove_tree(work);
    throw;
  }
}

BuildResult build_shared_object(const std::string& source,
                                const std::vector<std::pair<std::string, std::string>>& headers,
                                std::vector<std::string> flags,
                                const std::function<void(const std::string& stack_usage)>& check_stack) {
  const HostCompiler& cc = HostCompiler::get();
  if (check_stack) flags.push_back("-fstack-usage");
  if (!cc.available()) cc.raise_unusable(cc.status);
  const std::string k = compile_key(cc, flags, headers, source);

  DiskCache& cache = DiskCache::instance();
  BuildResult r;
  if (auto hit = cached_shared_object(k)) {
    r.so_path = *hit;
    r.key = k;
    r.cache_hit = true;
    return r;
  }
  std::string work = cache.make_work_dir();
  std::vector<std::string> files;  // what the build wrote besides the object
  try {
    r.diagnostics = compile_in(cc, work, source, headers, flags, "kernel.so", files);
    if (!r.diagnostics.empty()) {
      jit::remove_tree(work);  // with what a failed link left (kernel.so-kernel.su)
      return r;
    }
    if (check_stack) {  // GCC names the report kernel.so-kernel.su, Clang kernel.su
      std::string usage;
      for (const auto& n : files_ending(work, ".su")) {
        files.push_back(n);
        usage += read_file(work + "/" + n);
      }
      check_stack(presumed_stack_usage(usage, work + "/kernel.cpp", source));
    }
    // Pinned before it is stored: another process's trim may take the entry at once.
    const std::string built = work + "/kernel.so";
    const std::optional<std::string> pinned = cache.writable() ? cache.pin(built) : std::nullopt;
    std::string stored = cache.store(k, ".so", built);
    if (stored != built) {
      jit::remove_tree(work);
      if (pinned && *pinned != built) stored = *pinned;
      r.key = k;
    } else {
      // Not cached: the object stays in its private directory (it is loaded).
      for (const auto& f : files) ::unlink((work + "/" + f).c_str());
    }
    r.so_path = stored;
    return r;
  } catch (...) {
    jit::remove_tree(work);
    throw;
  }
}

std::string function_name(const std::string& f) {
  if (f.rfind("_Z", 0) != 0) {
    std::string n = f.substr(0, f.find('('));
    n = n.substr(n.find_last_of(" :") == std::string::npos ? 0 : n.find_last_of(" :") + 1);
    return n;
  }
  std::size_t i = 2;
  bool nested = i < f.size() && f[i] == 'N';
  if (nested) ++i;
  std::string last;
  while (i < f.size() && std::isdigit(static_cast<unsigned char>(f[i]))) {
    std::size_t n = std::strtoul(f.c_str() + i, nullptr, 10);
    while (i < f.size() && std::isdigit(static_cast<unsigned char>(f[i]))) ++i;
    last = f.substr(i, n);
    i += n;
    if (!nested) break;
  }
  return last;
}

}  // namespace bronze::jit
