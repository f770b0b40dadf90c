#include "backends/cuda/nvrtc.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>

#include "backends/cuda/toolkit_paths.hpp"
#include "bronze/error.hpp"
#include "jit/disk_cache.hpp"
#include "jit/helper_process.hpp"
#include "jit/host_compiler.hpp"
#include "jit/interrupt.hpp"
#include "jit/log.hpp"
#include "jit/serial.hpp"
#include "jit/sha256.hpp"

namespace bronze::cuda {
namespace {
using nvrtcResult = int;
using nvrtcProgram = struct _nvrtcProgram*;

struct Nvrtc {
  nvrtcResult (*version)(int*, int*) = nullptr;
  const char* (*error_string)(nvrtcResult) = nullptr;
  nvrtcResult (*create)(nvrtcProgram*, const char*, const char*, int, const char* const*, const char* const*) = nullptr;
  nvrtcResult (*compile)(nvrtcProgram, int, const char* const*) = nullptr;
  nvrtcResult (*log_size)(nvrtcProgram, std::size_t*) = nullptr;
  nvrtcResult (*log)(nvrtcProgram, char*) = nullptr;
  nvrtcResult (*cubin_size)(nvrtcProgram, std::size_t*) = nullptr;
  nvrtcResult (*cubin)(nvrtcProgram, char*) = nullptr;
  nvrtcResult (*ptx_size)(nvrtcProgram, std::size_t*) = nullptr;
  nvrtcResult (*ptx)(nvrtcProgram, char*) = nullptr;
  nvrtcResult (*add_name)(nvrtcProgram, const char*) = nullptr;
  nvrtcResult (*lowered_name)(nvrtcProgram, const char*, const char**) = nullptr;
  nvrtcResult (*destroy)(nvrtcProgram*) = nullptr;
  std::string status;
  std::string path;      // the library loaded (bronze-nvrtc loads the same)
  std::string identity;  // library path and version, for cache keys
};

const Nvrtc& lib() {
  static const Nvrtc n = [] {
    Nvrtc r;
    for (const auto& name : toolkit_library_candidates("BRONZE_NVRTC_LIBRARY", "libnvrtc")) {
      void* h = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!h) continue;
      auto get = [&](auto& f, const char* s) { f = reinterpret_cast<std::decay_t<decltype(f)>>(dlsym(h, s)); return f != nullptr; };
      bool ok = get(r.version, "nvrtcVersion") && get(r.error_string, "nvrtcGetErrorString") &&
                get(r.create, "nvrtcCreateProgram") && get(r.compile, "nvrtcCompileProgram") &&
                get(r.log_size, "nvrtcGetProgramLogSize") && get(r.log, "nvrtcGetProgramLog") &&
                get(r.cubin_size, "nvrtcGetCUBINSize") && get(r.cubin, "nvrtcGetCUBIN") &&
                get(r.ptx_size, "nvrtcGetPTXSize") && get(r.ptx, "nvrtcGetPTX") &&
                get(r.add_name, "nvrtcAddNameExpression") && get(r.lowered_name, "nvrtcGetLoweredName") &&
                get(r.destroy, "nvrtcDestroyProgram");
      if (!ok) continue;
      int major = 0, minor = 0;
      r.version(&major, &minor);
      r.path = jit::loaded_file(h, name);
      r.identity = name + ":" + std::to_string(major) + "." + std::to_string(minor);
      r.status = "NVRTC " + std::to_string(major) + "." + std::to_string(minor) + " (" + name + ")";
      return r;
    }
    r.version = nullptr;
    r.status = toolkit_library_missing("BRONZE_NVRTC_LIBRARY", "NVRTC",
                                       "no NVRTC library found (libnvrtc.so.13/.12 on the library path, "
                                       "pip's nvidia/*/lib on sys.path, $CUDA_HOME/lib64, /usr/local/cuda/lib64, "
                                       "or $BRONZE_NVRTC_LIBRARY)");
    return r;
  }();
  return n;
}
}  // namespace

bool nvrtc_available() { return lib().version != nullptr; }
std::string nvrtc_status() { return lib().status; }

