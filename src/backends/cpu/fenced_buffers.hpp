// validate=True on the CPU: the bounds checks in the generated code see
// indexing of a buffer parameter, but not pointers derived from it (a cast
// to float4*, a pointer handed to a helper), nor any access in a unit built
// without them (api/shader.cpp: build_module). So each buffer also runs from
// a copy whose end touches an inaccessible page: any access past the end
// faults (kernel_guard), and the fault address names the buffer. Copies are
// 16-byte aligned, so an overrun within the last 16 bytes' padding is the
// one that goes unseen.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/device_impl.hpp"

namespace bronze::cpu {

class FencedBuffers {
 public:
  // Points each buffer slot of `args` at its fenced copy. Buffers passed
  // twice share one copy; buffers that partly overlap stay unfenced.
  FencedBuffers(const runtime::KernelLaunch& l, std::vector<void*>& args);
  ~FencedBuffers();
  FencedBuffers(const FencedBuffers&) = delete;
  FencedBuffers& operator=(const FencedBuffers&) = delete;

  // Writes the copies back to the buffers (also after a fault: what the
  // kernel wrote before it, as a GPU fault leaves it).
  void copy_back();
  // "a write past the end of 'out' (byte 16 of its 16)" when `address` is in
  // a fence, else "".
  std::string explain(std::uintptr_t address, bool write) const;

 private:
  struct Fence {
    const char* name;
    void* original;
    std::size_t bytes;
    char* map;  // the mapping: [guard page][pages holding the copy][guard page]
    std::size_t map_bytes;
    char* copy;  // ends at most 15 bytes before the trailing guard
  };
  std::vector<Fence> fences_;
};

}  // namespace bronze::cpu
