#include "jit/disk_cache.hpp"

#include <dlfcn.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <vector>

#include "bronze/error.hpp"
#include "jit/env.hpp"
#include "jit/files.hpp"
#include "jit/log.hpp"
#include "jit/sha256.hpp"
#include "jit/warnings.hpp"

namespace bronze::jit {
namespace fs = std::filesystem;
namespace {
constexpr char kMagic[4] = {'B', 'R', 'Z', '1'};
constexpr std::size_t kTrailer = 32 + sizeof kMagic;
// The Cache Directory Tagging standard's tag, naming bronze: a folder with it
// is bronze's to trim; backup tools skip it.
constexpr const char* kTagName = "CACHEDIR.TAG";
constexpr const char* kTag =
    "Signature: 8a477f597d28d172789f06886806bc55\n# This folder is bronze's compile cache (bronze.cache_info()).\n";
const char* const kSuffixes[] = {".so", ".cubin", ".ptx"};
constexpr const char* kBuildPrefix = "bronze-build-";

std::string temp_base() {
  const char* t = std::getenv("TMPDIR");
  return t && *t ? t : "/tmp";
}

// Removes the build folders in `dir` whose process is gone. Only the user's
// own folders, never through a link, and only those untouched for ten
// minutes: a process of another pid namespace sharing the folder looks dead
// while its build runs. Folders of older bronze versions carry no pid: a day.
void remove_stale_builds(const std::string& dir) {
  const std::time_t now = std::time(nullptr);
  std::vector<std::string> stale;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string n = it->path().filename(), p = it->path();
    if (n.rfind(kBuildPrefix, 0) != 0) continue;
    struct stat st;
    if (::lstat(p.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid()) continue;
    const std::time_t age = now - st.st_mtime;
    if (age < 600) continue;
    char* rest = nullptr;
    const long pid = std::strtol(n.c_str() + std::strlen(kBuildPrefix), &rest, 10);
    const bool gone = pid > 0 && *rest == '-' ? ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH
                                             : age > 86400;
    if (gone) stale.push_back(p);
  }
  for (const auto& p : stale) remove_tree(p);
}

// A private build folder under `base`, named for this process; empty if it cannot be made.
std::string make_build_dir(const std::string& base) {
  std::string tmpl = base + "/" + kBuildPrefix + std::to_string(::getpid()) + "-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  return ::mkdtemp(buf.data()) ? std::string(buf.data()) : std::string();
}

// An entry's name: 64 lowercase hex digits (a SHA-256) and one of bronze's suffixes.
bool entry_name(const std::string& n) {
  if (n.size() < 64) return false;
  for (std::size_t i = 0; i < 64; ++i)
    if (!((n[i] >= '0' && n[i] <= '9') || (n[i] >= 'a' && n[i] <= 'f'))) return false;
  for (const char* s : kSuffixes)
    if (n.compare(64, std::string::npos, s) == 0) return true;
  return false;
}

// Marks a folder holding nothing but bronze's files (empty, or a cache of an
// older bronze) as bronze's; true if it is (now) marked.
bool own_folder(const std::string& dir) {
  if (std::string tag; read_file(dir + "/" + kTagName, tag)) return tag.find("bronze") != std::string::npos;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; it != end; it.increment(ec)) {
    const std::string n = it->path().filename();
    if (!entry_name(n) && n.rfind(kBuildPrefix, 0) != 0) return false;  // someone's folder: used, never trimmed
  }
  if (ec) return false;
  std::ofstream out(dir + "/" + kTagName);
  out << kTag;
  return static_cast<bool>(out.flush());
}

bool mkdir_private(const std::string& path) {
  if (::mkdir(path.c_str(), 0700) == 0) return true;
  return errno == EEXIST;
}

// Not fs::create_directories: each folder made is private from its first moment.
bool mkdirs(const std::string& path) {
  for (std::size_t p = 1; p <= path.size(); ++p)
    if (p == path.size() || path[p] == '/')
      if (!mkdir_private(path.substr(0, p))) return false;
  return true;
}

}  // namespace

const std::string& bronze_build() {
  static const std::string id = [] {
    Dl_info info{};
    struct stat st {};
    if (!dladdr(reinterpret_cast<void*>(&bronze_build), &info) || !info.dli_fname || ::stat(info.dli_fname, &st) != 0)
      return std::string("unknown");
    return std::string(info.dli_fname) + ":" + std::to_string(st.st_size) + ":" + std::to_string(st.st_mtime);
  }();
  return id;
}

DiskCache& DiskCache::instance() {
  static DiskCache* c = new DiskCache;
  return *c;
}

