#include "jit/files.hpp"

#include <ftw.h>
#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <sstream>

namespace bronze::jit {

bool read_file(const std::string& path, std::string& out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::ostringstream ss;
  ss << f.rdbuf();
  out = ss.str();
  return true;
}

void remove_tree(const std::string& dir) {
  ::nftw(dir.c_str(), [](const char* p, const struct stat*, int, struct FTW*) { return ::remove(p); }, 16,
         FTW_DEPTH | FTW_PHYS);
}

}  // namespace bronze::jit
