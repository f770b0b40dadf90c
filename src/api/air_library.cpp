// Apple .metallib libraries: load_metallib of Apple's binary. The library
// holds the file and its kernels' names (the container alone: MLX's has
// 17,248 functions); a kernel is reflected from its AIR, lowered by the
// device's backend (backends::ShaderBackend::lower_air), built and loaded
// on first use, once, as a checked unit's kernels are (api/shader.cpp).
// The compile cache keeps each build under its bitcode's hash: a process
// that finds it there loads it without LLVM.
#include <atomic>
#include <chrono>
#include <mutex>

#include "air/air_module.hpp"
#include "air/metallib.hpp"
#include "api/library_impl.hpp"
#include "api/unit_record.hpp"
#include "backends/air_process.hpp"
#include "backends/shader_backend.hpp"
#include "bronze/error.hpp"
#include "jit/llvm_api.hpp"
#include "jit/log.hpp"
#include "jit/sha256.hpp"
#include "runtime/device_impl.hpp"

namespace bronze::detail {

namespace {
struct AirFile {  // shared by a library and its specializations
  std::vector<std::uint8_t> bytes;
  air::Metallib metallib;  // views into bytes
  std::string hash;
};
}  // namespace

struct AirSource {
  std::shared_ptr<const AirFile> file;
  std::vector<std::size_t> function;  // per kernel: its index in file->metallib.functions
  std::vector<std::pair<std::string, std::string>> constants;  // a specialization's values
  std::unique_ptr<std::once_flag[]> built;
  std::unique_ptr<std::atomic<bool>[]> ready;
  const air::Function& of(std::size_t k) const { return file->metallib.functions[function[k]]; }
};

namespace {
// A library of the file's kernels `functions` (indices into its functions).
std::shared_ptr<LibraryImpl> air_library(const Device& d, std::shared_ptr<const AirFile> file,
                                         std::vector<std::size_t> functions,
                                         std::vector<std::pair<std::string, std::string>> constants) {
  auto src = std::make_shared<AirSource>();
  src->file = std::move(file);
  src->function = std::move(functions);
  src->constants = std::move(constants);
  auto lib = std::make_shared<LibraryImpl>();
  lib->device = d;
  lib->hash = src->file->hash;
  for (std::size_t k = 0; k < src->function.size(); ++k) {
    KernelInfo info;
    info.name = src->of(k).name;
    lib->kernels.push_back(std::move(info));
  }
  const std::size_t n = lib->kernels.size();
  if (n == 0) lib->no_kernels_why = "the .metallib has no kernel functions";
  lib->entries.assign(n, nullptr);
  lib->entry_order.resize(n);
  lib->static_tg_bytes.assign(n, 0);
  lib->carved_tg_bytes.assign(n, 0);
  lib->max_threads.assign(n, 0);
  lib->aliased.resize(n);
  src->built = std::make_unique<std::once_flag[]>(n);
  src->ready = std::make_unique<std::atomic<bool>[]>(n);
  lib->air = std::move(src);
  return lib;
}
}  // namespace

std::shared_ptr<LibraryImpl> load_air_library(const Device& d, std::vector<std::uint8_t> bytes) {
  auto file = std::make_shared<AirFile>();
  file->bytes = std::move(bytes);
  file->metallib = air::read_metallib(file->bytes.data(), file->bytes.size());
  jit::llvm::require("running an Apple .metallib");  // said at load, not at the first call
  file->hash = jit::Sha256().update(file->bytes.data(), file->bytes.size()).hex().substr(0, 16);
  std::vector<std::size_t> kernels;
  for (std::size_t i = 0; i < file->metallib.functions.size(); ++i)
    if (file->metallib.functions[i].type == air::FunctionType::Kernel) kernels.push_back(i);
  return air_library(d, std::move(file), std::move(kernels), {});
}

std::shared_ptr<LibraryImpl> specialize_air(const LibraryImpl& lib, std::size_t k,
                                            std::vector<std::pair<std::string, std::string>> constants) {
  return air_library(lib.device, lib.air->file, {lib.air->function[k]}, std::move(constants));
}

namespace {
// Arguments a function constant guards are bound only while it is true (as
// Metal's encoder expects no buffer for them): the others leave the call's
// bindings, and their entry gets a null pointer (EntryOrder::absent).
void drop_guarded(air::AirFunction& r, const std::vector<std::pair<std::string, std::string>>& constants) {
  auto is_true = [&](const std::string& name) {
    for (const auto& [n, v] : constants)
      if (n == name) return v == "true" || v == "1";
    return false;
  };
  KernelInfo& k = r.kernel;
  std::vector<int> bound;
  for (int i : k.bound) {
    if (r.air_params[i].guard.empty() || is_true(r.air_params[i].guard)) {
      k.params[i].binding = static_cast<int>(bound.size());
      bound.push_back(i);
    } else {
      k.params[i].binding = -1;
    }
  }
  k.bound = std::move(bound);
}

// The given function constants keyed by name: an index
// ([[function_constant(n)]]) becomes its constant's name, as Metal's
// MTLFunctionConstantValues takes either. A key naming no constant of the
// kernel is refused (a misspelt name would otherwise leave its default).
std::vector<std::pair<std::string, std::string>> constants_by_name(
    const air::AirFunction& r, const std::vector<std::pair<std::string, std::string>>& given) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [key, value] : given) {
    const air::FunctionConstant* c = nullptr;
    for (const air::FunctionConstant& f : r.constants)
      if (f.name == key || std::to_string(f.index) == key) c = &f;
    if (!c) {
      std::string known;
      for (const air::FunctionConstant& f : r.constants)
        known += (known.empty() ? "" : ", ") + f.name + " (" + std::to_string(f.index) + ")";
      throw ValueError("kernel '" + r.kernel.name + "' has no function constant '" + key + "'" +
                       (known.empty() ? std::string(" (it has none)") : " (it has " + known + ")"));
    }
    out.emplace_back(c->name, value);
  }
  return out;
}