DiskCache::DiskCache() {
  max_bytes_ = env_size("BRONZE_CACHE_MAX_BYTES", 1ull << 30);
  remove_stale_builds(temp_base());  // where builds go without a writable cache
  if (env_bool("BRONZE_CACHE_DISABLE", false)) {
    status_ = "disabled by BRONZE_CACHE_DISABLE";
    return;
  }
  std::string dir;
  if (const char* d = std::getenv("BRONZE_CACHE_DIR"); d && *d) dir = d;
  else if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) dir = std::string(x) + "/bronze";
  else if (const char* h = std::getenv("HOME"); h && *h) dir = std::string(h) + "/.cache/bronze";
  else {
    status_ = "off: no BRONZE_CACHE_DIR, XDG_CACHE_HOME or HOME";
    return;
  }
  if (std::error_code ec; dir[0] != '/') {  // fixed once (Python: at import), not moved by a later chdir
    if (fs::path a = fs::absolute(dir, ec); !ec) dir = a;
  }
  if (!mkdirs(dir)) {
    status_ = "off: cannot create " + dir + ": " + std::strerror(errno);
    return;
  }
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    status_ = "off: " + dir + " is not a directory";
    return;
  }
  if (st.st_uid != ::geteuid()) {
    status_ = "off: " + dir + " belongs to another user";
    return;
  }
  if (st.st_mode & (S_IWGRP | S_IWOTH)) {
    status_ = "off: " + dir + " is writable by other users (chmod 700 it to enable the cache)";
    return;
  }
  dir_ = dir;
  enabled_ = true;
  if (::access(dir.c_str(), W_OK) != 0) {
    const int err = errno;
    degrade(std::string("not writable: ") + std::strerror(err));
    return;
  }
  remove_stale_builds(dir);
  owned_ = own_folder(dir);
  status_ = owned_ ? dir : dir + " (not bronze's own folder: entries are kept, never trimmed)";
}

std::string DiskCache::status() const {
  std::lock_guard<std::mutex> g(mu_);
  return status_;
}

void DiskCache::degrade(const std::string& why) {
  std::lock_guard<std::mutex> g(mu_);
  if (!writable_.exchange(false)) return;  // the first reason stands
  status_ = dir_ + " (not written to: " + why + "; entries are still used, new builds go to private folders under " +
            temp_base() + ")";
}

void DiskCache::warn_once() {
  if (warned_.exchange(true)) return;
  warn("bronze: the compile cache " + status());
}

std::optional<std::string> DiskCache::lookup(const std::string& key, const std::string& suffix, bool counted) {
  if (!enabled_) return std::nullopt;
  std::string path = dir_ + "/" + key + suffix;
  std::string data;
  if (!read_file(path, data)) {
    log(LogLevel::Debug, [&] { return "compile cache lookup " + key + suffix + ": miss"; });
    std::lock_guard<std::mutex> g(mu_);
    counters_.misses += counted;
    return std::nullopt;
  }
  bool ok = data.size() >= kTrailer && std::memcmp(data.data() + data.size() - sizeof kMagic, kMagic, sizeof kMagic) == 0;
  if (ok) {
    std::uint8_t digest[32];
    Sha256().update(key + suffix).update(data.data(), data.size() - kTrailer).digest(digest);
    ok = std::memcmp(digest, data.data() + data.size() - kTrailer, 32) == 0;
  }
  log(ok ? LogLevel::Debug : LogLevel::Info, [&] {
    return "compile cache lookup " + key + suffix + (ok ? ": hit" : ": corrupt (removed; built again)");
  });
  std::lock_guard<std::mutex> g(mu_);
  if (!ok) {  // truncated or corrupted: drop it, the caller rebuilds
    ::unlink(path.c_str());
    counters_.corrupt += counted;
    counters_.misses += counted;
    return std::nullopt;
  }
  counters_.hits += counted;
  return path;
}

std::string DiskCache::store(const std::string& key, const std::string& suffix, const std::string& tmp_path,
                             bool counted) {
  if (!writable()) return tmp_path;
  std::string data;
  if (!read_file(tmp_path, data)) throw Error("compile cache: cannot read " + tmp_path);
  std::uint8_t digest[32];
  // The digest covers the key: an entry copied or linked to another key's
  // name is refused, never run as that key's code.
  Sha256().update(key + suffix).update(data).digest(digest);
  std::string path = dir_ + "/" + key + suffix;
  bool written;
  {
    std::ofstream f(tmp_path, std::ios::binary | std::ios::app);
    f.write(reinterpret_cast<const char*>(digest), 32);
    f.write(kMagic, sizeof kMagic);
    written = static_cast<bool>(f.flush());
  }
  if (!written || ::rename(tmp_path.c_str(), path.c_str()) != 0) {  // full, or made read-only since
    const int err = errno;
    if (::truncate(tmp_path.c_str(), static_cast<off_t>(data.size())) != 0)
      throw Error("compile cache: cannot restore " + tmp_path + ": " + std::strerror(errno));
    degrade(std::string(written ? "cannot rename into it: " : "cannot write it: ") + std::strerror(err));
    warn_once();
    return tmp_path;
  }
  {
    std::lock_guard<std::mutex> g(mu_);
    counters_.stores += counted;
  }
  log(LogLevel::Info, [&] { return "compile cache: stored " + key + suffix + " (" + LogScope::name() + ")"; });
  trim(path);
  return path;
}

