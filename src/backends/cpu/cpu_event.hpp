// CPU events: a marker op in the stream's queue stamps the completion time
// on the device timeline (the steady clock the profiler uses). A stream that
// waits for an event holds no thread meanwhile (CpuStream::enqueue_gate).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "runtime/stream_impl.hpp"

namespace bronze::cpu {

class CpuStream;

class CpuEvent final : public runtime::EventImpl {
 public:
  explicit CpuEvent(bool timing) : timing_(timing), st_(std::make_shared<State>()) {}

  void record(runtime::StreamImpl& s) override;  // waits while the stream is full
  // record() without waiting for room: the allocator's markers, queued
  // under its lock and from destructors, where a wait could deadlock or throw.
  void mark(runtime::StreamImpl& s);
  void wait(runtime::StreamImpl& s) override;
  bool query() override;
  void synchronize() override;
  double elapsed_ms(runtime::EventImpl& end) override;
  bool recorded() const override;

 private:
  // Shared with queued marker ops, which may outlive the event.
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    std::uint64_t recorded = 0;   // records issued
    std::uint64_t completed = 0;  // highest record that has run
    std::int64_t when_ns = 0;     // completion time of `completed`
    // Streams parked at a wait for record `gen`: resumed when it completes.
    std::vector<std::pair<std::uint64_t, std::shared_ptr<CpuStream>>> parked;
  };
  bool timing_;
  std::shared_ptr<State> st_;
};

}  // namespace bronze::cpu
