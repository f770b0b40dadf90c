// Backend-neutral interfaces of streams and events; each backend implements
// them (src/backends/*).
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>

#include "bronze/device.hpp"
#include "bronze/error.hpp"

namespace bronze::runtime {

class StreamImpl {
 public:
  virtual ~StreamImpl() = default;
  virtual Device device() const = 0;
  // Unique in the process; never reused, so the allocator can key on it.
  virtual std::uint64_t id() const = 0;
  // Blocks until queued work finished; rethrows its first failure as DeviceError.
  virtual void synchronize() = 0;
  // Blocks until queued work finished, leaving its failures for
  // synchronize(): for the runtime's own waits (a read to the host, the
  // allocator's), which must not take another thread's error from it.
  virtual void wait() = 0;
  virtual bool query() = 0;

  // torch.mps's error buffer (<c10/metal/error.h>'s ErrorMessages): host-
  // visible memory that kernels called with error_buf_idx= report into with
  // TORCH_REPORT_ERROR. Set once per stream by the shader layer; each
  // backend's synchronize() calls check_error_record() after the queued work
  // finished, which raises the first message as torch's MPSStream does.
  void* error_record() const { return error_record_.load(std::memory_order_acquire); }
  void set_error_record(void* host_ptr) { error_record_.store(host_ptr, std::memory_order_release); }
  // ErrorMessages: uint count, then 30 records of file[128], func[128],
  // message[250] and a uint line (at 508; 512 bytes each).
  static constexpr std::size_t kErrorRecordBytes = 4 + 30 * 512;

 protected:
  // Throws DeviceError with the first reported message and clears the count
  // (so it is raised once); nothing when no kernel reported.
  void check_error_record() {
    auto* rec = static_cast<unsigned char*>(error_record());
    if (!rec) return;
    unsigned count;
    std::memcpy(&count, rec, sizeof count);
    if (count == 0) return;
    std::memset(rec, 0, sizeof count);
    const unsigned char* m = rec + 4;  // the first record
    auto text = [&](std::size_t off, std::size_t n) {
      const char* c = reinterpret_cast<const char*>(m + off);
      return std::string(c, strnlen(c, n));
    };
    unsigned line;
    std::memcpy(&line, m + 508, sizeof line);
    std::string msg = text(256, 250) + " (reported by kernel function '" + text(128, 128) + "' at " +
                      text(0, 128) + ":" + std::to_string(line);
    if (count > 1) msg += "; " + std::to_string(count - 1) + " more report" + (count > 2 ? "s" : "");
    throw DeviceError(msg + ")");
  }

 private:
  std::atomic<void*> error_record_{nullptr};
};

class EventImpl {
 public:
  virtual ~EventImpl() = default;
  virtual void record(StreamImpl& s) = 0;
  virtual void wait(StreamImpl& s) = 0;
  virtual bool query() = 0;
  virtual void synchronize() = 0;
  // Milliseconds from this event to `end`; both must have timing and be recorded.
  virtual double elapsed_ms(EventImpl& end) = 0;
  virtual bool recorded() const = 0;
};

// Process-unique stream ids (1, 2, ...).
std::uint64_t next_stream_id();

// The most unfinished ops a stream holds before a thread queueing more waits
// for it to drain (CUDA's launch queue is of this order): what queued work
// keeps alive (its tensors, its launch records) stays bounded however fast a
// program launches.
constexpr std::uint64_t kMaxQueuedOps = 1024;

// How a thread waits for room in a full stream: queue_wait(ready) blocks
// until ready() holds, or throws to abandon the queueing (the Python layer's
// wait releases the GIL and raises KeyboardInterrupt on Ctrl-C). False when
// no such wait applies to the calling thread (none installed, or a thread
// without the GIL): the stream then blocks it on its own.
using QueueWait = bool (*)(const std::function<bool()>& ready);
void set_queue_wait(QueueWait wait);
bool queue_wait(const std::function<bool()>& ready);

}  // namespace bronze::runtime
