// The CPU backend's shader build: Metal -> C++ (rewrite_cpu) -> the host
// compiler -> a shared object, loaded with dlopen.
#include <dlfcn.h>

#include "bronze/error.hpp"
#include "jit/host_compiler.hpp"
#include "jit/sha256.hpp"
#include "shader/library_impl.hpp"
#include "shader/metal_headers.hpp"
#include "shader/rewrite.hpp"
#include "shader/rewrite_cpu.hpp"

namespace bronze::shader {
namespace {
constexpr int kCpuMaxThreadsPerGroup = 1024;  // Metal's limit; fibers have no other
}  // namespace

// Compiles Metal source for the host CPU; returns the shared object's path.
std::string compile_cpu_object(const std::string& src, const ParsedSource& ps, const std::string& filename,
                               bool validate) {
  std::string cpp = rewrite_for_cpu(src, ps, filename, validate);
  auto r = jit::build_shared_object(
      cpp, {{"bronze_metal.h", embedded::bronze_metal_h}, {"bronze_metal_cpu.h", embedded::bronze_metal_cpu_h}},
      {"-std=c++17", "-O3", "-fPIC", "-shared", "-fvisibility=hidden", "-w", "-fno-exceptions", "-fno-math-errno",
       "-fdiagnostics-color=never"});
  if (r.so_path.empty()) raise_compile_error(r.diagnostics, src, filename);
  return r.so_path;
}

std::shared_ptr<detail::LibraryImpl> load_cpu_object(const std::string& src, const ParsedSource& ps,
                                                     const std::string& so_path) {
  void* h = ::dlopen(so_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) throw Error(std::string("cannot load the compiled shader: ") + ::dlerror());
  // Libraries stay loaded for the process: queued launches and thread-local
  // scratch inside them must outlive every Library handle.
  auto lib = std::make_shared<detail::LibraryImpl>();
  lib->source = src;
  lib->hash = jit::sha256_hex(src).substr(0, 16);
  for (std::size_t k = 0; k < ps.kernels.size(); ++k) {
    const void* entry = ::dlsym(h, entry_symbol(k).c_str());
    auto* sizes = static_cast<const unsigned long long*>(::dlsym(h, sizes_symbol(k).c_str()));
    auto* tg = static_cast<const unsigned long long*>(::dlsym(h, ("bronze_tgmem_" + std::to_string(k)).c_str()));
    if (!entry || !sizes || !tg) throw Error("compiled shader lacks the entry of kernel " + ps.kernels[k].info.name);
    KernelInfo info = ps.kernels[k].info;
    for (auto& p : info.params)
      if (p.binding >= 0) p.size = static_cast<std::size_t>(sizes[p.binding]);
    lib->kernels.push_back(std::move(info));
    lib->entries.push_back(entry);
    lib->static_tg_bytes.push_back(static_cast<std::size_t>(*tg));
    lib->max_threads.push_back(kCpuMaxThreadsPerGroup);
  }
  return lib;
}

}  // namespace bronze::shader
