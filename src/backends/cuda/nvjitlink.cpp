#include "backends/cuda/nvjitlink.hpp"

#include <dlfcn.h>

#include <memory>

#include "backends/cuda/toolkit_paths.hpp"
#include "bronze/error.hpp"

namespace bronze::cuda {
namespace {
using nvJitLinkResult = int;
using nvJitLinkHandle = struct nvJitLink*;
constexpr int kInputCubin = 1, kInputPtx = 2;  // nvJitLinkInputType

struct Lib {
  nvJitLinkResult (*create)(nvJitLinkHandle*, unsigned, const char**) = nullptr;
  nvJitLinkResult (*destroy)(nvJitLinkHandle*) = nullptr;
  nvJitLinkResult (*add_data)(nvJitLinkHandle, int, const void*, std::size_t, const char*) = nullptr;
  nvJitLinkResult (*complete)(nvJitLinkHandle) = nullptr;
  nvJitLinkResult (*cubin_size)(nvJitLinkHandle, std::size_t*) = nullptr;
  nvJitLinkResult (*cubin)(nvJitLinkHandle, void*) = nullptr;
  nvJitLinkResult (*error_log_size)(nvJitLinkHandle, std::size_t*) = nullptr;
  nvJitLinkResult (*error_log)(nvJitLinkHandle, char*) = nullptr;
  nvJitLinkResult (*version)(unsigned*, unsigned*) = nullptr;
  std::string status;
};

const Lib& lib() {
  static const Lib l = [] {
    Lib r;
    for (const auto& name : toolkit_library_candidates("BRONZE_NVJITLINK_LIBRARY", "libnvJitLink")) {
      void* h = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!h) continue;
      auto get = [&](auto& f, const char* s) { f = reinterpret_cast<std::decay_t<decltype(f)>>(dlsym(h, s)); return f != nullptr; };
      if (!(get(r.create, "nvJitLinkCreate") && get(r.destroy, "nvJitLinkDestroy") &&
            get(r.add_data, "nvJitLinkAddData") && get(r.complete, "nvJitLinkComplete") &&
            get(r.cubin_size, "nvJitLinkGetLinkedCubinSize") && get(r.cubin, "nvJitLinkGetLinkedCubin") &&
            get(r.error_log_size, "nvJitLinkGetErrorLogSize") && get(r.error_log, "nvJitLinkGetErrorLog") &&
            get(r.version, "nvJitLinkVersion"))) {
        r.create = nullptr;
        continue;
      }
      unsigned major = 0, minor = 0;
      r.version(&major, &minor);
      r.status = "nvJitLink " + std::to_string(major) + "." + std::to_string(minor) + " (" + name + ")";
      return r;
    }
    r.status = toolkit_library_missing("BRONZE_NVJITLINK_LIBRARY", "nvJitLink",
                                       "no nvJitLink library found (libnvJitLink.so.13/.12 where NVRTC is looked "
                                       "for, or $BRONZE_NVJITLINK_LIBRARY)");
    return r;
  }();
  return l;
}
}  // namespace

bool nvjitlink_available() { return lib().create != nullptr; }

std::vector<std::string> nvjitlink_options(int arch) {
  // 64 registers a thread: 1,024 threads a group fit, as Metal lets a
  // kernel run them (MLX's sdpa_vector and looped softmax do); linked code
  // calls across its parts and would otherwise take more (78 for sdpa_vector).
  return {"-arch=sm_" + std::to_string(arch), "-maxrregcount=64"};
}
std::string nvjitlink_status() { return lib().status; }

std::vector<char> nvjitlink(const std::vector<std::pair<LinkInput, std::pair<std::string, std::string>>>& parts,
                            int arch) {
  const Lib& l = lib();
  if (!l.create) throw NotSupportedError("linking an Apple .metallib kernel for CUDA needs nvJitLink: " + l.status);
  const std::vector<std::string> given = nvjitlink_options(arch);
  std::vector<const char*> options;
  for (const std::string& o : given) options.push_back(o.c_str());
  nvJitLinkHandle h = nullptr;
  if (l.create(&h, static_cast<unsigned>(options.size()), options.data()) != 0)
    throw Error("nvJitLink could not start a link for sm_" + std::to_string(arch));
  std::unique_ptr<nvJitLinkHandle, void (*)(nvJitLinkHandle*)> owned(&h, [](nvJitLinkHandle* p) { lib().destroy(p); });
  auto failed = [&](const std::string& what) {
    std::size_t n = 0;
    std::string log;
    if (l.error_log_size(h, &n) == 0 && n > 1) {
      log.resize(n);
      l.error_log(h, log.data());
      log.resize(n - 1);
    }
    return Error("nvJitLink could not " + what + (log.empty() ? std::string() : ":\n" + log));
  };
  for (const auto& [kind, part] : parts)
    if (l.add_data(h, kind == LinkInput::Ptx ? kInputPtx : kInputCubin, part.second.data(), part.second.size(),
                   part.first.c_str()) != 0)
      throw failed("take " + part.first);
  if (l.complete(h) != 0) throw failed("link sm_" + std::to_string(arch) + " code");
  std::size_t size = 0;
  if (l.cubin_size(h, &size) != 0) throw failed("give the linked cubin");
  std::vector<char> cubin(size);
  if (l.cubin(h, cubin.data()) != 0) throw failed("give the linked cubin");
  return cubin;
}

}  // namespace bronze::cuda
