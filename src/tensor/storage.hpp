// Tensor memory: a block of the device's caching allocator, or memory owned
// by someone else (a NumPy array, a DLPack producer) kept alive by `release`.
#pragma once

#include <cstddef>
#include <functional>

#include "bronze/device.hpp"
#include "runtime/allocator.hpp"
#include "runtime/fork_state.hpp"

namespace bronze {

struct StorageImpl {
  Device device;
  void* data = nullptr;
  std::size_t nbytes = 0;
  runtime::CachingAllocator* allocator = nullptr;  // set with block
  runtime::Block* block = nullptr;
  bool host_visible = false;  // the host may read and write `data` directly
  std::function<void()> release;  // external owner

  StorageImpl() = default;
  StorageImpl(const StorageImpl&) = delete;
  StorageImpl& operator=(const StorageImpl&) = delete;
  ~StorageImpl() {
    // A forked child keeps what it inherited: the parent's queued work,
    // which the block's reuse would wait for, cannot finish here.
    if (block && !runtime::forked_after_start(device.type)) allocator->free(block);
    if (release) release();
  }
};

// What a queued op must hold to keep `s` valid until it runs: external
// memory (its owner could free it at once); nothing for allocator blocks,
// whose reuse is ordered on their stream like torch's caching allocator, so
// memory figures drop as soon as the tensor is gone.
inline std::shared_ptr<void> queued_use(const std::shared_ptr<StorageImpl>& s) {
  return s && s->release ? std::shared_ptr<void>(s) : nullptr;
}

// New storage of `nbytes` on `d`, ordered on the device's current stream;
// from the device's host-visible pool when asked.
std::shared_ptr<StorageImpl> allocate_storage(const Device& d, std::size_t nbytes, bool host_visible = false);

}  // namespace bronze
