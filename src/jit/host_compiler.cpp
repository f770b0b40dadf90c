#include "jit/host_compiler.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iterator>
#include <cstring>
#include <fstream>
#include <sstream>

#include "bronze/error.hpp"
#include "jit/disk_cache.hpp"
#include "jit/env_size.hpp"
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

void write_file(const std::string& path, const std::string& data) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << data;
  if (!f.flush()) throw Error("cannot write " + path);
}

void remove_tree(const std::string& dir, const std::vector<std::string>& names) {
  for (const auto& n : names) ::unlink((dir + "/" + n).c_str());
  ::rmdir(dir.c_str());
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
  if (DIR* d = ::opendir(dir.c_str())) {
    while (const dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n.size() > ext.size() && n.compare(n.size() - ext.size(), ext.size(), ext) == 0) names.push_back(n);
    }
    ::closedir(d);
  }
  return names;
}

// A compiler under RLIMIT_AS fails its allocations: GCC says "out of
// memory" or "virtual memory exhausted"; an abort signal counts too.
bool killed_for_memory(const std::string& log) {
  std::ifstream f(log);
  std::string text((std::istreambuf_iterator<char>(f)), {});
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

// Runs argv with stdout into `out` and stderr into `log` (both into `log`
// when `out` is empty), in `cwd` when given, under limits(); returns the
// exit status. The compiler's stdin is /dev/null: it never reads the
// process's input. Past a limit the run is killed and ShaderCompileError
// says which limit.
int run(const std::vector<std::string>& argv, const std::string& log, const std::string& out = {},
        const std::string& cwd = {}, unsigned long long memory_cap = ~0ull) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  Limits lim = limits();
  lim.memory = std::min(lim.memory, memory_cap);
  // Everything the child needs is ready before fork: after it, only
  // async-signal-safe calls until exec.
  const rlimit mem{static_cast<rlim_t>(lim.memory), static_cast<rlim_t>(lim.memory)};
  const char* out_path = out.empty() ? nullptr : out.c_str();
  pid_t pid = ::fork();
  if (pid < 0) throw Error("cannot start the compiler " + argv[0] + ": " + std::strerror(errno));
  if (pid == 0) {
    ::setpgid(0, 0);
    ::setrlimit(RLIMIT_AS, &mem);
    int in = ::open("/dev/null", O_RDONLY);
    int err = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int o = out_path ? ::open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600) : err;
    if (in < 0 || err < 0 || o < 0 || (!cwd.empty() && ::chdir(cwd.c_str()) != 0)) ::_exit(126);
    ::dup2(in, 0);
    ::dup2(o, 1);
    ::dup2(err, 2);
    ::execve(args[0], args.data(), environ);
    ::_exit(127);
  }
  // Waits with the deadline: a pidfd to poll where the kernel has one,
  // else short sleeps.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(lim.seconds);
  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  int status = 0;
  bool timed_out = false;
  for (;;) {
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) throw Error("waiting for the compiler failed");
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      timed_out = true;
      break;
    }
    if (pidfd >= 0) {
      pollfd p{pidfd, POLLIN, 0};
      ::poll(&p, 1, static_cast<int>(std::min<long long>(left.count(), 1000)));
    } else {
      ::usleep(2000);
    }
  }
  if (pidfd >= 0) ::close(pidfd);
  if (timed_out)
    throw ShaderCompileError("the compiler ran past its time limit of " + std::to_string(lim.seconds) +
                             " s and was stopped ($BRONZE_COMPILE_TIMEOUT sets the limit)");
  if (WIFSIGNALED(status))
    throw ShaderCompileError("the compiler was killed by signal " + std::to_string(WTERMSIG(status)) +
                             " (its memory limit is " + std::to_string(lim.memory >> 20) +
                             " MiB: $BRONZE_COMPILE_MEMORY)");
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0 && killed_for_memory(log))
    throw ShaderCompileError("the compiler ran out of its memory limit of " + std::to_string(lim.memory >> 20) +
                             " MiB and was stopped" +
                             (lim.memory < limits().memory ? std::string(" (a preprocessor run's cap)")
                                                           : std::string(" ($BRONZE_COMPILE_MEMORY sets the limit)")));
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
    throw Error("cannot start the compiler " + argv[0]);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}
}  // namespace

unsigned long long env_size(const char* var, unsigned long long fallback) {
  const char* v = std::getenv(var);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  unsigned long long n = std::strtoull(v, &end, 10);
  std::string unit = end ? end : "";
  if (!unit.empty() && unit.back() == 'B') unit.pop_back();
  if (!unit.empty() && unit.back() == 'i') unit.pop_back();
  unsigned long long scale = unit.empty() ? 1 : unit == "K" ? 1ull << 10 : unit == "M" ? 1ull << 20
                             : unit == "G" ? 1ull << 30 : unit == "T" ? 1ull << 40 : 0;
  if (end == v || scale == 0 || n == 0 || n > ~0ull / scale)
    throw ValueError(std::string("$") + var + "='" + v + "' is not a size (e.g. 4G, 512M, 1073741824)");
  return n * scale;
}

