#include "backends/cuda/cuda_module.hpp"

#include "backends/cuda/nvjitlink.hpp"
#include "backends/cuda/nvrtc.hpp"
#include "bronze/error.hpp"
#include "jit/disk_cache.hpp"
#include "jit/sha256.hpp"

namespace bronze::cuda {
namespace {
// NVRTC's relocatable cubin linked with the source's PTX objects (an Apple
// .metallib kernel's, backends/cuda/air) by nvJitLink, cached under a key
// of its parts.
void link_objects(runtime::ModuleObject& o, const runtime::ModuleSource& src) {
  jit::Sha256 h;
  h.update(o.cache_key).update("\0", 1).update(nvjitlink_status());
  for (const std::string& option : nvjitlink_options(src.gpu_arch)) h.update("\0", 1).update(option);
  for (const auto& [name, bytes] : src.objects) h.update("\0", 1).update(name).update("\0", 1).update(bytes);
  const std::string key = h.hex(), suffix = ".linked.cubin";
  jit::DiskCache& cache = jit::DiskCache::instance();
  std::optional<std::string> hit = o.cache_key.empty() ? std::nullopt : cache.read(key, suffix);
  if (hit) {
    o.image.assign(hit->begin(), hit->end());
  } else {
    std::vector<std::pair<LinkInput, std::pair<std::string, std::string>>> parts;
    parts.push_back({LinkInput::Cubin, {src.filename + ".cubin", std::string(o.image.begin(), o.image.end())}});
    for (const auto& [name, bytes] : src.objects) parts.push_back({LinkInput::Ptx, {name, bytes}});
    try {
      o.image = nvjitlink(parts, src.gpu_arch);
    } catch (const NotSupportedError&) {
      throw;
    } catch (const Error& e) {  // bronze's two parts do not link: bronze's fault, reported as a failed build
      o.ok = false;
      o.diagnostics = e.what();
      o.image.clear();
      return;
    }
    if (!o.cache_key.empty()) cache.write(key, suffix, std::string(o.image.begin(), o.image.end()));
  }
  if (!o.cache_key.empty()) o.cache_key = key, o.cache_suffix = suffix;
}
}  // namespace

runtime::ModuleObject build_module(const runtime::ModuleSource& src) {
  NvrtcRequest rq;
  rq.source = src.code;
  rq.filename = src.filename;
  rq.headers = src.headers;
  rq.headers.emplace_back("bronze_metal_cuda.h", embedded::bronze_metal_cuda_h);
  rq.arch = src.gpu_arch;
  rq.ptx = src.ptx;
  // -lineinfo: Nsight and compute-sanitizer show the user's lines.
  // --device-int128: 64-bit mulhi/mulsat/madsat take the full product in __int128, as on the host.
  rq.options = {"-lineinfo", "-w", "--device-int128"};
  if (!src.objects.empty()) rq.options.push_back("--relocatable-device-code=true");  // linked with them below
  // Metal's fast and relaxed modes as --use_fast_math's options, without its
  // substitution of intrinsics for every expf: precise:: stays precise, and
  // metal::'s functions are fast:: (BRONZE_FAST_MATH).
  if (src.math_mode != runtime::MathMode::Safe)
    rq.options.insert(rq.options.end(), {"-DBRONZE_FAST_MATH", "--ftz=true", "--prec-div=false", "--prec-sqrt=false"});
  rq.name_expressions = src.name_expressions;
  rq.syntax_only = src.check_only;
  rq.in_worker = src.one_of_many;
  NvrtcResult r = nvrtc_compile(rq);
  runtime::ModuleObject o;
  o.ok = r.ok;
  o.diagnostics = std::move(r.log);
  o.image = std::move(r.image);
  o.lowered = std::move(r.lowered);
  o.cache_key = std::move(r.cache_key);
  o.cache_suffix = std::move(r.cache_suffix);
  o.static_shared_overflow = !r.ok && o.diagnostics.find("too much shared data") != std::string::npos;  // ptxas's words
  if (o.ok && !src.objects.empty()) link_objects(o, src);
  return o;
}

std::optional<runtime::ModuleObject> cached_module(const std::string& key, const std::string& suffix) {
  std::optional<std::vector<char>> image = nvrtc_cached(key, suffix);
  if (!image) return std::nullopt;
  runtime::ModuleObject o;
  o.ok = true;
  o.image = std::move(*image);
  o.cache_key = key, o.cache_suffix = suffix;
  return o;
}

}  // namespace bronze::cuda
