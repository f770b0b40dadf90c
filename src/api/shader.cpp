// compile_shader, libraries and kernel dispatch: the front end (src/shader)
// reads the source, the device's backend builds and loads the module
// (runtime/shader_module.hpp); calls are checked and bound by the reflected
// signature, then queued on the device's stream.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <exception>
#include <fstream>
#include <future>
#include <iterator>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <unordered_map>

#include "bronze/error.hpp"
#include "bronze/shader.hpp"
#include "jit/cpus.hpp"
#include "jit/disk_cache.hpp"
#include "jit/interrupt.hpp"
#include "jit/log.hpp"
#include "jit/progress.hpp"
#include "jit/sha256.hpp"
#include "jit/warnings.hpp"
#include "backends/cuda/cuda_signatures.hpp"
#include "backends/cuda/gpu_image.hpp"
#include "backends/shader_backend.hpp"
#include "runtime/capture.hpp"
#include "runtime/device_impl.hpp"
#include "air/metallib.hpp"
#include "api/library_impl.hpp"
#include "api/unit_record.hpp"
#include "runtime/shader_module.hpp"
#include "shader/bronzelib.hpp"
#include "shader/diagnostics.hpp"
#include "shader/module_source.hpp"
#include "shader/parser.hpp"
#include "shader/rewrite.hpp"
#include "shader/types.hpp"
#include "tensor/storage.hpp"

namespace bronze {

namespace {
using shader::arg_label;
constexpr int kSimdWidth = 32;

// What a lookup of `name` failed against: every kernel of a small library;
// of a large one (MLX's .metallib has 17,248) the nearest few of those that
// start as `name` does (scoring only those keeps a probe such as IPython's
// hasattr(lib, "_repr_html_") quick).
std::string known_kernels(const detail::LibraryImpl& lib, const std::string& name) {
  constexpr std::size_t kAll = 16, kNearest = 5, kPrefix = 3;
  std::string s;
  if (lib.kernels.size() <= kAll) {
    for (const auto& k : lib.kernels) s += (s.empty() ? "" : ", ") + k.name;
    return "its kernels: " + (s.empty() ? std::string("(none)") : s);
  }
  std::vector<std::pair<std::size_t, const std::string*>> near;
  for (const auto& k : lib.kernels)
    if (k.name.compare(0, kPrefix, name, 0, kPrefix) == 0) near.emplace_back(shader::edit_distance(name, k.name), &k.name);
  const std::size_t shown = std::min(near.size(), kNearest);
  std::partial_sort(near.begin(), near.begin() + shown, near.end());
  for (std::size_t i = 0; i < shown; ++i) s += (s.empty() ? "" : ", ") + *near[i].second;
  const std::string all = std::to_string(lib.kernels.size()) + " kernels";
  return (s.empty() ? "none of its " + all + " starts as it does"
                    : "the nearest of its " + all + ": " + s) + " (dir(lib) lists them all)";
}

// A kernel command in the capture file: the library (its source once),
// grid, group and every argument's buffer identity and size or scalar bytes.
void capture_dispatch(detail::LibraryImpl& lib, const KernelInfo& ki, const runtime::KernelLaunch& l,
                      const std::vector<KernelArg>& args, std::uint64_t stream) {
  using nlohmann::ordered_json;
  runtime::capture::record_once(lib.hash, [&] { return ordered_json{{"library", lib.hash}, {"source", lib.source}}; });
  static const char* hexd = "0123456789abcdef";
  auto buffer = [](const Tensor& t) {
    return ordered_json{{"buffer", reinterpret_cast<std::uintptr_t>(t.storage().get())},
                        {"bytes", t.nbytes()},
                        {"dtype", dtype_name(t.dtype())}};
  };
  ordered_json a = ordered_json::array();
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (const Tensor* t = args[i].tensor()) {
      a.push_back(buffer(*t));
    } else if (const std::vector<Tensor>* ts = args[i].tensors()) {  // its buffers, not their addresses
      ordered_json b = ordered_json::array();
      for (const Tensor& u : *ts) b.push_back(buffer(u));
      a.push_back(ordered_json{{"argument_buffer", std::move(b)}});
    } else {
      std::string hex;
      const std::uint8_t* b = l.inline_bytes.data() + l.args[i].inline_offset;
      std::size_t n = l.args[i].bytes;
      for (std::size_t k = 0; k < n; ++k) {
        hex += hexd[b[k] >> 4];
        hex += hexd[b[k] & 15];
      }
      a.push_back(ordered_json{{"bytes_hex", hex}});
    }
  }
  runtime::capture::record({{"kernel", ki.name},
                            {"library", lib.hash},
                            {"stream", stream},
                            {"grid", l.grid},
                            {"group", l.group},
                            {"args", std::move(a)}});
}

}  // namespace

detail::LibraryImpl::EntryOrder detail::entry_order(const KernelInfo& info) {
  detail::LibraryImpl::EntryOrder o;
  o.position.resize(info.bound.size());
  for (const KernelParam& p : info.params) {
    if (!shader::enters(p)) continue;
    if (p.binding >= 0) o.position[p.binding] = o.count;
    else o.absent.emplace_back(o.count, p.by_value ? p.size : 0);
    o.identity = o.identity && p.binding == static_cast<int>(o.count);
    ++o.count;
  }
  return o;
}

