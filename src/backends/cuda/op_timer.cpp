#include "backends/cuda/op_timer.hpp"

#include "runtime/profiler.hpp"

namespace bronze::cuda {
namespace {
CUevent timing_event() {
  CUevent e = nullptr;
  check(driver()->cuEventCreate(&e, CU_EVENT_DEFAULT), "cuEventCreate");
  return e;
}
}  // namespace

std::shared_ptr<const Timeline::Ref> Timeline::reference(CUstream s) {
  std::lock_guard<std::mutex> g(mu_);
  std::int64_t session = runtime::prof::session_start_ns();
  if (ref_ && session_ == session) return ref_;
  auto ref = std::make_shared<Ref>();
  ref->event = timing_event();
  check(driver()->cuEventRecord(ref->event, s), "cuEventRecord");
  check(driver()->cuEventSynchronize(ref->event), "cuEventSynchronize");
  ref->host_ns = runtime::prof::now_ns();  // the GPU reached the event about now
  session_ = session;
  ref_ = ref;  // the previous session's reference is freed by its last resolver
  return ref_;
}

OpTimer::OpTimer(Timeline& t, CUstream stream, std::uint64_t stream_id, const char* name, const char* category) {
  if (!runtime::prof::active()) return;
  timeline_ = &t;
  stream_ = stream;
  stream_id_ = stream_id;
  name_ = name;
  category_ = category;
  range_.start(name);
  ref_ = t.reference(stream);
  begin_ = timing_event();
  check(driver()->cuEventRecord(begin_, stream), "cuEventRecord");
}

OpTimer::~OpTimer() {
  if (!timeline_) return;
  CUevent end = nullptr;
  if (driver()->cuEventCreate(&end, CU_EVENT_DEFAULT) != CUDA_SUCCESS ||
      driver()->cuEventRecord(end, stream_) != CUDA_SUCCESS) {
    driver()->cuEventDestroy(begin_);
    return;
  }
  if (runtime::prof::mode().serialize) driver()->cuStreamSynchronize(stream_);  // wait_until_completed
  runtime::prof::record_pending([t = timeline_, ref = ref_, begin = begin_, end, name = std::move(name_),
                                 cat = category_, sid = stream_id_] {
    t->make_current();
    float b = 0, e = 0;
    driver()->cuEventSynchronize(end);
    driver()->cuEventElapsedTime(&b, ref->event, begin);
    driver()->cuEventElapsedTime(&e, ref->event, end);
    driver()->cuEventDestroy(begin);
    driver()->cuEventDestroy(end);
    auto ns = [&](float ms) { return ref->host_ns + static_cast<std::int64_t>(static_cast<double>(ms) * 1e6); };
    return runtime::prof::OpRecord{name, cat, t->device(), sid, ns(b), ns(e)};
  });
}

}  // namespace bronze::cuda
