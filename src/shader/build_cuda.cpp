// The CUDA backend's shader build: Metal -> CUDA C++ (rewrite_cuda) or the
// user's CUDA C++ -> NVRTC (a cubin for the device's sm_XY, cached on
// disk) -> a module loaded by the device.
#include "backends/cuda/nvrtc.hpp"
#include "bronze/error.hpp"
#include "jit/sha256.hpp"
#include "runtime/device_impl.hpp"
#include "shader/cuda_signatures.hpp"
#include "shader/library_impl.hpp"
#include "shader/metal_headers.hpp"
#include "shader/rewrite.hpp"
#include "shader/rewrite_cuda.hpp"
#include "shader/types.hpp"

namespace bronze::shader {
namespace {
// -lineinfo: Nsight and compute-sanitizer show the user's source lines.
const std::vector<std::string> kOptions = {"-lineinfo", "-w"};

std::shared_ptr<detail::LibraryImpl> new_library(const Device& d, const std::string& source) {
  auto lib = std::make_shared<detail::LibraryImpl>();
  lib->device = d;
  lib->source = source;
  lib->hash = jit::sha256_hex(source).substr(0, 16);
  return lib;
}

void add_kernel(detail::LibraryImpl& lib, KernelInfo info, const runtime::ModuleKernel& m) {
  lib.kernels.push_back(std::move(info));
  lib.entries.push_back(m.entry);
  lib.static_tg_bytes.push_back(m.static_shared_bytes);
  lib.max_threads.push_back(m.max_threads);
}
}  // namespace

std::vector<char> compile_cuda_image(const TranslationUnit& tu, const ParsedSource& ps, int arch, bool ptx) {
  cuda::NvrtcRequest rq;
  rq.source = rewrite_for_cuda(tu.text, ps);
  rq.filename = "bronze-shader.cu";
  rq.headers = {{"bronze_metal.h", embedded::bronze_metal_h}, {"bronze_metal_cuda.h", embedded::bronze_metal_cuda_h}};
  rq.arch = arch;
  rq.ptx = ptx;
  rq.options = kOptions;
  cuda::NvrtcResult r = cuda::nvrtc_compile(rq);
  if (!r.ok) raise_compile_error(r.log, tu.files);
  return std::move(r.image);
}

std::shared_ptr<detail::LibraryImpl> load_cuda_module(const Device& d, const std::string& unit, const ParsedSource& ps,
                                                      const std::vector<char>& image) {
  std::vector<runtime::ModuleKernel> mk(ps.kernels.size());
  for (std::size_t k = 0; k < mk.size(); ++k) {
    mk[k].symbol = entry_symbol(k);
    mk[k].sizes_symbol = layout_symbol(k);
    mk[k].nsizes = 2 * ps.kernels[k].info.bound.size() + 1;
  }
  runtime::device_impl(d).load_module(image, mk);
  auto lib = new_library(d, unit);
  for (std::size_t k = 0; k < mk.size(); ++k) {
    KernelInfo info = ps.kernels[k].info;
    apply_layout(info, reinterpret_cast<const unsigned long long*>(mk[k].sizes.data()));
    add_kernel(*lib, std::move(info), mk[k]);
  }
  return lib;
}

std::shared_ptr<detail::LibraryImpl> build_cuda_source(const Device& d, const std::string& src,
                                                       const std::string& filename) {
  std::vector<CudaKernel> kernels = parse_cuda_kernels(src, filename);
  cuda::NvrtcRequest rq;
  rq.source = src;
  rq.filename = filename;
  rq.arch = runtime::device_impl(d).gpu_arch();
  rq.options = kOptions;
  for (const CudaKernel& k : kernels)
    if (!k.extern_c) rq.name_expressions.push_back("&" + k.info.name);
  cuda::NvrtcResult r = cuda::nvrtc_compile(rq);
  if (!r.ok) raise_compile_error(r.log, {{filename, src}});
  std::vector<runtime::ModuleKernel> mk(kernels.size());
  for (std::size_t k = 0, lowered = 0; k < kernels.size(); ++k)
    mk[k].symbol = kernels[k].extern_c ? kernels[k].info.name : r.lowered[lowered++];
  runtime::device_impl(d).load_module(r.image, mk);
  auto lib = new_library(d, src);
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

}  // namespace bronze::shader
