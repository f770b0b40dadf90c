#include "backends/cuda/nvrtc.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <fstream>
#include <iterator>

#include "backends/cuda/toolkit_paths.hpp"
#include "bronze/error.hpp"
#include "jit/disk_cache.hpp"
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
  nvrtcResult (*destroy)(nvrtcProgram*) = nullptr;
  std::string status;
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
                get(r.destroy, "nvrtcDestroyProgram");
      if (!ok) continue;
      int major = 0, minor = 0;
      r.version(&major, &minor);
      r.identity = name + ":" + std::to_string(major) + "." + std::to_string(minor);
      r.status = "NVRTC " + std::to_string(major) + "." + std::to_string(minor) + " (" + name + ")";
      return r;
    }
    r.version = nullptr;
    r.status = "no NVRTC library found (libnvrtc.so.13/.12 on the library path, $CUDA_HOME/lib64, "
               "/usr/local/cuda/lib64, or $BRONZE_NVRTC_LIBRARY)";
    return r;
  }();
  return n;
}
}  // namespace

bool nvrtc_available() { return lib().version != nullptr; }
std::string nvrtc_status() { return lib().status; }

std::vector<char> compile_cubin(const std::string& source,
                                const std::vector<std::pair<std::string, std::string>>& headers, int arch,
                                const std::vector<std::string>& extra_options) {
  const Nvrtc& n = lib();
  if (!n.version) throw NotSupportedError("CUDA kernels need NVRTC: " + n.status);
  std::vector<std::string> opts = {"--gpu-architecture=sm_" + std::to_string(arch), "--std=c++17", "-default-device"};
  opts.insert(opts.end(), extra_options.begin(), extra_options.end());
  jit::Sha256 key;
  key.update("bronze-cubin-1").update(n.identity);
  for (const auto& o : opts) key.update(o).update("\0", 1);
  for (const auto& [name, text] : headers) key.update(name).update("\0", 1).update(text).update("\0", 1);
  key.update(source);
  std::string k = key.hex();
  auto& cache = jit::DiskCache::instance();
  if (auto hit = cache.lookup(k, ".cubin")) {
    std::ifstream f(*hit, std::ios::binary);
    std::vector<char> data((std::istreambuf_iterator<char>(f)), {});
    data.resize(data.size() - 36);  // the cache's checksum trailer
    return data;
  }
  std::vector<const char*> hsrc, hname, copts;
  for (const auto& [name, text] : headers) {
    hname.push_back(name.c_str());
    hsrc.push_back(text.c_str());
  }
  for (const auto& o : opts) copts.push_back(o.c_str());
  nvrtcProgram prog = nullptr;
  if (int rc = n.create(&prog, source.c_str(), "bronze.cu", static_cast<int>(hsrc.size()), hsrc.data(), hname.data()))
    throw Error(std::string("nvrtcCreateProgram: ") + n.error_string(rc));
  int rc = n.compile(prog, static_cast<int>(copts.size()), copts.data());
  std::size_t log_size = 0;
  n.log_size(prog, &log_size);
  std::string log(log_size, '\0');
  if (log_size) n.log(prog, log.data());
  if (rc != 0) {
    n.destroy(&prog);
    throw ShaderCompileError("NVRTC failed to compile bronze's CUDA source: " + log);
  }
  std::size_t size = 0;
  n.cubin_size(prog, &size);
  std::vector<char> cubin(size);
  n.cubin(prog, cubin.data());
  n.destroy(&prog);
  std::string dir = cache.make_work_dir();
  std::string tmp = dir + "/module.cubin";
  std::ofstream(tmp, std::ios::binary).write(cubin.data(), static_cast<std::streamsize>(cubin.size()));
  if (cache.store(k, ".cubin", tmp) == tmp) ::remove(tmp.c_str());  // no cache: nothing to keep
  ::remove(dir.c_str());
  return cubin;
}

}  // namespace bronze::cuda