// The key of a kernel's record in the compile cache: its bitcode's
// SHA-256 (computed here: Apple's HASH tag is the same digest of the
// wrapped module, but a file's own claim is no key), the function
// constants as given, and what lowers and builds it.
std::string air_record_key(const air::Function& f, const std::vector<std::pair<std::string, std::string>>& constants,
                           const backends::ShaderBackend& backend, int gpu_arch) {
  jit::Sha256 h;
  h.update(f.bitcode, f.bitcode_size).update("\0", 1);
  for (const auto& [name, value] : constants) h.update(name).update("\0", 1).update(value).update("\0", 1);
  return unit_record_key("air:" + h.hex(), backend.air_target() + " arch " + std::to_string(gpu_arch), false,
                         backend.compiler_identity());
}

// A kernel lowered and built: its object and its reflection, the guarded
// arguments its constants leave out dropped. Another process's build (or
// this one's, earlier) is taken from the compile cache without LLVM.
std::pair<runtime::ModuleObject, KernelInfo> air_object(const air::Function& f,
                                                        const std::vector<std::pair<std::string, std::string>>& given,
                                                        DeviceType type, int gpu_arch) {
  const backends::ShaderBackend& backend = backends::shader_backend(type);
  const std::string key = air_record_key(f, given, backend, gpu_arch);
  if (std::optional<UnitRecord> record = read_unit_record(key); record && record->kernels.size() == 1)
    if (auto ref = read_kernel_object(key, 0))
      if (std::optional<runtime::ModuleObject> object = backend.cached(ref->first, ref->second))
        return {std::move(*object), std::move(record->kernels[0])};
  const auto start = std::chrono::steady_clock::now();
  jit::llvm::Context ctx(jit::llvm::require("running an Apple .metallib"));
  air::AirFunction r = air::reflect(ctx, f);
  const auto constants = constants_by_name(r, given);
  runtime::ModuleSource lowered = backends::lower_air_isolated(type, f, r, constants);
  lowered.gpu_arch = gpu_arch;
  jit::log(jit::LogLevel::Info,
           [&] { return "lower " + jit::LogScope::name() + " with LLVM: done in " + jit::elapsed(start); });
  runtime::ModuleObject object = backend.build(lowered);
  if (!object.ok)  // bronze's own code (the entry) did not compile: bronze's error, not the file's
    throw Error("kernel '" + f.name + "' from the .metallib: its entry did not build:\n" + object.diagnostics);
  drop_guarded(r, constants);
  if (!object.cache_key.empty()) {
    UnitRecord record;
    record.kernels.push_back(r.kernel);
    write_unit_record(key, record);
    write_kernel_object(key, 0, object.cache_key, object.cache_suffix);
  }
  return {std::move(object), std::move(r.kernel)};
}
}  // namespace

void build_air_kernel(LibraryImpl& lib, std::size_t k) {
  AirSource& src = *lib.air;
  if (src.ready[k].load(std::memory_order_acquire)) return;
  std::call_once(src.built[k], [&] {
    const air::Function& f = src.of(k);
    jit::LogScope scope("kernel '" + f.name + "' of an Apple .metallib");
    auto [object, reflected] = air_object(f, src.constants, lib.device.type,
                                          runtime::device_impl(lib.device).gpu_arch());
    std::vector<runtime::ModuleKernel> mk(1);
    mk[0].symbol = runtime::kAirEntrySymbol;
    mk[0].tgmem_symbol = runtime::kAirTgmemSymbol;
    mk[0].max_threads_symbol = runtime::kAirMaxThreadsSymbol;  // CUDA: the entry's launch bounds tell it
    std::shared_ptr<void> module = runtime::device_impl(lib.device).load_module(object, mk, {});
    {
      std::lock_guard<std::mutex> g(lib.modules_mu);
      lib.modules.push_back(std::move(module));
    }
    lib.entry_order[k] = entry_order(reflected);
    KernelInfo& info = lib.kernels[k];  // its name, read by any thread, stays as it is
    info.params = std::move(reflected.params);
    info.bound = std::move(reflected.bound);
    info.cooperative = reflected.cooperative;
    lib.entries[k] = mk[0].entry;
    lib.static_tg_bytes[k] = mk[0].static_shared_bytes;  // the entry's kAirTgmemSymbol: the AIR's threadgroup variables
    lib.max_threads[k] = mk[0].max_threads;
    src.ready[k].store(true, std::memory_order_release);
  });
}

bool air_kernel_built(const LibraryImpl& lib, std::size_t k) {
  return lib.air->ready[k].load(std::memory_order_acquire);
}

}  // namespace bronze::detail
