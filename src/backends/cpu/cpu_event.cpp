#include "backends/cpu/cpu_event.hpp"

#include "backends/cpu/cpu_stream.hpp"
#include "bronze/error.hpp"
#include "runtime/fork_state.hpp"
#include "runtime/profiler.hpp"

namespace bronze::cpu {

void CpuEvent::record(runtime::StreamImpl& s) {
  static_cast<CpuStream&>(s).wait_for_room();  // before the record counts: an interrupted wait leaves none
  mark(s);
}

void CpuEvent::mark(runtime::StreamImpl& s) {
  std::uint64_t gen;
  {
    std::lock_guard<std::mutex> g(st_->mu);
    gen = ++st_->recorded;
  }
  auto st = st_;
  static_cast<CpuStream&>(s).push("event_record", "sync", [st, gen] {
    std::int64_t t = runtime::prof::now_ns();
    std::vector<std::shared_ptr<CpuStream>> resume;
    {
      std::lock_guard<std::mutex> g(st->mu);
      if (gen > st->completed) {
        st->completed = gen;
        st->when_ns = t;
      }
      auto& parked = st->parked;
      for (auto it = parked.begin(); it != parked.end();) {
        if (it->first > st->completed) {
          ++it;
          continue;
        }
        resume.push_back(std::move(it->second));
        it = parked.erase(it);
      }
    }
    st->cv.notify_all();
    for (auto& waiting : resume) waiting->resume();
  });
}

void CpuEvent::wait(runtime::StreamImpl& s) {
  std::uint64_t gen;
  {
    std::lock_guard<std::mutex> g(st_->mu);
    gen = st_->recorded;
  }
  if (gen == 0) return;
  auto st = st_;
  static_cast<CpuStream&>(s).enqueue_gate("event_wait", "sync", [st, gen](const std::shared_ptr<CpuStream>& self) {
    std::lock_guard<std::mutex> g(st->mu);
    if (st->completed >= gen) return true;
    st->parked.emplace_back(gen, self);
    return false;
  });
}

bool CpuEvent::query() {
  runtime::check_not_forked(DeviceType::CPU);  // the marker would never run
  std::lock_guard<std::mutex> g(st_->mu);
  return st_->completed >= st_->recorded;
}

void CpuEvent::synchronize() {
  runtime::check_not_forked(DeviceType::CPU);
  std::unique_lock<std::mutex> lock(st_->mu);
  st_->cv.wait(lock, [&] { return st_->completed >= st_->recorded; });
}

bool CpuEvent::recorded() const {
  std::lock_guard<std::mutex> g(st_->mu);
  return st_->recorded > 0;
}

double CpuEvent::elapsed_ms(runtime::EventImpl& end_base) {
  auto* end = dynamic_cast<CpuEvent*>(&end_base);
  if (!end) throw Error("elapsed_time: events belong to different backends");
  if (!timing_ || !end->timing_)
    throw Error("elapsed_time needs both events created with enable_timing=True");
  if (!recorded() || !end->recorded())
    throw Error("elapsed_time needs both events recorded first");
  synchronize();
  end->synchronize();
  std::int64_t a, b;
  {
    std::lock_guard<std::mutex> g(st_->mu);
    a = st_->when_ns;
  }
  {
    std::lock_guard<std::mutex> g(end->st_->mu);
    b = end->st_->when_ns;
  }
  if (b < a) throw Error("elapsed_time: the end event completed before the start event");
  return static_cast<double>(b - a) / 1e6;
}

}  // namespace bronze::cpu