namespace {
std::vector<std::uint8_t> read_binary(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw ValueError("cannot open '" + path + "'");
  return std::vector<std::uint8_t>(std::istreambuf_iterator<char>(f), {});
}

void check_language(const Device& d, const CompileOptions& o) {
  if (o.language != "metal" && o.language != "cuda")
    throw ValueError("unknown shader language '" + o.language + "': expected 'metal' or 'cuda'");
  if (o.language == "cuda" && d.type != DeviceType::CUDA)
    throw NotSupportedError("CUDA C++ kernels run on a CUDA device, not on " + d.str() +
                            "; write the kernel in Metal to run it on both");
  if (o.validate && d.type != DeviceType::CPU)
    throw NotSupportedError("validate=True (bounds-checked buffers) runs on the CPU backend; compile with "
                            "device='cpu' to debug the kernel there");
}

// "shader.metal" names Metal source; CUDA source is "kernel.cu" unless named.
std::string source_name(const CompileOptions& o) {
  return o.language == "cuda" && o.filename == CompileOptions().filename ? "kernel.cu" : o.filename;
}

std::string cubin_target(int arch) { return "cuda-sm_" + std::to_string(arch); }
std::string ptx_target(int arch) { return "cuda-ptx-compute_" + std::to_string(arch); }

shader::SourceOptions source_options(const CompileOptions& o) {
  shader::SourceOptions so;
  so.filename = o.filename;
  so.include_dirs = o.include_dirs;
  so.headers = o.headers;
  so.defines = o.defines;
  so.torch_include_dir = o.torch_include_dir;
  so.constants = o.constants;
  so.math_mode = shader::math_mode_name(o.math_mode);
  return so;
}

std::shared_ptr<detail::LibraryImpl> new_library(const Device& d, std::string source, std::string hash) {
  auto lib = std::make_shared<detail::LibraryImpl>();
  lib->device = d;
  lib->hash = hash.substr(0, 16);
  lib->source = std::move(source);
  return lib;
}

// A kernel of a CUDA C++ library or a GPU module, as its declaration reflects it.
void add_kernel(detail::LibraryImpl& lib, KernelInfo info, const runtime::ModuleKernel& m) {
  lib.entry_order.push_back(detail::entry_order(info));
  lib.kernels.push_back(std::move(info));
  lib.entries.push_back(m.entry);
  lib.static_tg_bytes.push_back(m.static_shared_bytes);
  lib.carved_tg_bytes.push_back(m.carved_shared_bytes);
  lib.max_threads.push_back(m.max_threads);
}

// A big unit builds in parts, in parallel: a compiler (a host compiler
// process, an NVRTC program) uses one core, and its time goes to
// instantiating kernels (MLX's libraries hold hundreds to thousands), while
// each part compiles the unit's other code again. So a part has at least
// kKernelsPerPart kernels, and there are at most as many parts as CPUs.
constexpr std::size_t kKernelsPerPart = 64;

std::size_t part_count(std::size_t kernels) {
  return std::clamp<std::size_t>(kernels / kKernelsPerPart, 1, static_cast<std::size_t>(jit::available_cpus()));
}

// Which of a unit's kernels a build makes: all of them, or the one that
// Library::specialize asks for (a library of hundreds, llama.cpp's, builds
// that kernel alone, as Metal's newFunctionWithName:constantValues:
// compiles one function), or the one a lazily built library's first use asks for.
struct KernelRange {
  std::size_t first = 0, last = SIZE_MAX;
  KernelRange within(const shader::ParsedSource& ps) const { return {first, std::min(last, ps.kernels.size())}; }
  std::size_t size() const { return last - first; }
};

// The kernels [first, last) of part p of n of range r: loaders split a
// library's objects the same way.
std::pair<std::size_t, std::size_t> part_range(std::size_t p, std::size_t n, KernelRange r) {
  return {r.first + p * r.size() / n, r.first + (p + 1) * r.size() / n};
}

// How a Metal unit is built by a backend.
struct BuildPlan {
  KernelRange kernels;
  bool validate = false;
  int arch = 0;             // CUDA: sm_<arch>
  bool ptx = false;         // CUDA: PTX instead of a cubin
  bool check_only = false;  // the compiler's semantic analysis alone (RewriteOptions::check_only)
  // In and out: a unit whose threadgroup arrays are over CUDA's static
  // shared memory is built again with them carved from dynamic shared
  // memory; code that cannot take checked views of its buffers under
  // validate is built again with plain pointers.
  bool carve = false, checked_buffers = true;
};

// The unit's main file, as log records and the progress line name it.
std::string unit_name(const shader::TranslationUnit& tu) { return tu.files.empty() ? "shader.metal" : tu.files[0].name; }

// A Metal unit built by `backend`, one object per part of plan.kernels, or
// the unit's errors in the user's files.
std::vector<runtime::ModuleObject> build_module(const backends::ShaderBackend& backend,
                                                const shader::TranslationUnit& tu, const shader::ParsedSource& ps,
                                                BuildPlan& plan) {
  const KernelRange kernels = plan.kernels.within(ps);
  const std::size_t n = part_count(kernels.size());
  const std::string name = kernels.size() == 1 && ps.kernels.size() > 1
                               ? "kernel '" + ps.kernels[kernels.first].info.name + "' of " + unit_name(tu)
                               : unit_name(tu);
  auto build = [&](std::size_t p) {
    jit::LogScope scope(name, p, n);
    shader::RewriteOptions options;
    options.validate = plan.validate;
    options.checked_buffers = plan.checked_buffers;
    options.carve_threadgroup = plan.carve;
    options.check_only = plan.check_only;
    std::tie(options.first_kernel, options.last_kernel) = part_range(p, n, kernels);
    runtime::ModuleSource src = shader::module_source(tu, ps, options, backend.generate(tu.text, ps, options));
    src.gpu_arch = plan.arch;
    src.ptx = plan.ptx;
    src.one_of_many = n > 1;
    return backend.build(src);
  };
  auto build_parts = [&] {
    jit::CompileProgress progress((plan.check_only ? "checking " : "compiling ") + name, n);
    std::vector<runtime::ModuleObject> objects(n);
    std::vector<std::exception_ptr> errors(n);
    std::atomic<std::size_t> running{n};
    auto run = [&](std::size_t p) {
      try {
        objects[p] = build(p);
      } catch (...) {
        errors[p] = std::current_exception();
      }
      progress.part_done();
      --running;
    };
    std::vector<std::thread> threads;
    for (std::size_t p = 1; p < n; ++p)
      threads.emplace_back([&run, p, flag = jit::interrupt_flag()] {
        jit::SharedInterrupt stops_with_caller(flag);
        run(p);
      });
    run(0);
    // The other parts are waited for in slices: an interrupt stops them.
    while (running.load() > 0 && !jit::interrupted()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    for (auto& t : threads) t.join();
    for (const auto& e : errors)
      if (e) std::rethrow_exception(e);
    return objects;
  };
  auto failed = [](const std::vector<runtime::ModuleObject>& objects) {
    return std::find_if(objects.begin(), objects.end(), [](const auto& o) { return !o.ok; });
  };
  std::vector<runtime::ModuleObject> objects = build_parts();
  auto f = failed(objects);
  if (f != objects.end() && f->static_shared_overflow && !plan.carve) {
    jit::log(jit::LogLevel::Info, [&] {
      return name + ": its threadgroup arrays are over CUDA's static shared memory: built again with them in "
                    "dynamic shared memory";
    });
    plan.carve = true;
    objects = build_parts();
    f = failed(objects);
  }
  if (f != objects.end() && plan.validate && plan.checked_buffers) {
    // Code that cannot take checked views of its buffers (one bound to
    // `auto*`, passed as a reference to a pointer, advanced by `+=`, as MLX
    // and llama.cpp do) keeps them as pointers: the fences around the
    // buffers check it alone, and the errors reported are the code's own.
    jit::log(jit::LogLevel::Info, [&] {
      return name + ": validate=True's checked views of its buffers do not compile: built again with plain "
                    "pointers (the fences around the buffers still check them)";
    });
    plan.checked_buffers = false;
    objects = build_parts();
    f = failed(objects);
  }
  if (f != objects.end()) shader::raise_build_error(f->diagnostics, ps, tu.files);
  return objects;
}

// What loading kernel k of a Metal unit's module looks up there (`info`: its reflection).
runtime::ModuleKernel module_kernel(std::size_t k, const KernelInfo& info) {
  runtime::ModuleKernel m;
  m.symbol = shader::entry_symbol(k);
  m.table_symbol = shader::layout_symbol(k);
  m.table_words = shader::layout_words(info.params.size());
  m.tgmem_symbol = shader::tgmem_symbol(k);  // CUDA: only where arrays are carved (GPUs tell the rest)
  m.max_threads_symbol = shader::max_threads_symbol(k);  // CUDA: the entry's launch bounds tell it
  return m;
}

// Refuses kernel k of a unit whose loaded table does not end where the
// reflected signature does: an object built from another source (a doctored
// .bronzelib) is refused before its kernels could take a value's bytes for a
// pointer, and before it is loaded (runtime::ModuleCheck).
void check_table(const KernelInfo& reflected, const runtime::ModuleKernel& m) {
  const std::vector<std::uint64_t>& table = m.table;
  bool matches = table.size() == m.table_words && table.back() == 0;
  for (std::size_t w = 2; matches && w + 1 < table.size(); w += shader::kLayoutWordsPerParam)
    matches = table[w] != 0;  // every parameter's size
  if (!matches)
    throw ValueError("the compiled object does not match its source: kernel '" + reflected.name +
                     "' has another signature there; load it with rebuild=True to build its source instead");
}

// A library of a Metal unit's kernels on device d (`kernels`: as the
// parser reflects them, the first being the unit's kernel `first`), none
// loaded yet (load_parts, set_kernel).
std::shared_ptr<detail::LibraryImpl> unit_library(const Device& d, const std::string& unit, const std::string& unit_hash,
                                                  std::vector<KernelInfo> kernels, std::size_t first,
                                                  const std::string& no_kernels_why) {
  auto lib = new_library(d, unit, unit_hash);
  lib->no_kernels_why = no_kernels_why;
  lib->first_kernel = first;
  lib->restricted = d.type == DeviceType::CUDA;
  lib->kernels = std::move(kernels);
  const std::size_t n = lib->kernels.size();
  lib->entries.assign(n, nullptr);
  lib->static_tg_bytes.assign(n, 0);
  lib->carved_tg_bytes.assign(n, 0);
  lib->max_threads.assign(n, 0);
  lib->entry_order.resize(n);
  lib->aliased.resize(n);
  return lib;
}

// Loads the objects of lib's kernels in range (unit indices; the parts
// build_module made) into lib: each kernel's ModuleKernel, in range order.
std::vector<runtime::ModuleKernel> load_parts(detail::LibraryImpl& lib, const std::vector<runtime::ModuleObject>& objects,
                                              KernelRange kernels) {
  auto info = [&](std::size_t k) -> const KernelInfo& { return lib.kernels[k - lib.first_kernel]; };
  std::vector<runtime::ModuleKernel> mk(kernels.size());
  for (std::size_t k = 0; k < mk.size(); ++k) mk[k] = module_kernel(kernels.first + k, info(kernels.first + k));
  for (std::size_t p = 0; p < objects.size(); ++p) {
    auto [first, last] = part_range(p, objects.size(), {0, mk.size()});
    std::vector<runtime::ModuleKernel> part(std::make_move_iterator(mk.begin() + first),
                                            std::make_move_iterator(mk.begin() + last));
    auto check = [&, first = first](const std::vector<runtime::ModuleKernel>& loaded) {
      for (std::size_t k = 0; k < loaded.size(); ++k) check_table(info(kernels.first + first + k), loaded[k]);
    };
    std::shared_ptr<void> module = runtime::device_impl(lib.device).load_module(objects[p], part, check);
    {
      std::lock_guard<std::mutex> g(lib.modules_mu);
      lib.modules.push_back(std::move(module));
    }
    std::move(part.begin(), part.end(), mk.begin() + first);
  }
  return mk;
}

// Kernel k of lib (its index there) from its loaded entry: the compiler's
// layout applied to the parser's reflection.
void set_kernel(detail::LibraryImpl& lib, std::size_t k, const runtime::ModuleKernel& m) {
  KernelInfo& info = lib.kernels[k];
  shader::apply_layout(info, reinterpret_cast<const unsigned long long*>(m.table.data()));
  lib.entry_order[k] = detail::entry_order(info);
  lib.entries[k] = m.entry;
  lib.static_tg_bytes[k] = m.static_shared_bytes;
  lib.carved_tg_bytes[k] = m.carved_shared_bytes;
  lib.max_threads[k] = m.max_threads;
}

// A built Metal unit (`unit_hash`: its SHA-256), loaded on device d: objects
// are its parts (build_module) of the kernels in range.
std::shared_ptr<detail::LibraryImpl> load_unit(const Device& d, const std::string& unit, const std::string& unit_hash,
                                               const shader::ParsedSource& ps,
                                               const std::vector<runtime::ModuleObject>& objects,
                                               KernelRange kernels = {}) {
  kernels = kernels.within(ps);
  std::vector<KernelInfo> infos;
  for (std::size_t k = kernels.first; k < kernels.last; ++k) infos.push_back(ps.kernels[k].info);
  auto lib = unit_library(d, unit, unit_hash, std::move(infos), kernels.first, ps.no_kernels_why);
  std::vector<runtime::ModuleKernel> mk = load_parts(*lib, objects, kernels);
  for (std::size_t k = 0; k < mk.size(); ++k) set_kernel(*lib, k, mk[k]);
  return lib;
}

// A unit of at most this many kernels is built whole when compiled: a check
// and then a build per kernel would run the compiler over the unit's shared
// code several times to save little.
constexpr std::size_t kEagerKernels = 8;

// The library of a checked unit (lazy: each kernel built on first use).
std::shared_ptr<detail::LibraryImpl> lazy_library(const Device& d, const shader::TranslationUnit& tu,
                                                  const std::string& unit_hash, bool validate, detail::UnitRecord record,
                                                  std::string record_key) {
  const bool checked_buffers = record.checked_buffers;
  auto lib = unit_library(d, tu.text, unit_hash, std::move(record.kernels), 0, record.no_kernels_why);
  lib->validate = validate;
  lib->lazy = std::make_unique<detail::LibraryImpl::Lazy>(lib->kernels.size());
  lib->lazy->unit = tu;
  lib->lazy->checked_buffers = checked_buffers;
  lib->lazy->record_key = std::move(record_key);
  return lib;
}

// A Metal unit (preprocessed) on device d: all its kernels, or the one named
// `only`. A unit of more than kEagerKernels is checked whole now (the
// compiler's semantic analysis of every kernel and instantiation: its errors
// are the compile's) and each kernel is built on first use (built); what
// the check learnt is recorded in the compile cache (api/unit_record.hpp),
// so another process compiling the unit finds it there.
std::shared_ptr<detail::LibraryImpl> build_unit(const Device& d, const shader::TranslationUnit& tu, bool validate,
                                                const std::string& only = {}) {
  const backends::ShaderBackend& backend = backends::shader_backend(d.type);
  BuildPlan plan;
  plan.validate = validate;
  plan.arch = runtime::device_impl(d).gpu_arch();
  const std::string unit_hash = jit::sha256_hex(tu.text);
  std::string record_key;
  if (only.empty()) {
    record_key = detail::unit_record_key(unit_hash, d.type == DeviceType::CUDA ? cubin_target(plan.arch) : "cpu",
                                         validate, backend.compiler_identity());
    if (auto record = detail::read_unit_record(record_key))
      return lazy_library(d, tu, unit_hash, validate, std::move(*record), std::move(record_key));
  }
  shader::ParsedSource ps = shader::parse(tu.text, tu.files.empty() ? "shader.metal" : tu.files[0].name);
  if (!only.empty()) {
    auto k = std::find_if(ps.kernels.begin(), ps.kernels.end(), [&](const auto& pk) { return pk.info.name == only; });
    if (k == ps.kernels.end()) throw KernelNotFoundError("the library has no kernel '" + only + "'");
    plan.kernels.first = static_cast<std::size_t>(k - ps.kernels.begin());
    plan.kernels.last = plan.kernels.first + 1;
  }
  plan.check_only = plan.kernels.within(ps).size() > kEagerKernels;
  auto objects = build_module(backend, tu, ps, plan);
  if (!plan.check_only) {
    auto lib = load_unit(d, tu.text, unit_hash, ps, objects, plan.kernels);
    lib->validate = validate;
    return lib;
  }
  detail::UnitRecord record;
  for (const shader::ParsedKernel& pk : ps.kernels) record.kernels.push_back(pk.info);
  record.no_kernels_why = ps.no_kernels_why;
  record.checked_buffers = plan.checked_buffers;
  detail::write_unit_record(record_key, record);
  auto lib = lazy_library(d, tu, unit_hash, validate, std::move(record), std::move(record_key));
  lib->lazy->parse(std::move(ps));
  return lib;
}

// The plan that builds kernels of a lazily built library as it was checked.
BuildPlan lazy_plan(const detail::LibraryImpl& lib, KernelRange kernels) {
  BuildPlan plan;
  plan.kernels = kernels;
  plan.validate = lib.validate;
  plan.arch = runtime::device_impl(lib.device).gpu_arch();
  plan.checked_buffers = lib.lazy->checked_buffers;
  return plan;
}

// Kernel k of lib, built and loaded unless it is: once, however many
// threads ask at the same time; from the compile cache where the unit's
// record names its object. A build that fails raises its errors at the
// user's lines from here (the call) and is tried again by the next use.
void built(detail::LibraryImpl& lib, std::size_t k) {
  if (lib.air) return detail::build_air_kernel(lib, k);
  if (!lib.lazy || lib.lazy->ready[k].load(std::memory_order_acquire)) return;
  detail::LibraryImpl::Lazy& z = *lib.lazy;
  std::call_once(z.built[k], [&] {
    const backends::ShaderBackend& backend = backends::shader_backend(lib.device.type);
    const KernelRange one{k, k + 1};
    const std::string name = "kernel '" + lib.kernels[k].name + "' of " + unit_name(z.unit);
    jit::LogScope scope(name);
    std::optional<runtime::ModuleObject> object;
    if (auto entry = detail::read_kernel_object(z.record_key, k)) object = backend.cached(entry->first, entry->second);
    if (!object) {
      BuildPlan plan = lazy_plan(lib, one);
      object = std::move(build_module(backend, z.unit, z.parsed(), plan)[0]);
      if (!object->cache_key.empty())
        detail::write_kernel_object(z.record_key, k, object->cache_key, object->cache_suffix);
    }
    set_kernel(lib, k, load_parts(lib, {*object}, one)[0]);
    z.ready[k].store(true, std::memory_order_release);
  });
}

// Every kernel of lib not built yet, built in parts over the machine's
// cores (as compile_library builds) and loaded.
void build_all(detail::LibraryImpl& lib) {
  if (lib.air) {
    for (std::size_t k = 0; k < lib.kernels.size(); ++k) detail::build_air_kernel(lib, k);
    return;
  }
  if (!lib.lazy) return;
  detail::LibraryImpl::Lazy& z = *lib.lazy;
  auto unbuilt = [&](std::size_t k) { return !z.ready[k].load(std::memory_order_acquire); };
  std::size_t first = 0, last = lib.kernels.size();  // from the first unbuilt kernel to the last
  while (first < last && !unbuilt(first)) ++first;
  while (last > first && !unbuilt(last - 1)) --last;
  if (first == last) return;
  const KernelRange range{first, last};
  BuildPlan plan = lazy_plan(lib, range);
  auto objects = build_module(backends::shader_backend(lib.device.type), z.unit, z.parsed(), plan);
  std::vector<runtime::ModuleKernel> mk = load_parts(lib, objects, range);
  for (std::size_t k = first; k < last; ++k)
    std::call_once(z.built[k], [&] {
      set_kernel(lib, k, mk[k - first]);
      z.ready[k].store(true, std::memory_order_release);
    });
}

// Kernel k of a restricted library, built without __restrict__ for
// launches whose buffers alias (LibraryImpl::restricted): a module of that
// one kernel, from the library's unit, as its part was built.
const detail::LibraryImpl::Aliased& aliased_entry(detail::LibraryImpl& lib, std::size_t k) {
  std::lock_guard<std::mutex> g(lib.aliased_mu);
  detail::LibraryImpl::Aliased& a = lib.aliased[k];
  if (a.entry) return a;
  shader::TranslationUnit tu;
  tu.text = lib.source;
  shader::ParsedSource ps = shader::parse(tu.text, "shader.metal");
  const std::size_t unit_k = lib.first_kernel + k;
  shader::RewriteOptions options;
  options.restrict_read_only = false;
  options.carve_threadgroup = lib.carved_tg_bytes[k] > 0;
  options.first_kernel = unit_k, options.last_kernel = unit_k + 1;
  const backends::ShaderBackend& backend = backends::shader_backend(lib.device.type);
  runtime::ModuleSource src = shader::module_source(tu, ps, options, backend.generate(tu.text, ps, options));
  src.gpu_arch = runtime::device_impl(lib.device).gpu_arch();
  const std::string name = "kernel '" + lib.kernels[k].name + "' without __restrict__";
  jit::LogScope scope(name);
  jit::log(jit::LogLevel::Info, [&] {
    return "kernel '" + lib.kernels[k].name + "': a launch binds one buffer to a read-only and a written parameter: "
           "built again without __restrict__ for such launches";
  });
  runtime::ModuleObject o = backend.build(src);
  if (!o.ok) shader::raise_build_error(o.diagnostics, ps, tu.files);
  std::vector<runtime::ModuleKernel> mk = {module_kernel(unit_k, lib.kernels[k])};
  a.module = runtime::device_impl(lib.device).load_module(o, mk, {});
  a.max_threads = mk[0].max_threads;
  a.entry = mk[0].entry;
  return a;
}

runtime::ModuleObject image_object(const std::vector<std::uint8_t>& bytes) {
  runtime::ModuleObject o;
  o.ok = true;
  o.image.assign(bytes.begin(), bytes.end());
  return o;
}

// A .bronzelib's objects for `target`, its parts in order.
std::vector<runtime::ModuleObject> target_objects(const shader::LibraryFile& f, const std::string& target) {
  std::vector<runtime::ModuleObject> out;
  for (const auto& [t, object] : f.objects)
    if (t == target) out.push_back(image_object(object));
  return out;
}

// A .bronzelib on a CUDA device: its cubin for the device, else PTX of an
// architecture at or below it (the driver compiles it), else its unit.
std::shared_ptr<detail::LibraryImpl> load_bronzelib_cuda(const Device& d, const shader::LibraryFile& f,
                                                         const shader::TranslationUnit& tu,
                                                         const shader::ParsedSource& ps) {
  int arch = runtime::device_impl(d).gpu_arch();
  std::vector<runtime::ModuleObject> objects = target_objects(f, cubin_target(arch));
  for (int a = arch; a > 0 && objects.empty(); --a) {
    objects = target_objects(f, ptx_target(a));
    if (!objects.empty())
      jit::log(jit::LogLevel::Info, [&] {
        return f.filename + ": the .bronzelib has no cubin for sm_" + std::to_string(arch) + ": its PTX for compute_" +
               std::to_string(a) + " is compiled by the driver";
      });
  }
  if (objects.empty()) {
    jit::log(jit::LogLevel::Info, [&] {
      return f.filename + ": the .bronzelib has no cubin for sm_" + std::to_string(arch) +
             " nor PTX it could run: built from its source";
    });
    BuildPlan plan;
    plan.arch = arch;
    objects = build_module(backends::shader_backend(d.type), tu, ps, plan);
  }
  return load_unit(d, tu.text, jit::sha256_hex(tu.text), ps, objects);
}

// CUDA C++ source: its __global__ kernels, compiled and loaded on `device`.
std::shared_ptr<detail::LibraryImpl> build_cuda_source(const Device& d, const std::string& src,
                                                       const std::string& filename) {
  std::vector<cuda::CudaKernel> kernels = cuda::parse_cuda_kernels(src, filename);
  runtime::ModuleSource ms;
  ms.code = src;
  ms.filename = filename;
  ms.gpu_arch = runtime::device_impl(d).gpu_arch();
  for (const cuda::CudaKernel& k : kernels)
    if (!k.extern_c) ms.name_expressions.push_back("&" + k.info.name);
  runtime::ModuleObject o = backends::shader_backend(d.type).build(ms);
  if (!o.ok) shader::raise_compile_error(o.diagnostics, {{filename, src}});
  std::vector<runtime::ModuleKernel> mk(kernels.size());
  for (std::size_t k = 0, lowered = 0; k < kernels.size(); ++k)
    mk[k].symbol = kernels[k].extern_c ? kernels[k].info.name : o.lowered[lowered++];
  auto lib = new_library(d, src, jit::sha256_hex(src));
  lib->modules.push_back(runtime::device_impl(d).load_module(o, mk, {}));
  lib->launch_record = false;
  for (std::size_t k = 0; k < kernels.size(); ++k) {
    KernelInfo info = std::move(kernels[k].info);
    for (auto& p : info.params) {
      std::size_t i = static_cast<std::size_t>(p.binding);
      if (!p.by_value) continue;
      if (i < mk[k].param_sizes.size()) p.size = mk[k].param_sizes[i];  // the compiler's layout
      else if (!p.size)
        throw NotSupportedError("kernel '" + info.name + "' takes '" + p.type + "' by value; bronze needs a CUDA "
                                "12.4+ driver (cuFuncGetParamInfo) to learn its size");
    }
    add_kernel(*lib, std::move(info), mk[k]);
  }
  return lib;
}

// A raw CUDA module (cubin, PTX, fatbin) with kernel parameters from the
// caller's CUDA declarations or, for PTX, its .entry directives.
std::shared_ptr<detail::LibraryImpl> load_gpu_image(const Device& d, const std::vector<std::uint8_t>& bytes,
                                                    const std::string& signatures) {
  std::vector<cuda::CudaKernel> kernels;
  if (!signatures.empty()) {
    kernels = cuda::parse_cuda_kernels(signatures, "signatures");
  } else if (cuda::is_ptx(bytes.data(), bytes.size())) {
    kernels = cuda::parse_ptx_entries(std::string(bytes.begin(), bytes.end()));
  } else {
    throw ValueError("a cubin or fatbin does not say its kernels' parameter types: pass signatures= with their "
                     "CUDA declarations, e.g. '__global__ void k(float* y, float a);'");
  }
  std::vector<runtime::ModuleKernel> mk(kernels.size());
  for (std::size_t k = 0; k < kernels.size(); ++k) mk[k].symbol = kernels[k].info.name;
  auto lib = new_library(d, "", jit::Sha256().update(bytes.data(), bytes.size()).hex());
  lib->modules.push_back(runtime::device_impl(d).load_module(image_object(bytes), mk, {}));
  lib->launch_record = false;
  for (std::size_t k = 0; k < kernels.size(); ++k) {
    KernelInfo info = std::move(kernels[k].info);
    if (!mk[k].param_sizes.empty() && mk[k].param_sizes.size() != info.params.size())
      throw ValueError("kernel '" + info.name + "' takes " + std::to_string(mk[k].param_sizes.size()) +
                       " parameters in the module; its signature names " + std::to_string(info.params.size()));
    for (auto& p : info.params)
      if (p.by_value && static_cast<std::size_t>(p.binding) < mk[k].param_sizes.size())
        p.size = mk[k].param_sizes[p.binding];
    add_kernel(*lib, std::move(info), mk[k]);
  }
  return lib;
}

// The addresses of `ts` as the struct of device pointers that parameter p
// is (Metal's argument buffer); each tensor stays alive until the launch ran.
std::vector<std::uint8_t> argument_buffer(const KernelParam& p, const std::vector<Tensor>& ts,
                                          const detail::LibraryImpl& lib, std::vector<std::shared_ptr<void>>& keepalive) {
  if (p.kind == ParamKind::Buffer && !p.read_only)
    throw KernelArgumentError(arg_label(p) + " is a writable device buffer: pass a tensor, not a list of tensors");
  if (p.kind != ParamKind::Scalar && p.kind != ParamKind::Buffer)
    throw KernelArgumentError(arg_label(p) + " takes no tensors");
  if (ts.empty()) throw ValueError(arg_label(p) + ": an empty list of tensors");
  const std::size_t bytes = ts.size() * sizeof(std::uint64_t);
  if (p.size && bytes != p.size)
    throw ValueError(arg_label(p) + " ('" + p.type + "', " + std::to_string(p.size) + " bytes) holds " +
                     std::to_string(p.size / sizeof(std::uint64_t)) + " device pointers as an argument buffer; got " +
                     std::to_string(ts.size()) + " tensors");
  std::vector<std::uint8_t> out(bytes);
  for (std::size_t k = 0; k < ts.size(); ++k) {
    const Tensor& t = ts[k];
    std::string which = arg_label(p) + "[" + std::to_string(k) + "]";
    if (!t.defined()) throw TypeError(which + " is an undefined tensor");
    if (t.device() != lib.device)
      throw ValueError(which + " is on " + t.device().str() + ", the library on " + lib.device.str());
    if (!t.is_contiguous()) throw ValueError(which + " is not contiguous: buffers are flat memory; call .contiguous()");
    auto address = reinterpret_cast<std::uint64_t>(t.data_ptr());
    std::memcpy(out.data() + k * sizeof address, &address, sizeof address);
    if (auto keep = queued_use(t.storage())) keepalive.push_back(std::move(keep));
  }
  return out;
}

// A build of family f as a handle that shares the family's ownership.
std::shared_ptr<detail::LibraryImpl> in_family(const std::shared_ptr<detail::LibraryFamily>& f,
                                               const std::shared_ptr<detail::LibraryImpl>& build) {
  return std::shared_ptr<detail::LibraryImpl>(f, build.get());
}

// Makes `build` the first of a new family that builds `unit` (`kernel`
// alone, if named) for other devices.
std::shared_ptr<detail::LibraryImpl> found_family(std::shared_ptr<detail::LibraryImpl> build,
                                                  shader::TranslationUnit unit, bool validate,
                                                  const std::string& kernel = {}) {
  auto f = std::make_shared<detail::LibraryFamily>();
  f->unit = std::move(unit);
  f->kernel = kernel;
  f->validate = validate;
  build->family = f;
  f->builds.push_back(build);
  return in_family(f, build);
}

// The family's build for device d: built on first use.
std::shared_ptr<detail::LibraryImpl> build_for(const std::shared_ptr<detail::LibraryFamily>& f, const Device& d) {
  std::lock_guard<std::mutex> g(f->mu);
  for (const auto& b : f->builds)
    if (b->device == d) return in_family(f, b);
  CompileOptions o;
  o.validate = f->validate;
  check_language(d, o);
  auto lib = build_unit(d, f->unit, f->validate, f->kernel);
  lib->family = f;
  f->builds.push_back(lib);
  return in_family(f, lib);
}

// A compiled library while something holds it (its handles, its queued
// launches), with the files read from disk that went into it: an edited
// header makes the entry stale. A library dropped is unloaded; compiling its
// source again loads it from the disk cache.
struct HotEntry {
  std::weak_ptr<detail::LibraryImpl> lib;
  std::vector<shader::DiskFile> disk_files;
};
}  // namespace

Library compile_shader(const std::string& source, const CompileOptions& options) {
  Device d = runtime::resolve(options.device);
  check_language(d, options);
  static std::mutex mu;
  static std::unordered_map<std::string, HotEntry> hot;
  std::string key = options.language + '\0' + options.filename + '\0' + d.str() + '\0' +
                    (options.validate ? "validate" : "") + '\0' + options.torch_include_dir + '\0';
  for (const auto& dir : options.include_dirs) key += dir + '\0';
  for (const auto& [name, text] : options.headers) key += name + '\0' + text + '\0';
  for (const auto& [name, value] : options.defines) key += name + '\0' + value + '\0';
  key += '\1';
  for (const auto& [name, value] : options.constants) key += name + '\0' + value + '\0';
  key += options.math_mode + '\0';
  key += source;
  // Compiles of one key in flight: a second caller waits for the first's
  // result (or its error) rather than running the same compilers again.
  static std::unordered_map<std::string, std::shared_future<std::shared_ptr<detail::LibraryImpl>>> building;
  std::promise<std::shared_ptr<detail::LibraryImpl>> mine;
  for (;;) {
    std::unique_lock<std::mutex> g(mu);
    auto it = hot.find(key);
    if (it != hot.end() && std::all_of(it->second.disk_files.begin(), it->second.disk_files.end(),
                                       [](const shader::DiskFile& f) { return f.unchanged(); }))
      if (auto lib = it->second.lib.lock()) return Library(lib);
    auto b = building.find(key);
    if (b == building.end()) {
      building.emplace(key, mine.get_future().share());
      break;
    }
    auto pending = b->second;
    g.unlock();
    while (pending.wait_for(std::chrono::milliseconds(20)) != std::future_status::ready) jit::check_interrupt();
    try {
      return Library(pending.get());
    } catch (const jit::Interrupted&) {
      // The other caller's compile was stopped, not this one's: build it here.
    }
  }
  // Outside the lock: compiles of other sources run in parallel.
  std::shared_ptr<detail::LibraryImpl> lib;
  HotEntry e;
  const std::string name = source_name(options);
  jit::LogScope scope(name);  // names the preprocessor's run
  try {
    if (options.language == "cuda") {
      lib = build_cuda_source(d, source, name);
    } else {
      shader::TranslationUnit tu = shader::preprocess(source, source_options(options));
      e.disk_files = tu.disk_files;
      lib = build_unit(d, tu, options.validate);
      // Without a device: built here now (errors surface at compile time),
      // elsewhere on first use.
      if (!options.device) lib = found_family(std::move(lib), std::move(tu), options.validate);
    }
  } catch (...) {
    std::lock_guard<std::mutex> g(mu);
    mine.set_exception(std::current_exception());
    building.erase(key);
    throw;
  }
  e.lib = lib;
  std::lock_guard<std::mutex> g(mu);
  for (auto it = hot.begin(); it != hot.end();)  // the dropped libraries' entries go
    it = it->second.lib.expired() ? hot.erase(it) : std::next(it);
  hot[key] = std::move(e);
  mine.set_value(lib);
  building.erase(key);
  return Library(lib);
}

std::vector<std::string> find_kernels(const std::string& source, const CompileOptions& options) {
  shader::TranslationUnit tu = shader::preprocess(source, source_options(options));
  std::vector<std::string> names;
  for (const auto& k : shader::parse(tu.text, options.filename).kernels) names.push_back(k.info.name);
  return names;
}

std::vector<std::uint8_t> compile_library(const std::string& source, const CompileOptions& options) {
  if (options.language != "metal") throw ValueError("bronze libraries hold Metal source; got '" + options.language + "'");
  shader::TranslationUnit tu = shader::preprocess(source, source_options(options));
  shader::ParsedSource ps = shader::parse(tu.text, options.filename);
  shader::LibraryFile f;
  f.source = tu.text;  // preprocessed: loads without the includes
  f.filename = options.filename;
  auto add = [&f](const std::string& target, const std::vector<char>& bytes) {
    f.objects.emplace_back(target, std::vector<std::uint8_t>(bytes.begin(), bytes.end()));
  };
  const backends::ShaderBackend& cpu_backend = backends::shader_backend(DeviceType::CPU);
  BuildPlan plan;
  for (const runtime::ModuleObject& o : build_module(cpu_backend, tu, ps, plan))
    f.objects.emplace_back(shader::host_cpu_target(), read_binary(o.path));
  std::vector<int> archs = options.cuda_archs;
  if (options.device && options.device->type == DeviceType::CUDA)
    archs.push_back(runtime::device_impl(*options.device).gpu_arch());
  std::sort(archs.begin(), archs.end());
  archs.erase(std::unique(archs.begin(), archs.end()), archs.end());
  const backends::ShaderBackend& cuda_backend = backends::shader_backend(DeviceType::CUDA);  // NVRTC, no GPU needed
  // plan.carve: once one architecture needs it, every object carves (ptxas never sees the PTX).
  for (int arch : archs) {
    plan.arch = arch;
    for (const runtime::ModuleObject& o : build_module(cuda_backend, tu, ps, plan)) add(cubin_target(arch), o.image);
  }
  if (!archs.empty()) {  // PTX for the oldest: newer GPUs without a cubin here JIT it
    plan.arch = archs.front();
    plan.ptx = true;
    for (const runtime::ModuleObject& o : build_module(cuda_backend, tu, ps, plan)) add(ptx_target(archs.front()), o.image);
  }
  return shader::encode_library(f);
}

Library load_metallib(const std::vector<std::uint8_t>& bytes, std::optional<Device> device,
                      const std::string& signatures, bool rebuild) {
  Device d = runtime::resolve(device);
  if (air::is_metallib(bytes.data(), bytes.size())) {
    if (rebuild) throw ValueError("rebuild=True: an Apple .metallib carries no source to build from");
    return Library(detail::load_air_library(d, bytes));
  }
  if (cuda::is_gpu_image(bytes.data(), bytes.size())) {
    if (rebuild)
      throw ValueError("rebuild=True: a raw CUDA module (cubin, PTX or fatbin) carries no source to build from");
    if (d.type != DeviceType::CUDA)
      throw NotSupportedError("a CUDA module (cubin, PTX or fatbin) loads on a CUDA device, not on " + d.str());
    return Library(load_gpu_image(d, bytes, signatures));
  }
  shader::LibraryFile f = shader::decode_library(bytes.data(), bytes.size());
  shader::TranslationUnit tu;
  tu.text = f.source;
  shader::ParsedSource ps = shader::parse(tu.text, f.filename);
  if (rebuild) return Library(build_unit(d, tu, false));
  if (d.type == DeviceType::CUDA) return Library(load_bronzelib_cuda(d, f, tu, ps));
  std::vector<runtime::ModuleObject> objects;  // checked before they are cached or loaded
  for (const auto& [target, object] : f.objects)
    if (target == shader::host_cpu_target()) objects.push_back(image_object(object));
  // No object for this host: build one from the library's unit.
  if (objects.empty()) {
    jit::log(jit::LogLevel::Info, [&] {
      return f.filename + ": the .bronzelib has no object for " + shader::host_cpu_target() + ": built from its source";
    });
    return Library(build_unit(d, tu, false));
  }
  try {
    return Library(load_unit(d, tu.text, jit::sha256_hex(tu.text), ps, objects));
  } catch (const ValueError&) {
    throw;
  } catch (const Error& e) {  // not loadable, or without bronze's entries: not what bronze compiled
    throw ValueError(std::string("the .bronzelib's compiled object for this CPU is corrupt or not bronze's (") +
                     e.what() + "); load it with rebuild=True to build its source instead");
  }
}

Library load_metallib_file(const std::string& path, std::optional<Device> device, const std::string& signatures,
                           bool rebuild) {
  return load_metallib(read_binary(path), device, signatures, rebuild);
}

std::vector<std::string> Library::kernel_names() const {
  std::vector<std::string> out;
  for (const auto& k : impl_->kernels) out.push_back(k.name);
  return out;
}

bool Library::has_kernel(const std::string& name) const {
  for (const auto& k : impl_->kernels)
    if (k.name == name) return true;
  return false;
}

Kernel Library::kernel(const std::string& name) const {
  for (std::size_t i = 0; i < impl_->kernels.size(); ++i)
    if (impl_->kernels[i].name == name) return Kernel(impl_, static_cast<int>(i));
  if (!impl_->no_kernels_why.empty())
    throw KernelNotFoundError("the library has no kernel '" + name + "': " + impl_->no_kernels_why);
  throw KernelNotFoundError("the library has no kernel '" + name + "'; " + known_kernels(*impl_, name));
}

Kernel Library::specialize(const std::string& name,
                           const std::vector<std::pair<std::string, std::string>>& constants) const {
  if (!impl_->launch_record || (impl_->source.empty() && !impl_->air))
    throw NotSupportedError("function constants specialize Metal kernels; this library was built from CUDA C++ or "
                            "loaded from a GPU module");
  kernel(name);  // an unknown name fails here, before any build
  std::string key = name + '\0';
  for (const auto& [k, v] : constants) key += k + '\0' + v + '\0';
  std::lock_guard<std::mutex> g(impl_->specializations_mu);  // one build per set, however many callers
  for (const auto& [k, lib] : impl_->specializations)
    if (k == key) return Library(lib).kernel(name);
  if (impl_->air) {  // an Apple .metallib's kernel: built from its AIR with the values
    std::size_t index = 0;
    while (impl_->kernels[index].name != name) ++index;
    auto lib = detail::specialize_air(*impl_, index, constants);
    Kernel k = Library(lib).kernel(name);
    impl_->specializations.emplace_back(std::move(key), std::move(lib));
    return k;
  }
  shader::TranslationUnit tu;
  tu.text = impl_->source + shader::constant_pragmas(constants);
  auto lib = build_unit(impl_->device, tu, impl_->validate, name);
  if (!impl_->family.expired())  // follows its tensors, as this library does
    lib = found_family(std::move(lib), std::move(tu), impl_->validate, name);
  Kernel k = Library(lib).kernel(name);
  impl_->specializations.emplace_back(std::move(key), std::move(lib));
  return k;
}

const std::string& Library::hash() const { return impl_->hash; }
Device Library::device() const { return impl_->device; }

void Library::warmup() const { build_all(*impl_); }

void Kernel::warmup() const { built(*lib_, static_cast<std::size_t>(index_)); }
bool Kernel::is_built() const {
  if (lib_->air) return detail::air_kernel_built(*lib_, static_cast<std::size_t>(index_));
  return !lib_->lazy || lib_->lazy->ready[static_cast<std::size_t>(index_)].load(std::memory_order_acquire);
}
const std::string& Kernel::name() const { return lib_->kernels[index_].name; }  // never changes
const KernelInfo& Kernel::info() const {
  warmup();
  return lib_->kernels[index_];
}
int Kernel::max_threads_per_threadgroup() const {
  warmup();
  return lib_->max_threads[index_];
}
int Kernel::thread_execution_width() const { return kSimdWidth; }
std::size_t Kernel::static_thread_group_memory_length() const {
  warmup();
  return lib_->static_tg_bytes[index_];
}

// A tensor whose dtype is not the buffer's declared type: its bytes are
// bound (torch.mps's contract), with one warning per kernel argument;
// validate=True refuses it.
void Kernel::mismatched_dtype(const KernelParam& p, std::size_t binding, DType t) const {
  const std::string what = arg_label(p) + " got a tensor of " + dtype_name(t);
  if (lib_->validate)
    throw TypeError(what + " (validate=True refuses it; without validate its bytes are bound, as torch.mps binds them)");
  {
    std::lock_guard<std::mutex> g(lib_->warned_mu);
    if (!lib_->warned.emplace(index_, static_cast<int>(binding)).second) return;
  }
  jit::warn("bronze: kernel '" + info().name + "': " + what + "; its bytes are bound as " + p.type +
            ", as torch.mps binds them");
}

int error_buffer_binding(const KernelInfo& ki, unsigned slot) {
  for (int b = 0; b < ki.bindings(); ++b) {
    const KernelParam& p = ki.binding(b);
    if (p.kind != ParamKind::Buffer || p.index != static_cast<int>(slot)) continue;
    if (p.read_only)
      throw ValueError("error_buf_idx=" + std::to_string(slot) + " names " + arg_label(p) +
                       ", a read-only buffer: the error buffer is a `device c10::metal::ErrorMessages*`");
    return b;
  }
  throw ValueError("error_buf_idx=" + std::to_string(slot) + ": kernel '" + ki.name +
                   "' has no device buffer parameter at [[buffer(" + std::to_string(slot) + ")]]");
}

namespace {
// torch.mps's error buffer: one per stream (c10::metal::ErrorMessages, zeroed),
// in host-visible memory so synchronize() reads it in place; made at the
// first call that names error_buf_idx and kept for the process (streams'
// ids are never reused).
const Tensor& stream_error_buffer(runtime::StreamImpl& s, const Device& d) {
  static std::mutex mu;
  static auto* buffers = new std::unordered_map<std::uint64_t, Tensor>;  // never destroyed
  std::lock_guard<std::mutex> g(mu);
  auto it = buffers->find(s.id());
  if (it != buffers->end()) return it->second;
  Tensor t = empty({static_cast<std::int64_t>(runtime::StreamImpl::kErrorRecordBytes)}, DType::UInt8, d,
                   d.type != DeviceType::CPU);
  std::memset(t.data_ptr(), 0, t.nbytes());
  s.set_error_record(t.data_ptr());
  return buffers->emplace(s.id(), std::move(t)).first->second;
}
}  // namespace

void Kernel::dispatch(const std::vector<KernelArg>& args, const DispatchOptions& opts) const {
  const KernelInfo& ki = info();
  if (opts.error_buf_idx) {  // the stream's error buffer joins the arguments at its binding
    const int e = error_buffer_binding(ki, *opts.error_buf_idx);
    if (args.size() + 1 != static_cast<std::size_t>(ki.bindings()))
      throw TypeError("kernel '" + ki.name + "' takes " + std::to_string(ki.bindings() - 1) +
                      " arguments besides the error buffer, got " + std::to_string(args.size()));
    Device d = lib_->device;
    for (const KernelArg& a : args)
      if (const Tensor* t = a.tensor(); t && t->defined()) {
        d = t->device();
        break;
      }
    auto stream = opts.stream ? opts.stream->shared_impl() : runtime::current_stream(d);
    std::vector<KernelArg> all(args);
    all.insert(all.begin() + e, KernelArg(stream_error_buffer(*stream, stream->device())));
    DispatchOptions o = opts;
    o.error_buf_idx.reset();
    dispatch(all, o);
    return;
  }
  ki.check_arity(args.size());
  if (auto family = lib_->family.lock()) {  // runs where its buffers' tensors are
    const Tensor* on = nullptr;
    auto see = [&](const Tensor& t) {
      if (!t.defined()) return;
      if (on && t.device() != on->device())
        throw ValueError("kernel '" + ki.name + "' got tensors on " + on->device().str() + " and " +
                         t.device().str() + "; one call runs on one device");
      on = &t;
    };
    for (std::size_t i = 0; i < args.size(); ++i) {
      const KernelArg& a = args[i];
      // A value's tensor (`constant T& v`) gives its bytes wherever it is.
      const Tensor* t = a.tensor();
      if (t && ki.binding(static_cast<int>(i)).kind != ParamKind::Scalar) see(*t);
      if (const std::vector<Tensor>* ts = a.tensors())
        for (const Tensor& u : *ts) see(u);
    }
    if (on && on->device() != lib_->device) {
      Kernel(build_for(family, on->device()), index_).dispatch(args, opts);
      return;
    }
  }
  const std::size_t nargs = args.size();
  runtime::KernelLaunch l;
  l.name = ki.name.c_str();
  l.entry = lib_->entries[index_];
  l.cooperative = ki.cooperative;
  l.launch_record = lib_->launch_record;
  l.validate = lib_->validate;
  l.args.resize(nargs);
  l.keepalive.reserve(nargs + 1);  // the buffers and the library: one allocation
  const Tensor* first_tensor = nullptr;
  std::vector<shader::BufferUse> uses;  // for a restricted library's alias check
  if (lib_->restricted) uses.reserve(nargs);
  auto use = [&](const Tensor& t, bool written) {
    if (!lib_->restricted) return;
    auto begin = reinterpret_cast<std::uintptr_t>(t.data_ptr());
    uses.push_back({begin, begin + t.nbytes(), written});
  };
  for (std::size_t i = 0; i < nargs; ++i) {
    const KernelParam& p = ki.binding(static_cast<int>(i));
    const KernelArg& a = args[i];
    if (const Tensor* t = a.tensor()) {
      if (p.kind != ParamKind::Buffer && p.kind != ParamKind::Scalar)
        throw KernelArgumentError(arg_label(p) + " takes no tensor");
      if (!t->defined()) throw TypeError(arg_label(p) + " is an undefined tensor");
      if (!t->is_contiguous())
        throw ValueError(arg_label(p) + " is not contiguous: buffers are flat memory; call .contiguous()");
      // `constant T& v` is a buffer binding in Metal: a tensor's bytes are
      // the value, as torch.mps binds them.
      if (p.kind == ParamKind::Scalar && p.size && t->nbytes() < p.size)
        throw ValueError(arg_label(p) + " takes " + std::to_string(p.size) + " bytes; the tensor has " +
                         std::to_string(t->nbytes()));
      if (!shader::buffer_dtype_matches(p, t->dtype())) mismatched_dtype(p, i, t->dtype());
      // Its bytes now where the value is a kernel parameter (the GPU's) or
      // the tensor is on another device (a NumPy value for a CUDA kernel).
      if (p.kind == ParamKind::Scalar &&
          ((p.by_value && lib_->device.type != DeviceType::CPU) || t->device() != lib_->device)) {
        std::vector<std::uint8_t> bytes(t->nbytes());
        t->copy_to_host(bytes.data());
        bytes.resize(p.size ? p.size : bytes.size());
        l.args[i].inline_offset = l.add_inline(bytes.data(), bytes.size());
        l.args[i].bytes = bytes.size();
        l.args[i].by_value = p.by_value;
        continue;
      }
      if (t->device() != lib_->device)
        throw ValueError(arg_label(p) + " is on " + t->device().str() + ", the library on " + lib_->device.str());
      l.args[i].ptr = t->data_ptr();
      l.args[i].bytes = t->nbytes();
      l.args[i].name = p.name.c_str();
      if (auto keep = queued_use(t->storage())) l.keepalive.push_back(std::move(keep));
      if (!first_tensor) first_tensor = t;
      use(*t, !p.read_only);
      continue;
    }
    std::vector<std::uint8_t> bytes;
    if (const std::vector<Tensor>* ts = a.tensors()) {
      bytes = argument_buffer(p, *ts, *lib_, l.keepalive);
      l.args[i].by_value = p.by_value;
      for (const Tensor& t : *ts) use(t, true);  // its pointers' constness is the kernel's business
    } else if (const Scalar* s = a.scalar()) {
      if (p.kind == ParamKind::Buffer)
        throw KernelArgumentError(arg_label(p) + " is a device buffer: pass a tensor or array, not a number");
      bytes = shader::pack_scalar(p, *s);
      l.args[i].by_value = p.by_value;
    } else {
      bytes = *a.bytes();
      if (p.kind == ParamKind::Buffer && !p.read_only)
        throw KernelArgumentError(arg_label(p) + " is a writable device buffer: pass a tensor, not bytes");
      if (p.by_value && p.size && bytes.size() != p.size)
        throw ValueError(arg_label(p) + " is one value of " + std::to_string(p.size) + " bytes, got " +
                         std::to_string(bytes.size()));
      if (p.size && (bytes.empty() || bytes.size() % p.size != 0))
        throw ValueError(arg_label(p) + " takes bytes in multiples of " + std::to_string(p.size) + ", got " +
                         std::to_string(bytes.size()));
      l.args[i].by_value = p.by_value;
    }
    l.args[i].inline_offset = l.add_inline(bytes.data(), bytes.size());
    l.args[i].bytes = bytes.size();
  }

  std::uint32_t max_threads = static_cast<std::uint32_t>(lib_->max_threads[index_]);
  if (lib_->restricted && shader::read_only_overlaps_written(uses)) {
    const detail::LibraryImpl::Aliased& a = aliased_entry(*lib_, index_);
    l.entry = a.entry;
    max_threads = std::min(max_threads, static_cast<std::uint32_t>(a.max_threads));
  }
  Dim3 grid;
  if (opts.threads) grid = *opts.threads;
  else if (first_tensor) grid.x = static_cast<std::uint32_t>(first_tensor->numel());
  else throw ValueError("kernel '" + ki.name + "' has no tensor argument to size the grid: pass threads=");
  if (grid.count() == 0) return;  // an empty grid runs nothing, as on Metal
  Dim3 group;
  if (opts.group_size) {
    group = *opts.group_size;
    if (group.count() == 0) throw ValueError("group_size must be positive");
    if (group.count() > max_threads)
      throw ValueError("group_size " + std::to_string(group.count()) + " is over the kernel's limit of " +
                       std::to_string(max_threads) + " threads per threadgroup");
  } else {
    group.x = std::min<std::uint32_t>(grid.x, max_threads);
    group.y = std::min<std::uint32_t>(grid.y, max_threads / group.x);
    group.z = std::min<std::uint32_t>(grid.z, max_threads / (group.x * group.y));
  }
  std::size_t tg_total = lib_->static_tg_bytes[index_];
  l.carved_shared_bytes = lib_->carved_tg_bytes[index_];
  for (const auto& p : ki.params)
    if (p.kind == ParamKind::ThreadgroupBuffer) {
      // 0 is a size: llama.cpp sets it for kernels that declare the buffer
      // and leave it unused (its q4_0 matrix-vector product).
      if (static_cast<std::size_t>(p.index) >= opts.threadgroup_memory.size())
        throw ValueError("kernel '" + ki.name + "' needs threadgroup_memory[" + std::to_string(p.index) +
                         "] (bytes of '" + p.name + "'; 0 if the kernel leaves it unused)");
      l.threadgroup_bytes[p.index] = opts.threadgroup_memory[p.index];
      tg_total += opts.threadgroup_memory[p.index];
    }
  if (tg_total > 64 * 1024)
    throw ValueError("kernel '" + ki.name + "' uses " + std::to_string(tg_total) +
                     " bytes of threadgroup memory; the limit is 65536");
  l.grid[0] = grid.x, l.grid[1] = grid.y, l.grid[2] = grid.z;
  l.group[0] = group.x, l.group[1] = group.y, l.group[2] = group.z;
  l.keepalive.push_back(lib_);

  auto stream = opts.stream ? opts.stream->shared_impl() : runtime::current_stream(lib_->device);
  if (stream->device() != lib_->device) throw ValueError("the stream is on another device than the library");
  if (runtime::capture::active()) capture_dispatch(*lib_, ki, l, args, stream->id());
  const detail::LibraryImpl::EntryOrder& order = lib_->entry_order[index_];
  if (!order.identity) {  // the call's slot order to the entry's
    std::vector<runtime::KernelLaunch::Arg> entry(order.count);
    for (std::size_t b = 0; b < l.args.size(); ++b) entry[order.position[b]] = l.args[b];
    for (const auto& [position, bytes] : order.absent) {
      if (!bytes) continue;  // a pointer: null
      entry[position].inline_offset = l.add_inline(nullptr, bytes);
      entry[position].bytes = bytes;
      entry[position].by_value = true;
    }
    l.args = std::move(entry);
  }
  jit::log(jit::LogLevel::Debug, [&] {
    return "launch " + ki.name + " grid " + std::to_string(l.grid[0]) + "x" + std::to_string(l.grid[1]) + "x" +
           std::to_string(l.grid[2]) + " group " + std::to_string(l.group[0]) + "x" + std::to_string(l.group[1]) +
           "x" + std::to_string(l.group[2]) + " on " + lib_->device.str() + " stream " + std::to_string(stream->id());
  });
  runtime::device_impl(lib_->device).launch(*stream, std::move(l));
}

void set_kernel_time_limit(double seconds) {
  if (!(seconds >= 0) || seconds > 1e9)
    throw ValueError("the kernel time limit is a number of seconds >= 0 (0 for none), got " + std::to_string(seconds));
  runtime::set_kernel_time_limit(seconds);
}

double kernel_time_limit() { return runtime::kernel_time_limit(); }

}  // namespace bronze
