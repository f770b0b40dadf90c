#include "bronze/stream.hpp"

#include "bronze/error.hpp"
#include "bronze/event.hpp"
#include "runtime/device_impl.hpp"

namespace bronze {

Stream::Stream(std::optional<Device> d)
    : impl_(runtime::device_impl(runtime::resolve(d)).create_stream()) {}

Stream Stream::default_stream(std::optional<Device> d) {
  return Stream(runtime::device_impl(runtime::resolve(d)).default_stream());
}
Stream Stream::current(std::optional<Device> d) {
  return Stream(runtime::current_stream(runtime::resolve(d)));
}
void Stream::set_current(const Stream& s) { runtime::set_current_stream(s.impl_); }
Stream Stream::external(std::uintptr_t handle, std::optional<Device> d) {
  return Stream(runtime::device_impl(runtime::resolve(d)).external_stream(handle));
}

Device Stream::device() const { return impl_->device(); }
std::uint64_t Stream::id() const { return impl_->id(); }
void Stream::synchronize() const { impl_->synchronize(); }
bool Stream::query() const { return impl_->query(); }

StreamGuard::StreamGuard(const Stream& s) : previous_(Stream::current(s.device())) {
  Stream::set_current(s);
}
StreamGuard::~StreamGuard() { Stream::set_current(previous_); }

Event::Event(bool enable_timing) : timing_(enable_timing) {}

void Event::record(std::optional<Stream> stream) {
  Stream s = stream ? *stream : Stream::current();
  if (!impl_) impl_ = runtime::device_impl(s.device()).create_event(timing_);
  impl_->record(s.impl());
}

void Event::wait(std::optional<Stream> stream) {
  if (!impl_) return;
  Stream s = stream ? *stream : Stream::current();
  impl_->wait(s.impl());
}

bool Event::query() const { return !impl_ || impl_->query(); }
void Event::synchronize() const {
  if (impl_) impl_->synchronize();
}
bool Event::recorded() const { return impl_ && impl_->recorded(); }

double Event::elapsed_time(const Event& end) const {
  if (!timing_ || !end.timing_)
    throw Error("elapsed_time needs both events created with enable_timing=True");
  if (!recorded() || !end.recorded())
    throw Error("elapsed_time needs both events recorded first");
  return impl_->elapsed_ms(*end.impl_);
}

}  // namespace bronze
