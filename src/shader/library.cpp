// compile_shader, libraries and kernel dispatch: argument checks and binding
// by the parsed signature, then a launch queued on the device's stream.
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <mutex>
#include <unordered_map>

#include "bronze/error.hpp"
#include "bronze/shader.hpp"
#include "jit/disk_cache.hpp"
#include "jit/host_compiler.hpp"
#include "jit/sha256.hpp"
#include "runtime/capture.hpp"
#include "runtime/device_impl.hpp"
#include "runtime/json_util.hpp"
#include "shader/bronzelib.hpp"
#include "shader/metal_headers.hpp"
#include "shader/parser.hpp"
#include "shader/rewrite_cpu.hpp"
#include "shader/types.hpp"
#include "tensor/storage.hpp"

namespace bronze {

namespace detail {
struct LibraryImpl {
  Device device;
  std::string hash;
  std::string source;
  std::vector<KernelInfo> kernels;
  std::vector<std::size_t> static_tg_bytes;
  std::vector<const void*> entries;
  bool captured = false;  // source written to the running capture
};
}  // namespace detail

namespace {
constexpr int kMaxThreadsPerGroup = 1024;
constexpr int kSimdWidth = 32;

std::string source_excerpt(const std::string& src, int line, int col) {
  std::size_t start = 0;
  for (int l = 1; l < line && start != std::string::npos; ++l) {
    start = src.find('\n', start);
    if (start != std::string::npos) ++start;
  }
  if (start == std::string::npos) return "";
  std::string text = src.substr(start, src.find('\n', start) - start);
  std::string num = std::to_string(line);
  return " " + num + " | " + text + "\n " + std::string(num.size(), ' ') + " | " +
         std::string(std::max(col - 1, 0), ' ') + "^\n";
}

// The compiler's first error in the user's file, with the source line; the
// rest of its errors follow.
[[noreturn]] void raise_compile_error(const std::string& diag, const std::string& src, const std::string& file) {
  std::string first, rest;
  int line = 0, col = 0;
  std::size_t pos = 0;
  int others = 0;
  while (pos < diag.size()) {
    std::size_t end = diag.find('\n', pos);
    std::string l = diag.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    pos = end == std::string::npos ? diag.size() : end + 1;
    if (l.rfind(file + ":", 0) != 0 || l.find(": error: ") == std::string::npos) continue;
    if (first.empty()) {
      first = l;
      std::sscanf(l.c_str() + file.size() + 1, "%d:%d", &line, &col);
    } else if (others++ < 5) {
      rest += l + "\n";
    }
  }
  if (first.empty()) {
    // Nothing in the user's file: an error bronze's generated entry exposed.
    throw ShaderCompileError(file + ": error: the kernel signature could not be compiled:\n" + diag);
  }
  throw ShaderCompileError(first + "\n" + source_excerpt(src, line, col) + rest, line, col);
}

// Compiles Metal source for the host CPU; returns the shared object's path.
std::string compile_cpu_object(const std::string& src, const shader::ParsedSource& ps, const std::string& filename,
                               bool validate = false) {
  std::string cpp = shader::rewrite_for_cpu(src, ps, filename, validate);
  auto r = jit::build_shared_object(
      cpp, {{"bronze_metal.h", shader::embedded::bronze_metal_h}, {"bronze_metal_dispatch.h", shader::embedded::bronze_metal_dispatch_h}},
      {"-std=c++17", "-O3", "-fPIC", "-shared", "-fvisibility=hidden", "-w", "-fno-exceptions", "-fno-math-errno",
       "-fdiagnostics-color=never", "-include", "bronze_metal.h"});
  if (r.so_path.empty()) raise_compile_error(r.diagnostics, src, filename);
  return r.so_path;
}

std::shared_ptr<detail::LibraryImpl> load_cpu_object(const std::string& src, const shader::ParsedSource& ps,
                                                     const std::string& so_path) {
  void* h = ::dlopen(so_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) throw Error(std::string("cannot load the compiled shader: ") + ::dlerror());
  // Libraries stay loaded for the process: queued launches and thread-local
  // scratch inside them must outlive every Library handle.
  auto lib = std::make_shared<detail::LibraryImpl>();
  lib->source = src;
  lib->hash = jit::sha256_hex(src).substr(0, 16);
  for (std::size_t k = 0; k < ps.kernels.size(); ++k) {
    std::string n = std::to_string(k);
    const void* entry = ::dlsym(h, ("bronze_entry_" + n).c_str());
    auto* sizes = static_cast<const unsigned long long*>(::dlsym(h, ("bronze_sizes_" + n).c_str()));
    auto* tg = static_cast<const unsigned long long*>(::dlsym(h, ("bronze_tgmem_" + n).c_str()));
    if (!entry || !sizes || !tg) throw Error("compiled shader lacks the entry of kernel " + ps.kernels[k].info.name);
    KernelInfo info = ps.kernels[k].info;
    for (auto& p : info.params)
      if (p.binding >= 0) p.size = static_cast<std::size_t>(sizes[p.binding]);
    lib->kernels.push_back(std::move(info));
    lib->entries.push_back(entry);
    lib->static_tg_bytes.push_back(static_cast<std::size_t>(*tg));
  }
  return lib;
}

std::string join_names(const detail::LibraryImpl& lib) {
  std::string s;
  for (const auto& k : lib.kernels) s += (s.empty() ? "" : ", ") + k.name;
  return s.empty() ? "(none)" : s;
}

// A kernel command in the capture file: the library (its source once),
// grid, group and every argument's buffer identity and size or scalar bytes.
void capture_dispatch(detail::LibraryImpl& lib, const KernelInfo& ki, const runtime::KernelLaunch& l,
                      const std::vector<KernelArg>& args, const std::vector<std::size_t>& inline_sizes,
                      std::uint64_t stream) {
  if (!lib.captured) {
    runtime::capture::record("\"library\":" + runtime::json_quote(lib.hash) + ",\"source\":" + runtime::json_quote(lib.source));
    lib.captured = true;
  }
  std::string a;
  static const char* hexd = "0123456789abcdef";
  for (std::size_t i = 0; i < args.size(); ++i) {
    a += i ? "," : "";
    if (const Tensor* t = args[i].tensor()) {
      a += "{\"buffer\":" + std::to_string(reinterpret_cast<std::uintptr_t>(t->storage().get())) +
           ",\"bytes\":" + std::to_string(t->nbytes()) + ",\"dtype\":\"" + dtype_name(t->dtype()) + "\"}";
    } else {
      std::string hex;
      const std::uint8_t* b = l.inline_bytes.data() + l.args[i].inline_offset;
      std::size_t n = inline_sizes[i];
      for (std::size_t k = 0; k < n; ++k) {
        hex += hexd[b[k] >> 4];
        hex += hexd[b[k] & 15];
      }
      a += "{\"bytes_hex\":\"" + hex + "\"}";
    }
  }
  runtime::capture::record("\"kernel\":" + runtime::json_quote(ki.name) + ",\"library\":" + runtime::json_quote(lib.hash) +
                           ",\"stream\":" + std::to_string(stream) + ",\"grid\":[" + std::to_string(l.grid[0]) + "," +
                           std::to_string(l.grid[1]) + "," + std::to_string(l.grid[2]) + "],\"group\":[" +
                           std::to_string(l.group[0]) + "," + std::to_string(l.group[1]) + "," +
                           std::to_string(l.group[2]) + "],\"args\":[" + a + "]");
}

std::string arg_label(const KernelParam& p) {
  return "argument " + std::to_string(p.binding) + " ('" + p.name + "', " + p.type + ")";
}
}  // namespace

namespace {
void check_cpu_metal(const Device& d, const std::string& language) {
  if (d.type != DeviceType::CPU || language != "metal")
    throw NotSupportedError("shaders for " + d.str() + " in language '" + language +
                            "' need the CUDA backend, which this build does not have yet");
}

std::vector<std::uint8_t> read_binary(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw ValueError("cannot open '" + path + "'");
  return std::vector<std::uint8_t>(std::istreambuf_iterator<char>(f), {});
}
}  // namespace

Library compile_shader(const std::string& source, const CompileOptions& options) {
  Device d = runtime::resolve(options.device);
  if (options.language != "metal" && options.language != "cuda")
    throw ValueError("unknown shader language '" + options.language + "': expected 'metal' or 'cuda'");
  check_cpu_metal(d, options.language);
  static std::mutex mu;
  static std::unordered_map<std::string, std::shared_ptr<detail::LibraryImpl>> hot;
  std::string key = options.language + '\0' + options.filename + '\0' + d.str() + '\0' +
                    (options.validate ? "validate" : "") + '\0' + source;
  {
    std::lock_guard<std::mutex> g(mu);
    auto it = hot.find(key);
    if (it != hot.end()) return Library(it->second);
  }
  shader::ParsedSource ps = shader::parse(source, options.filename);
  // Outside the lock: compiles can run in parallel.
  auto lib = load_cpu_object(source, ps, compile_cpu_object(source, ps, options.filename, options.validate));
  lib->device = d;
  std::lock_guard<std::mutex> g(mu);
  auto [it, inserted] = hot.emplace(key, lib);
  return Library(it->second);
}

std::vector<std::uint8_t> compile_library(const std::string& source, const CompileOptions& options) {
  check_cpu_metal(runtime::resolve(options.device), options.language);
  shader::ParsedSource ps = shader::parse(source, options.filename);
  shader::LibraryFile f;
  f.source = source;
  f.filename = options.filename;
  f.objects.emplace_back(shader::host_cpu_target(), read_binary(compile_cpu_object(source, ps, options.filename)));
  return shader::encode_library(f);
}

Library load_metallib(const std::vector<std::uint8_t>& bytes, std::optional<Device> device) {
  Device d = runtime::resolve(device);
  check_cpu_metal(d, "metal");
  shader::LibraryFile f = shader::decode_library(bytes.data(), bytes.size());
  shader::ParsedSource ps = shader::parse(f.source, f.filename);
  std::string so_path;
  for (const auto& [target, object] : f.objects) {
    if (target != shader::host_cpu_target()) continue;
    // Content-addressed like compiled objects, so loading twice reuses one file.
    std::string key = jit::Sha256().update(object.data(), object.size()).hex();
    auto& cache = jit::DiskCache::instance();
    if (auto hit = cache.lookup(key, ".so")) {
      so_path = *hit;
    } else {
      std::string dir = cache.make_work_dir();
      std::string tmp = dir + "/object.so";
      std::ofstream(tmp, std::ios::binary).write(reinterpret_cast<const char*>(object.data()),
                                                 static_cast<std::streamsize>(object.size()));
      so_path = cache.store(key, ".so", tmp);
      if (so_path != tmp) ::rmdir(dir.c_str());
    }
  }
  // No object for this host: build one from the library's source.
  if (so_path.empty()) so_path = compile_cpu_object(f.source, ps, f.filename);
  auto lib = load_cpu_object(f.source, ps, so_path);
  lib->device = d;
  return Library(lib);
}

Library load_metallib_file(const std::string& path, std::optional<Device> device) {
  return load_metallib(read_binary(path), device);
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
  throw KernelNotFoundError("the library has no kernel '" + name + "'; its kernels: " + join_names(*impl_));
}

const std::string& Library::hash() const { return impl_->hash; }
Device Library::device() const { return impl_->device; }

const KernelInfo& Kernel::info() const { return lib_->kernels[index_]; }
int Kernel::max_threads_per_threadgroup() const { return kMaxThreadsPerGroup; }
int Kernel::thread_execution_width() const { return kSimdWidth; }
std::size_t Kernel::static_thread_group_memory_length() const { return lib_->static_tg_bytes[index_]; }

void Kernel::dispatch(const std::vector<KernelArg>& args, const DispatchOptions& opts) const {
  const KernelInfo& ki = info();
  ki.check_arity(args.size());
  const std::size_t nargs = args.size();
  runtime::KernelLaunch l;
  l.name = ki.name.c_str();
  l.entry = lib_->entries[index_];
  l.cooperative = ki.cooperative;
  l.args.resize(nargs);
  const Tensor* first_tensor = nullptr;
  std::vector<std::size_t> inline_sizes(nargs, 0);
  for (std::size_t i = 0; i < nargs; ++i) {
    const KernelParam& p = ki.binding(static_cast<int>(i));
    const KernelArg& a = args[i];
    if (const Tensor* t = a.tensor()) {
      if (p.kind != ParamKind::Buffer)
        throw TypeError(arg_label(p) + " is a constant value: pass a number or bytes, not a tensor");
      if (!t->defined()) throw TypeError(arg_label(p) + " is an undefined tensor");
      if (t->device() != lib_->device)
        throw ValueError(arg_label(p) + " is on " + t->device().str() + ", the library on " + lib_->device.str());
      if (!t->is_contiguous())
        throw ValueError(arg_label(p) + " is not contiguous: buffers are flat memory; call .contiguous()");
      shader::check_buffer_dtype(p, t->dtype(), arg_label(p));
      l.args[i].ptr = t->data_ptr();
      l.args[i].bytes = t->nbytes();
      if (auto keep = queued_use(t->storage())) l.keepalive.push_back(std::move(keep));
      if (!first_tensor) first_tensor = t;
      continue;
    }
    std::vector<std::uint8_t> bytes;
    if (const Scalar* s = a.scalar()) {
      if (p.kind == ParamKind::Buffer)
        throw TypeError(arg_label(p) + " is a device buffer: pass a tensor or array, not a number");
      bytes = shader::pack_scalar(p, *s, arg_label(p));
    } else {
      bytes = *a.bytes();
      if (p.kind == ParamKind::Buffer && !p.read_only)
        throw TypeError(arg_label(p) + " is a writable device buffer: pass a tensor, not bytes");
      if (p.size && (bytes.empty() || bytes.size() % p.size != 0))
        throw ValueError(arg_label(p) + " takes bytes in multiples of " + std::to_string(p.size) + ", got " +
                         std::to_string(bytes.size()));
    }
    // 16-byte alignment for every inline value (vectors, structs).
    std::size_t off = (l.inline_bytes.size() + 15) & ~std::size_t(15);
    l.inline_bytes.resize(off + bytes.size());
    std::memcpy(l.inline_bytes.data() + off, bytes.data(), bytes.size());
    l.args[i].inline_offset = off;
    l.args[i].bytes = bytes.size();
    inline_sizes[i] = bytes.size();
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
    if (group.count() > static_cast<std::uint64_t>(kMaxThreadsPerGroup))
      throw ValueError("group_size " + std::to_string(group.count()) + " is over the kernel's limit of " +
                       std::to_string(kMaxThreadsPerGroup) + " threads per threadgroup");
  } else {
    group.x = std::min<std::uint32_t>(grid.x, kMaxThreadsPerGroup);
    group.y = std::min<std::uint32_t>(grid.y, kMaxThreadsPerGroup / group.x);
    group.z = std::min<std::uint32_t>(grid.z, kMaxThreadsPerGroup / (group.x * group.y));
  }
  for (std::size_t i = 0; i < nargs; ++i) {
    const KernelParam& p = ki.binding(static_cast<int>(i));
    const Tensor* t = args[i].tensor();
    if (t && p.indexed_by_grid && p.size && t->nbytes() / p.size < grid.count())
      throw ValueError(arg_label(p) + " holds " + std::to_string(t->nbytes() / p.size) +
                       " elements, but the kernel indexes it by thread_position_in_grid over " +
                       std::to_string(grid.count()) + " threads");
  }
  std::size_t tg_total = lib_->static_tg_bytes[index_];
  for (const auto& p : ki.params)
    if (p.kind == ParamKind::ThreadgroupBuffer) {
      if (static_cast<std::size_t>(p.index) >= opts.threadgroup_memory.size() || opts.threadgroup_memory[p.index] == 0)
        throw ValueError("kernel '" + ki.name + "' needs threadgroup_memory[" + std::to_string(p.index) +
                         "] (bytes of '" + p.name + "')");
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
  if (runtime::capture::active()) capture_dispatch(*lib_, ki, l, args, inline_sizes, stream->id());
  runtime::device_impl(lib_->device).launch(*stream, std::move(l));
}

}  // namespace bronze
