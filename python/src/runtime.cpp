// Devices, streams, events, memory, RNG and profiler bindings. Calls that may
// wait for a device release the GIL.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "backends/cpu/blas.hpp"
#include "backends/cuda/toolkit_paths.hpp"
#include "bronze/event.hpp"
#include "bronze/memory.hpp"
#include "bronze/error.hpp"
#include "bronze/profiler.hpp"
#include "bronze/random.hpp"
#include "bronze/stream.hpp"
#include "runtime/stream_impl.hpp"
#include "common.hpp"

namespace bronze::py {
namespace {
using release_gil = nb::call_guard<nb::gil_scoped_release>;
using OptDevice = std::optional<Device>;

nb::dict stats_dict(const MemoryStats& s) {
  nb::dict d;
  d["allocated_bytes.current"] = s.allocated_bytes;
  d["allocated_bytes.peak"] = s.allocated_bytes_peak;
  d["requested_bytes.current"] = s.requested_bytes;
  d["reserved_bytes.current"] = s.reserved_bytes;
  d["reserved_bytes.peak"] = s.reserved_bytes_peak;
  d["active_blocks"] = s.active_blocks;
  d["segments"] = s.segments;
  d["num_allocs"] = s.num_allocs;
  d["num_frees"] = s.num_frees;
  d["cache_hits"] = s.cache_hits;
  d["cache_misses"] = s.cache_misses;
  d["num_device_alloc"] = s.num_device_allocs;
  d["num_device_free"] = s.num_device_frees;
  d["num_ooms"] = s.num_ooms;
  d["limit_bytes"] = s.limit_bytes;
  return d;
}

std::optional<DeviceType> parse_type(const std::optional<std::string>& t) {
  if (!t) return std::nullopt;
  return Device::parse(*t).type;
}
}  // namespace

void bind_runtime(nb::module_& m) {
  install_queue_wait();
  m.attr("_max_queued_ops") = runtime::kMaxQueuedOps;  // a stream's queue depth before launches wait (tests)
  nb::enum_<DeviceType>(m, "DeviceType", "A kind of device: cpu or cuda.").value("cpu", DeviceType::CPU).value("cuda", DeviceType::CUDA);

  auto device_cls = nb::class_<Device>(m, "device", "A bronze device: 'cpu' or 'cuda:N'.");
  device_cls.def(nb::init<>(), "The CPU device.")
      .def("__init__", [](Device* d, nb::str s) { new (d) Device(Device::parse(text_arg(s, "device"))); },
           nb::sig("def __init__(self, device: str, /) -> None"),
           "A device by name: 'cpu', 'cuda' (the current CUDA device), 'cuda:N' or 'mps' (bronze's default "
           "accelerator). Raises ValueError for a name that is no device.")
      .def("__init__", [](Device* d, nb::str type, nb::handle index) {
        new (d) Device(Device::parse(text_arg(type, "device type") + ":" +
                                     std::to_string(integer_arg(index, "device index"))));
      }, nb::sig("def __init__(self, type: str, index: int, /) -> None"),
         "A device by type and index, as device('cuda', 1). Raises ValueError for a device that does not exist.")
      .def_prop_ro("type", [](const Device& d) { return d.type == DeviceType::CPU ? "cpu" : "cuda"; },
                   "'cpu' or 'cuda'.")
      .def_ro("index", &Device::index, "The device's index among those of its type (0 for the CPU).")
      .def("__str__", &Device::str)
      .def("__repr__", [](const Device& d) { return "device('" + d.str() + "')"; })
      .def("__eq__", [](const Device& a, nb::handle b) -> nb::object {
        // As Python's own objects: another kind of value, or a str naming no
        // device, is unequal (None in [d], d == 5), never an exception.
        if (nb::isinstance<Device>(b)) return nb::bool_(a == nb::cast<const Device&>(b));
        if (!PyUnicode_Check(b.ptr())) return nb::borrow(Py_NotImplemented);
        try {
          return nb::bool_(a == Device::parse(text_arg(b, "device")));
        } catch (const ValueError&) {
          return nb::bool_(false);
        }
      }, nb::is_operator(), nb::sig("def __eq__(self, other: object, /) -> bool"))
      .def("__hash__", [](const Device& d) { return static_cast<int>(d.type) * 1024 + d.index; });
  refuse_other_arguments<Device>(device_cls, "device", "a str ('cpu', 'cuda', 'cuda:1') or a type and an index");
  nb::implicitly_convertible<std::string, Device>();

  nb::class_<DeviceProperties>(m, "DeviceProperties", "What get_device_properties() reports of a device.")
      .def_ro("name", &DeviceProperties::name, "The device's name (the GPU's, or the CPU's model).")
      .def_ro("device", &DeviceProperties::device, "The device described.")
      .def_ro("total_memory", &DeviceProperties::total_memory, "Bytes of device memory.")
      .def_ro("recommended_max_memory", &DeviceProperties::recommended_max_memory,
              "Bytes this process should use at most (cgroup limits honoured).")
      .def_ro("multi_processor_count", &DeviceProperties::multiprocessor_count,
              "Streaming multiprocessors (CUDA) or CPUs the kernels run on.")
      .def_ro("max_threads_per_threadgroup", &DeviceProperties::max_threads_per_threadgroup,
              "The most threads a threadgroup may have.")
      .def_ro("simd_width", &DeviceProperties::simd_width, "Threads of a SIMD group (32).")
      .def_ro("host_visible", &DeviceProperties::host_visible, "Whether the CPU reads the device's memory in place.")
      .def("__repr__", [](const DeviceProperties& p) {
        return "DeviceProperties(name='" + p.name + "', device='" + p.device.str() +
               "', total_memory=" + std::to_string(p.total_memory) + ")";
      });

  m.def("is_available", [](std::optional<std::string> t) { return is_available(parse_type(t)); },
        nb::arg("device_type") = nb::none(),
        "Whether a device of the type is present: 'cpu' (always) or 'cuda'; without a type, True (the CPU "
        "backend). Raises ValueError for an unknown type.");
  m.def("device_count", [](std::optional<std::string> t) { return device_count(parse_type(t)); },
        nb::arg("device_type") = nb::none(),
        "The number of devices of the type ('cpu': 1, 'cuda': the GPUs found); without a type, of all types.");
  m.def("devices", &devices, "Every device bronze can run on: the CPU, then each CUDA device.");
  m.def("cuda_status", &cuda_status, "Why CUDA is or is not available (driver, NVRTC and cuBLAS as found).");
  m.def("current_device", &current_device,
        "The device work goes to by default: cuda:0 where there is a GPU, else the CPU, until set_device().");
  m.def("set_device", [](OptDevice d) {
    if (!d) throw TypeError("set_device needs a device, got None");
    set_device(*d);
  }, nb::arg("device"), nb::sig("def set_device(device: device | str) -> None"),
        "Makes `device` the current device of this thread. Raises TypeError for None or another type, "
        "ValueError for a device that does not exist.");
  m.def("get_device_properties", &get_device_properties, nb::arg("device") = nb::none(),
        "The device's name, memory and limits (the current device by default).");
  m.def("synchronize", [](OptDevice d) { wait_for_device(d ? *d : current_device()); },
        nb::arg("device") = nb::none(),
        "Waits for every stream of the device (the current device by default) to finish its queued work. "
        "Raises DeviceError for queued work that failed (a kernel fault, a kernel time limit).");

  auto stream_cls = nb::class_<Stream>(m, "Stream",
                                       "An ordered queue of device work. Work queued on one stream runs in order; "
                                       "work on different streams may overlap (order them with Event).");
  stream_cls.def(nb::init<OptDevice>(), nb::arg("device") = nb::none(),
                 "A new stream on the device (the current device by default).");
  refuse_other_arguments<Stream>(stream_cls, "Stream", "(device=None)");
  stream_cls
      .def_prop_ro("device", &Stream::device, "The device the stream's work runs on.")
      .def_prop_ro("id", &Stream::id, "A number no other stream of the process has.")
      .def("synchronize", &wait_for<Stream>,
           "Waits for the work queued on this stream; raises DeviceError for work of it that failed.")
      .def("query", &Stream::query, "Whether all the work queued on this stream has finished (never waits).")
      .def("__eq__", [](const Stream& a, nb::handle b) -> nb::object {
        if (!nb::isinstance<Stream>(b)) return nb::borrow(Py_NotImplemented);
        return nb::bool_(a == nb::cast<const Stream&>(b));
      }, nb::is_operator(), nb::sig("def __eq__(self, other: object, /) -> bool"))
      .def("__hash__", [](const Stream& s) { return s.id(); })
      .def("__repr__", [](const Stream& s) {
        return "<bronze.Stream " + std::to_string(s.id()) + " on " + s.device().str() + ">";
      });
  // bronze.torch's door to PyTorch's current CUDA stream (Stream::external).
  m.def("_external_stream", [](std::uintptr_t handle, OptDevice d) { return Stream::external(handle, d); },
        nb::arg("handle"), nb::arg("device") = nb::none(),
        "A bronze Stream queuing on the CUDA stream `handle` (a CUstream as an int), which it does not own.");
  m.def("current_stream", &Stream::current, nb::arg("device") = nb::none(),
        "The stream this thread queues work on for the device (the current device by default).");
  m.def("default_stream", &Stream::default_stream, nb::arg("device") = nb::none(),
        "The device's default stream (the current device by default).");
  m.def("set_stream", [](nb::handle s) { Stream::set_current(class_arg<Stream>(s, "set_stream(s)", "a bronze.Stream")); },
        nb::arg("stream").none(), nb::sig("def set_stream(stream: Stream) -> None"),
        "Makes `stream` this thread's current stream of its device (bronze.stream(s) does it for a block). "
        "Raises TypeError for anything but a Stream.");

  auto event_cls = nb::class_<Event>(m, "Event",
                                     "A point in a stream's work (torch.mps.event.Event): record() marks it, "
                                     "wait() makes another stream wait for it, synchronize() waits for it; with "
                                     "enable_timing=True, elapsed_time() gives the milliseconds between two.");
  event_cls.def("__init__", [](Event* e, nb::handle enable_timing) {
    if (!PyBool_Check(enable_timing.ptr()))
      throw TypeError(std::string("enable_timing must be True or False, got ") + Py_TYPE(enable_timing.ptr())->tp_name);
    new (e) Event(enable_timing.ptr() == Py_True);
  }, nb::arg("enable_timing") = false, nb::sig("def __init__(self, enable_timing: bool = False) -> None"),
     "A new event; enable_timing=True records timestamps. Raises TypeError unless enable_timing is a bool.");
  refuse_other_arguments<Event>(event_cls, "Event", "(enable_timing=False)");
  event_cls
      .def("record", &Event::record, nb::arg("stream") = nb::none(),
           "Marks the point after the work queued so far on `stream` (the current stream by default).")
      .def("wait", &Event::wait, nb::arg("stream") = nb::none(),
           "Makes work queued later on `stream` (the current stream by default) wait for this event.")
      .def("query", &Event::query, "Whether the work before the event has finished (never waits).")
      .def("synchronize", &wait_for<Event>,
           "Waits for the work before the event; raises DeviceError for work of it that failed.")
      .def("elapsed_time", [](const Event& start, const Event& end) {
        wait_until([&] { return start.query() && end.query(); });
        nb::gil_scoped_release g;
        return start.elapsed_time(end);
      }, nb::arg("end_event"),
           "Milliseconds from this event to end_event, once both have completed (it waits). Both need "
           "enable_timing=True and to have been recorded, or it raises BronzeError (a RuntimeError).")
      .def_prop_ro("enable_timing", &Event::enable_timing, "Whether the event records timestamps.");

  m.def("current_allocated_memory", &current_allocated_memory, nb::arg("device") = nb::none(),
        "Bytes of live tensors on the device (the current device by default).");
  m.def("driver_allocated_memory", &driver_allocated_memory, nb::arg("device") = nb::none(),
        "Bytes the device's caching allocator holds from the driver, cached blocks included.");
  m.def("recommended_max_memory", &recommended_max_memory, nb::arg("device") = nb::none(),
        "The most bytes the device should be given (cgroup limits honoured).");
  m.def("_set_per_process_memory_fraction", &set_per_process_memory_fraction, nb::arg("fraction"),
        nb::arg("device") = nb::none());
  m.def("get_per_process_memory_fraction", &get_per_process_memory_fraction, nb::arg("device") = nb::none(),
        "The device's memory limit as a fraction of recommended_max_memory() (0: no limit).");
  m.def("empty_cache", [](OptDevice d) {
    wait_until([&] { return query(d); });  // empty_cache waits for the device's work
    nb::gil_scoped_release g;
    empty_cache(d);
  }, nb::arg("device") = nb::none(),
        "Waits for the device's work, then returns the allocator's cached blocks to the driver.");
  m.def("memory_stats", [](OptDevice d) { return stats_dict(memory_stats(d)); }, nb::arg("device") = nb::none(),
        nb::sig("def memory_stats(device: device | str | None = None) -> dict[str, int]"),
        "The caching allocator's counters, keyed as torch.cuda.memory_stats() ('allocated_bytes.current', "
        "'reserved_bytes.peak', 'num_ooms', ...).");
  m.def("host_visible_memory_stats", [](OptDevice d) { return stats_dict(host_visible_memory_stats(d)); },
        nb::arg("device") = nb::none(),
        nb::sig("def host_visible_memory_stats(device: device | str | None = None) -> dict[str, int]"),
        "memory_stats() of the pool of host-visible (pinned, mapped) memory: empty(..., host_visible=True).");
  m.def("reset_peak_memory_stats", &reset_peak_memory_stats, nb::arg("device") = nb::none(),
        "Sets the peaks of memory_stats() to the current values.");

  m.def("manual_seed", &manual_seed, nb::arg("seed"), "Seeds every device's generator (bronze.manual_seed also "
        "takes negative seeds and whatever int() takes).");
  m.def("seed", &bronze::seed, "Seeds every device's generator from a random number, and returns the seed.");
  m.def("initial_seed", &initial_seed, nb::arg("device") = nb::none(),
        "The seed the device's generator was last seeded with.");
  m.def("_get_rng_state", [](OptDevice d) {
    auto v = get_rng_state(d);
    return nb::bytes(reinterpret_cast<const char*>(v.data()), v.size());
  }, nb::arg("device") = nb::none());
  m.def("_set_rng_state", [](nb::bytes b, OptDevice d) {
    const auto* p = static_cast<const std::uint8_t*>(b.data());
    set_rng_state(std::vector<std::uint8_t>(p, p + b.size()), d);
  }, nb::arg("state"), nb::arg("device") = nb::none());

  m.def("_profiler_start", &profiler::start, nb::arg("mode"), nb::arg("wait_until_completed"));
  m.def("_profiler_stop", &profiler::stop, nb::arg("path") = "", release_gil());
  m.def("_profiler_is_running", &profiler::is_running);
  m.def("_profiler_has_unwritten_trace", &profiler::has_unwritten_trace);
  m.def("_capture_enabled", &profiler::is_capture_enabled);
  m.def("_blas_status", [] {
    try {
      cpu::blas::require();  // a $BRONZE_BLAS_LIBRARY that does not load raises (ValueError)
    } catch (const NotSupportedError&) {  // none found: said by the status
    }
    return cpu::blas::status();
  }, "The CBLAS library mm loads on the CPU, or why there is none.");
  m.def("_set_pip_cuda_dirs", &cuda::set_pip_library_dirs, nb::arg("dirs"),
        "The lib folders of pip's NVIDIA wheels (site-packages/nvidia/*/lib), searched for NVRTC and cuBLAS "
        "after the library path.");
  m.def("_pip_cuda_dirs", &cuda::pip_library_dirs, "The folders _set_pip_cuda_dirs gave.");
  m.def("_capturing", &profiler::is_capturing);
  m.def("_capture_start", &profiler::start_capture, nb::arg("path"));
  m.def("_capture_stop", &profiler::stop_capture);
}

}  // namespace bronze::py