namespace {
// The options NVRTC gets for a request.
std::vector<std::string> options(const NvrtcRequest& rq) {
  std::vector<std::string> opts = {std::string(rq.ptx ? "--gpu-architecture=compute_" : "--gpu-architecture=sm_") +
                                       std::to_string(rq.arch),
                                   "--std=c++17", "-default-device", "--split-compile=0"};
  opts.insert(opts.end(), rq.options.begin(), rq.options.end());
  if (rq.syntax_only) opts.push_back("--fdevice-syntax-only");
  return opts;
}

}  // namespace

std::string encode_request(const NvrtcRequest& rq) {
  jit::RecordWriter w;
  w.str(rq.source).str(rq.filename).num(rq.arch).num(rq.ptx).num(rq.syntax_only);
  w.num(static_cast<long long>(rq.headers.size()));
  for (const auto& [name, text] : rq.headers) w.str(name).str(text);
  w.num(static_cast<long long>(rq.options.size()));
  for (const auto& o : rq.options) w.str(o);
  return w.out;
}

std::optional<NvrtcRequest> decode_request(const std::string& in) {
  jit::RecordReader r(in);
  NvrtcRequest rq;
  rq.source = r.str();
  rq.filename = r.str();
  rq.arch = static_cast<int>(r.num());
  rq.ptx = r.num() != 0;
  rq.syntax_only = r.num() != 0;
  for (long long i = 0, n = r.num(); r.ok && i < n; ++i) {
    std::string name = r.str();
    rq.headers.emplace_back(std::move(name), r.str());
  }
  for (long long i = 0, n = r.num(); r.ok && i < n; ++i) rq.options.push_back(r.str());
  if (!r.ok) return std::nullopt;
  return rq;
}

std::string encode_result(const NvrtcResult& r) {
  return jit::RecordWriter().num(r.ok).str(r.log).str(std::string(r.image.begin(), r.image.end())).out;
}

std::optional<NvrtcResult> decode_result(const std::string& in) {
  jit::RecordReader r(in);
  NvrtcResult out;
  out.ok = r.num() != 0;
  out.log = r.str();
  const std::string image = r.str();
  out.image.assign(image.begin(), image.end());
  if (!r.ok) return std::nullopt;
  return out;
}

namespace {
const std::string& worker_path() {
  static const std::string path = jit::helper_path("bronze-nvrtc");
  return path;
}

// The request compiled by bronze-nvrtc; nullopt when the worker did not
// answer (then the caller compiles here).
std::optional<NvrtcResult> run_in_worker(const NvrtcRequest& rq) {
  std::optional<NvrtcResult> out;
  try {
    const jit::HelperRun run = jit::call_helper(worker_path(), encode_request(rq), lib().path);
    if (run.answer) out = decode_result(*run.answer);
    if (!out)
      jit::log(jit::LogLevel::Info, [&] {
        return "bronze-nvrtc gave no result (" + (run.messages.empty() ? std::string("no message") : run.messages) +
               "): compiled in this process instead";
      });
  } catch (const jit::Interrupted&) {
    throw;
  } catch (const ShaderCompileError&) {  // past the compile's time or memory limit: the build's error
    throw;
  } catch (const Error& e) {  // not started: compiled here instead
    jit::log(jit::LogLevel::Info, [&] {
      return std::string("bronze-nvrtc did not start (") + e.what() + "): compiled in this process instead";
    });
  }
  return out;
}
}  // namespace

NvrtcResult nvrtc_run(const NvrtcRequest& rq) {
  const Nvrtc& n = lib();
  if (!n.version) throw NotSupportedError("CUDA kernels need NVRTC: " + n.status);
  const std::vector<std::string> opts = options(rq);
  NvrtcResult out;
  std::vector<const char*> hsrc, hname, copts;
  for (const auto& [name, text] : rq.headers) {
    hname.push_back(name.c_str());
    hsrc.push_back(text.c_str());
  }
  for (const auto& o : opts) copts.push_back(o.c_str());
  nvrtcProgram prog = nullptr;
  if (int rc = n.create(&prog, rq.source.c_str(), rq.filename.c_str(), static_cast<int>(hsrc.size()), hsrc.data(),
                        hname.data()))
    throw Error(std::string("nvrtcCreateProgram: ") + n.error_string(rc));
  for (const auto& e : rq.name_expressions) n.add_name(prog, e.c_str());
  int rc = n.compile(prog, static_cast<int>(copts.size()), copts.data());
  std::size_t log_size = 0;
  n.log_size(prog, &log_size);
  out.log.assign(log_size, '\0');
  if (log_size) n.log(prog, out.log.data());
  while (!out.log.empty() && out.log.back() == '\0') out.log.pop_back();
  if (rc != 0) {
    n.destroy(&prog);
    return out;
  }
  if (!rq.syntax_only) {
    std::size_t size = 0;
    (rq.ptx ? n.ptx_size : n.cubin_size)(prog, &size);
    out.image.resize(size);
    (rq.ptx ? n.ptx : n.cubin)(prog, out.image.data());
  }
  for (const auto& e : rq.name_expressions) {
    const char* lowered = nullptr;
    n.lowered_name(prog, e.c_str(), &lowered);
    out.lowered.push_back(lowered ? lowered : "");
  }
  n.destroy(&prog);
  out.ok = true;
  return out;
}

