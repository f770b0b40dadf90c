#include "runtime/host_memory.hpp"

#include <fstream>

namespace bronze::runtime {
namespace {
std::size_t read_number(const char* path) {
  std::ifstream f(path);
  std::string s;
  if (!(f >> s) || s == "max") return 0;
  try {
    return static_cast<std::size_t>(std::stoull(s));
  } catch (...) {
    return 0;
  }
}
}  // namespace

std::size_t host_memory_limit() {
  return memory_limit_from("/proc/meminfo",
                           {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"});
}

std::size_t memory_limit_from(const std::string& meminfo, const std::vector<std::string>& cgroup_limits) {
  std::size_t total = 0;
  std::ifstream f(meminfo);
  std::string key;
  std::size_t kb;
  while (f >> key >> kb) {
    if (key == "MemTotal:") {
      total = kb * 1024;
      break;
    }
    f.ignore(256, '\n');
  }
  for (const std::string& p : cgroup_limits) {
    std::size_t lim = read_number(p.c_str());
    if (lim > 0 && (total == 0 || lim < total)) total = lim;
  }
  return total;
}

}  // namespace bronze::runtime
