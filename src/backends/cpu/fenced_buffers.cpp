#include "backends/cpu/fenced_buffers.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "bronze/error.hpp"

namespace bronze::cpu {

FencedBuffers::FencedBuffers(const runtime::KernelLaunch& l, std::vector<void*>& args) {
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  auto buffer = [&](std::size_t i) { return l.args[i].inline_offset == SIZE_MAX && l.args[i].ptr && l.args[i].bytes; };
  auto overlaps_partly = [&](std::size_t i) {
    const auto* a = static_cast<const char*>(l.args[i].ptr);
    for (std::size_t j = 0; j < l.args.size(); ++j) {
      if (j == i || !buffer(j)) continue;
      const auto* b = static_cast<const char*>(l.args[j].ptr);
      const bool same = a == b && l.args[i].bytes == l.args[j].bytes;
      if (!same && a < b + l.args[j].bytes && b < a + l.args[i].bytes) return true;
    }
    return false;
  };
  for (std::size_t i = 0; i < l.args.size(); ++i) {
    if (!buffer(i) || overlaps_partly(i)) continue;
    auto shared = std::find_if(fences_.begin(), fences_.end(), [&](const Fence& f) { return f.original == l.args[i].ptr; });
    if (shared != fences_.end()) {
      args[i] = shared->copy;
      continue;
    }
    const std::size_t bytes = l.args[i].bytes, padded = (bytes + 15) & ~std::size_t(15);
    const std::size_t body = (padded + page - 1) / page * page, map_bytes = body + 2 * page;
    void* m = ::mmap(nullptr, map_bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) throw OutOfMemoryError("validate=True: no memory for a fenced copy of '" +
                                                std::string(l.args[i].name) + "'", bytes, 0, 0, 0);
    char* base = static_cast<char*>(m);
    ::mprotect(base + page, body, PROT_READ | PROT_WRITE);
    Fence f{l.args[i].name, l.args[i].ptr, bytes, base, map_bytes, base + page + body - padded};
    std::memcpy(f.copy, f.original, bytes);
    fences_.push_back(f);
    args[i] = f.copy;
  }
}

FencedBuffers::~FencedBuffers() {
  for (const Fence& f : fences_) ::munmap(f.map, f.map_bytes);
}

void FencedBuffers::copy_back() {
  for (const Fence& f : fences_) std::memcpy(f.original, f.copy, f.bytes);
}

std::string FencedBuffers::explain(std::uintptr_t address, bool write) const {
  for (const Fence& f : fences_) {
    const auto lo = reinterpret_cast<std::uintptr_t>(f.map), hi = lo + f.map_bytes;
    if (address < lo || address >= hi) continue;
    const auto start = reinterpret_cast<std::uintptr_t>(f.copy);
    const bool before = address < start;
    const std::uintptr_t off = before ? start - address : address - start;
    return std::string(write ? "a write " : "an access ") + (before ? "before the start" : "past the end") + " of '" +
           f.name + "' (byte " + (before ? "-" : "") + std::to_string(off) + " of its " + std::to_string(f.bytes) + ")";
  }
  return "";
}

}  // namespace bronze::cpu
