#include "jit/host_compiler.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "bronze/error.hpp"
#include "jit/disk_cache.hpp"
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

// Runs argv with stdout into `out` and stderr into `log` (both into `log`
// when `out` is empty), in `cwd` when given; returns the exit status. The
// compiler's stdin is /dev/null: it never reads the process's input.
int run(const std::vector<std::string>& argv, const std::string& log, const std::string& out = {},
        const std::string& cwd = {}) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (out.empty()) posix_spawn_file_actions_adddup2(&fa, 2, 1);
  else posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&fa, cwd.c_str());
  pid_t pid;
  int rc = posix_spawn(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) throw Error("cannot start the compiler " + argv[0] + ": " + std::strerror(rc));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) throw Error("waiting for the compiler failed");
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}
}  // namespace

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
  r.ok = run(argv, log, out, dir) == 0;
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
    if (cache.enabled()) {
      remove_tree(work, files);
    } else {
      // Without a cache the object stays in its private directory (it is loaded).
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
