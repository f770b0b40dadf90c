#include "jit/files.hpp"

#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>

#include "bronze/error.hpp"

namespace bronze::jit {

bool read_file(const std::string& path, std::string& out) {
  // Non-blocking open: a FIFO put where a file was expected must not block
  // (it is then refused as not a regular file).
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st;
  bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  out.clear();
  if (ok) out.reserve(static_cast<std::size_t>(st.st_size));
  char buf[1 << 16];
  while (ok) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ok = n == 0;
      break;
    }
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return ok;
}

void write_file(const std::string& path, const std::string& data) {
  for (std::size_t slash = path.find('/', 1); slash != std::string::npos; slash = path.find('/', slash + 1))
    ::mkdir(path.substr(0, slash).c_str(), 0700);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << data;
  if (!f.flush()) throw Error("cannot write " + path);
}

void remove_tree(const std::string& dir) {
  ::nftw(dir.c_str(), [](const char* p, const struct stat*, int, struct FTW*) { return ::remove(p); }, 16,
         FTW_DEPTH | FTW_PHYS);
}

}  // namespace bronze::jit
