// NVTX ranges on bronze's own domain, so Nsight Systems (or any NVTX tool
// named by NVTX_INJECTION64_PATH) shows every op bronze runs while its
// profiler is on. NVTX3 is header-only and loads the tool itself; with no
// tool attached a range costs one predictable branch. Builds without the
// NVTX headers compile these to nothing and say so in status().
#pragma once

#include <string>

namespace bronze::runtime::nvtx {

bool compiled_in();
std::string status();  // for cuda_status() / `bronze info`

void push(const char* name);
void pop();

// Pushes on construction, pops on destruction (same thread, as NVTX needs).
class Range {
 public:
  Range() = default;
  explicit Range(const char* name) { start(name); }
  ~Range() {
    if (open_) pop();
  }
  Range(const Range&) = delete;
  Range& operator=(const Range&) = delete;
  void start(const char* name) {
    push(name);
    open_ = true;
  }

 private:
  bool open_ = false;
};

}  // namespace bronze::runtime::nvtx