const HostCompiler& HostCompiler::get() {
  static const HostCompiler c = [] {
    HostCompiler h;
    std::vector<std::string> candidates;
    for (const char* var : {"BRONZE_CXX", "CXX"})
      if (const char* v = std::getenv(var); v && *v) candidates.push_back(v);
    for (const char* n : {"c++", "g++", "clang++"}) candidates.push_back(n);
    for (const auto& c : candidates) {
      std::string p = which(c);
      if (p.empty()) continue;
      char real[4096];
      std::string resolved = ::realpath(p.c_str(), real) ? real : p;
      struct stat st;
      ::stat(resolved.c_str(), &st);
      h.path = p;
      h.identity = resolved + ":" + std::to_string(st.st_size) + ":" + std::to_string(st.st_mtime);
      h.clang = resolved.find("clang", resolved.rfind('/') + 1) != std::string::npos;
      return h;
    }
    h.status = "no C++ compiler found (tried $BRONZE_CXX, $CXX, c++, g++, clang++); install g++";
    return h;
  }();
  return c;
}

std::string preprocessor_path() {
  static const std::string p = [] {
    const HostCompiler& cc = HostCompiler::get();
    return cc.available() ? cc.path : which("cpp");  // GCC's preprocessor alone takes the same flags
  }();
  return p;
}

PreprocessResult run_preprocessor(const std::string& dir, const std::string& main_file,
                                  const std::vector<std::string>& flags) {
  std::string path = preprocessor_path();
  if (path.empty())
    throw NotSupportedError("compile_shader runs a C preprocessor before it reads Metal, and none was found "
                            "(tried $BRONZE_CXX, $CXX, c++, g++, clang++, cpp); install g++, or on a CUDA machine "
                            "without a host compiler the preprocessor alone (Debian: apt-get install cpp)");
  std::vector<std::string> argv = {path, "-E"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.push_back(main_file);
  PreprocessResult r;
  const std::string out = dir + "/preprocessed.out", log = dir + "/preprocessor.log";
  // Preprocessing needs little memory: a lower cap stops `#include "/dev/zero"` early.
  r.ok = run(argv, log, out, dir, 1ull << 30) == 0;
  r.output = read_file(out);
  r.diagnostics = read_file(log);
  ::unlink(out.c_str());
  ::unlink(log.c_str());
  return r;
}

BuildResult build_shared_object(const std::string& source,
                                const std::vector<std::pair<std::string, std::string>>& headers,
                                std::vector<std::string> flags,
                                const std::function<void(const std::string& stack_usage)>& check_stack) {
  const HostCompiler& cc = HostCompiler::get();
  if (check_stack) flags.push_back("-fstack-usage");
  if (!cc.available()) throw NotSupportedError("the CPU backend compiles shaders with a host compiler: " + cc.status);
  Sha256 key;
  key.update(kBronzeAbi).update("\0", 1).update(cc.identity).update("\0", 1);
  for (const auto& f : flags) key.update(f).update("\0", 1);
  for (const auto& [name, text] : headers) key.update(name).update("\0", 1).update(text).update("\0", 1);
  key.update(source);
  std::string k = key.hex();

  DiskCache& cache = DiskCache::instance();
  BuildResult r;
  if (auto hit = cache.lookup(k, ".so")) {
    r.so_path = *hit;
    r.cache_hit = true;
    return r;
  }
  std::string work = cache.make_work_dir();
  std::vector<std::string> files = {"kernel.cpp", "kernel.so", "compiler.log"};
  try {
    for (const auto& [name, text] : headers) {
      write_file(work + "/" + name, text);
      files.push_back(name);
    }
    write_file(work + "/kernel.cpp", source);
    std::vector<std::string> argv = {cc.path};
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.insert(argv.end(), {"-I" + work, "-o", work + "/kernel.so", work + "/kernel.cpp"});
    int rc = run(argv, work + "/compiler.log");
    if (rc != 0) {
      r.diagnostics = read_file(work + "/compiler.log");
      remove_tree(work, files);
      return r;
    }
    if (check_stack) {  // GCC names the report kernel.so-kernel.su, Clang kernel.su
      std::string usage;
      for (const auto& n : files_ending(work, ".su")) {
        files.push_back(n);
        usage += read_file(work + "/" + n);
      }
      check_stack(usage);
    }
    std::string stored = cache.store(k, ".so", work + "/kernel.so");
    if (stored != work + "/kernel.so") {
      remove_tree(work, files);
    } else {
      // Not cached: the object stays in its private directory (it is loaded).
      files.erase(files.begin() + 1);
      for (const auto& f : files) ::unlink((work + "/" + f).c_str());
    }
    r.so_path = stored;
    return r;
  } catch (...) {
    remove_tree(work, files);
    throw;
  }
}

}  // namespace bronze::jit