std::optional<std::string> DiskCache::read(const std::string& key, const std::string& suffix, bool counted) {
  auto hit = lookup(key, suffix, counted);
  std::string data;
  if (!hit || !read_file(*hit, data) || data.size() < kTrailer) return std::nullopt;  // replaced since the lookup
  data.resize(data.size() - kTrailer);
  return data;
}

void DiskCache::write(const std::string& key, const std::string& suffix, const std::string& data, bool counted) {
  if (!writable()) return;
  const std::string dir = make_work_dir(), tmp = dir + "/entry";
  try {
    write_file(tmp, data);
    store(key, suffix, tmp, counted);
  } catch (const Error&) {
  }
  remove_tree(dir);
}

std::optional<std::string> DiskCache::pin(const std::string& path) {
  std::lock_guard<std::mutex> g(pins_mu_);
  if (!pins_.empty()) {  // those never loaded (a build that failed after it) go when long unused
    const std::time_t now = std::time(nullptr);
    pins_.erase(std::remove_if(pins_.begin(), pins_.end(),
                               [&](const Pin& p) {
                                 const bool done = now - p.made > 600;
                                 if (done) ::unlink(p.path.c_str());
                                 return done;
                               }),
                pins_.end());
  }
  if (pins_dir_.empty() && writable()) {
    pins_dir_ = make_build_dir(dir_);  // beside the entries: one file system
    // Gone with the process (a killed one's, with its build folders, later).
    if (!pins_dir_.empty())
      std::atexit([] {
        DiskCache& c = instance();
        std::lock_guard<std::mutex> g(c.pins_mu_);
        remove_tree(c.pins_dir_);
      });
  }
  if (pins_dir_.empty()) return path;
  // A name of its own each time: an object is loaded once per name, and a
  // name that was loaded is never reused for another file.
  std::string pinned = pins_dir_ + "/" + std::to_string(++pins_made_) + "-" + path.substr(path.rfind('/') + 1);
  if (::link(path.c_str(), pinned.c_str()) != 0)  // the file is gone, or no link can be made (unpinned, as before)
    return ::access(path.c_str(), F_OK) != 0 && errno == ENOENT ? std::nullopt : std::optional<std::string>(path);
  pins_.push_back({pinned, std::time(nullptr)});
  return pinned;
}

void DiskCache::unpin(const std::string& pinned) {
  std::lock_guard<std::mutex> g(pins_mu_);
  auto it = std::find_if(pins_.begin(), pins_.end(), [&](const Pin& p) { return p.path == pinned; });
  if (it == pins_.end()) return;
  ::unlink(it->path.c_str());
  pins_.erase(it);
}

DiskCache::Counters DiskCache::counters() const {
  std::lock_guard<std::mutex> g(mu_);
  return counters_;
}

std::string DiskCache::make_work_dir() {
  // In the cache when it is writable, so storing is a rename. A file
  // system nearly full would fail the build midway: the build goes elsewhere
  // (a compile writes a few MiB at most).
  constexpr unsigned long long kMinFree = 32ull << 20;
  struct statvfs fs;
  if (writable() && ::statvfs(dir_.c_str(), &fs) == 0 && fs.f_blocks > 0 &&  // not procfs and the like
      static_cast<unsigned long long>(fs.f_bavail) * fs.f_frsize < kMinFree)
    degrade("full: " + std::to_string(static_cast<unsigned long long>(fs.f_bavail) * fs.f_frsize / 1024) +
            " KiB free on its file system");
  // Canonical: the shader front end matches paths inside it lexically, so
  // a "..", a "." or a link in $BRONZE_CACHE_DIR or $TMPDIR must not reach it.
  const auto canonical = [](const std::string& d) {
    std::error_code ec;
    std::string c = fs::canonical(d, ec);
    return ec ? d : c;
  };
  if (writable()) {
    std::string d = make_build_dir(dir_);
    if (!d.empty()) return canonical(d);
    const int err = errno;
    degrade(std::string("cannot create a build folder in it: ") + std::strerror(err));
  }
  if (enabled_) warn_once();
  const std::string base = temp_base();
  std::string d = make_build_dir(base);
  if (d.empty()) throw Error("cannot create a build directory under " + base + ": " + std::strerror(errno));
  return canonical(d);
}

void DiskCache::trim(const std::string& keep) {
  if (!owned_) return;
  struct Entry {
    std::string path;
    long long mtime;
    unsigned long long size;
  };
  std::vector<Entry> entries;
  unsigned long long total = 0;
  std::error_code ec;
  for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
    if (!entry_name(it->path().filename())) continue;  // only bronze's entries, whatever else is there
    const std::string p = it->path();
    struct stat st;
    if (::stat(p.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    entries.push_back({p, static_cast<long long>(st.st_mtime), static_cast<unsigned long long>(st.st_size)});
    total += st.st_size;
  }
  if (total <= max_bytes_) return;
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.mtime < b.mtime; });
  for (const Entry& e : entries) {
    if (total <= max_bytes_ * 3 / 4) break;
    if (e.path == keep) continue;  // just stored, about to be loaded: a bound under one entry keeps it
    ::unlink(e.path.c_str());  // a loaded library stays mapped
    total -= e.size;
  }
}

}  // namespace bronze::jit
