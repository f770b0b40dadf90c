// Backend-neutral interfaces of streams and events; each backend implements
// them (src/backends/*).
#pragma once

#include <cstdint>

#include "bronze/device.hpp"

namespace bronze::runtime {

class StreamImpl {
 public:
  virtual ~StreamImpl() = default;
  virtual Device device() const = 0;
  // Unique in the process; never reused, so the allocator can key on it.
  virtual std::uint64_t id() const = 0;
  // Blocks until queued work finished; rethrows its first failure as DeviceError.
  virtual void synchronize() = 0;
  virtual bool query() = 0;
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

}  // namespace bronze::runtime
