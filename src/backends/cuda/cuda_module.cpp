#include "backends/cuda/cuda_module.hpp"

#include "backends/cuda/nvrtc.hpp"

namespace bronze::cuda {

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