NvrtcResult nvrtc_compile(const NvrtcRequest& rq) {
  static std::atomic<bool> said_no_worker{false};
  const Nvrtc& n = lib();
  if (!n.version) throw NotSupportedError("CUDA kernels need NVRTC: " + n.status);
  // The key covers everything the output depends on: compiler, options,
  // every header's text, the source and its name (it appears in #line).
  jit::Sha256 key;
  key.update("bronze-nvrtc-2").update(n.identity).update(rq.filename).update("\0", 1);
  for (const auto& o : options(rq)) key.update(o).update("\0", 1);
  for (const auto& [name, text] : rq.headers) key.update(name).update("\0", 1).update(text).update("\0", 1);
  key.update(rq.source);
  const std::string k = key.hex(), suffix = rq.syntax_only ? ".checked" : rq.ptx ? ".ptx" : ".cubin";
  const bool cacheable = rq.name_expressions.empty();
  auto& cache = jit::DiskCache::instance();
  if (cacheable) {
    if (auto hit = nvrtc_cached(k, suffix)) {
      jit::log(jit::LogLevel::Info, [&] {
        return std::string(rq.syntax_only ? "check " : "compile ") + jit::LogScope::name() + " on cuda: cache hit (" +
               k + suffix + ")";
      });
      NvrtcResult out;
      out.ok = true;
      out.image = std::move(*hit);
      out.cache_key = k, out.cache_suffix = suffix;
      return out;
    }
  }
  std::optional<NvrtcResult> worked;
  const auto start = std::chrono::steady_clock::now();
  if (rq.in_worker && cacheable) {
    if (!worker_path().empty()) worked = run_in_worker(rq);
    else if (!said_no_worker.exchange(true))  // said once
      jit::log(jit::LogLevel::Info, [] {
        return std::string("bronze-nvrtc is not beside bronze's module: the parts of a unit compile in this process, "
                           "one at a time");
      });
  }
  NvrtcResult out = worked ? std::move(*worked) : nvrtc_run(rq);
  jit::log(jit::LogLevel::Info, [&] {
    return std::string(rq.syntax_only ? "check " : "compile ") + jit::LogScope::name() + " on cuda: " +
           (cacheable ? "cache miss, " : "") + (out.ok ? "done" : "failed") + " in " + jit::elapsed(start) +
           (worked ? " (bronze-nvrtc)" : "") + ": " + n.status + " " + jit::command_line(options(rq));
  });
  if (out.ok && cacheable && cache.writable()) {
    cache.write(k, suffix, std::string(out.image.begin(), out.image.end()));
    out.cache_key = k, out.cache_suffix = suffix;
  }
  return out;
}

std::optional<std::vector<char>> nvrtc_cached(const std::string& key, const std::string& suffix) {
  std::optional<std::string> image = jit::DiskCache::instance().read(key, suffix);
  if (!image) return std::nullopt;
  return std::vector<char>(image->begin(), image->end());
}

std::vector<char> compile_cubin(const std::string& source,
                                const std::vector<std::pair<std::string, std::string>>& headers, int arch,
                                const std::vector<std::string>& extra_options) {
  NvrtcRequest rq;
  rq.source = source;
  rq.headers = headers;
  rq.arch = arch;
  rq.options = extra_options;
  NvrtcResult r = nvrtc_compile(rq);
  if (!r.ok) throw ShaderCompileError("NVRTC failed to compile bronze's CUDA source: " + r.log);
  return std::move(r.image);
}

}  // namespace bronze::cuda
