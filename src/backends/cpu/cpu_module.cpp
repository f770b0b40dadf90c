#include "backends/cpu/cpu_module.hpp"

#include <dlfcn.h>

#include "bronze/error.hpp"
#include "jit/host_compiler.hpp"

namespace bronze::cpu {
namespace {
constexpr int kMaxThreadsPerGroup = 1024;  // Metal's limit; fibers have no other
}  // namespace

runtime::ModuleObject build_module(const runtime::ModuleSource& src) {
  auto headers = src.headers;
  headers.emplace_back("bronze_metal_cpu.h", embedded::bronze_metal_cpu_h);
  const jit::HostCompiler& cc = jit::HostCompiler::get();
  // The same meaning on GCC and Clang: each option below is spelled alike
  // by both; those that are not come from what the compiler is (found by
  // running it, jit/host_compiler.hpp).
  std::vector<std::string> flags = {"-std=c++17", "-O3", "-fPIC", "-shared", "-fvisibility=hidden", "-w", "-fno-exceptions", "-fno-math-errno",
       // Multiply-add contraction across statements where the target has FMA
       // (as Metal's compiler does): GCC's default for C++ (its ISO modes
       // turn it off for C only); Clang's default contracts within an
       // expression only. Baseline x86-64 has no FMA: there nothing changes.
       "-ffp-contract=fast",
       // Every function a kernel calls must be defined: an error now, not when loading.
       "-Wl,-z,defs", "-lm"};
  // Plain messages: excerpts come from the files bronze read.
  for (const auto& f : cc.plain_diagnostics_flags()) flags.push_back(f);
  // Divisions and indexes into arrays of known size (private and threadgroup
  // arrays) checked by bronze's handlers (bronze_metal_cpu.h), so no
  // sanitizer runtime is linked: GCC's static one contributes nothing, and
  // Clang links none into shared objects. GCC's `bounds` is Clang's
  // `array-bounds` (Clang's `bounds` adds local-bounds, which traps with no
  // handler and no message).
  if (src.validate) {
    flags.insert(flags.end(), {"-DBRONZE_VALIDATE", cc.clang ? "-fsanitize=integer-divide-by-zero,array-bounds"
                                                             : "-fsanitize=integer-divide-by-zero,bounds"});
    if (!cc.clang) flags.push_back("-static-libubsan");
  }
  // Metal's math modes as GCC and Clang options, each named (-ffast-math
  // would also assume no NaN or infinity, which CUDA never does, and would
  // link crtfastmath.o, setting flush-to-zero for the whole process).
  if (src.math_mode != runtime::MathMode::Safe)
    flags.insert(flags.end(), {"-DBRONZE_FAST_MATH", "-fno-trapping-math", "-fno-signed-zeros", "-freciprocal-math"});
  if (src.math_mode == runtime::MathMode::Fast) flags.push_back("-fassociative-math");
  auto r = jit::build_shared_object(src.code, headers, flags, src.check_stack);
  runtime::ModuleObject o;
  o.ok = !r.so_path.empty();
  o.path = r.so_path;
  o.diagnostics = r.diagnostics;
  return o;
}

void load_module(const runtime::ModuleObject& object, std::vector<runtime::ModuleKernel>& kernels) {
  void* h = ::dlopen(object.path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) throw Error(std::string("cannot load the compiled shader: ") + ::dlerror());
  for (auto& k : kernels) {
    k.entry = ::dlsym(h, k.symbol.c_str());
    if (!k.entry) throw KernelNotFoundError("the compiled shader has no entry '" + k.symbol + "'");
    k.max_threads = kMaxThreadsPerGroup;
    if (!k.table_symbol.empty()) {
      auto* t = static_cast<const std::uint64_t*>(::dlsym(h, k.table_symbol.c_str()));
      if (!t) throw Error("the compiled shader lacks its table '" + k.table_symbol + "'");
      k.table.assign(t, t + k.table_words);
    }
    if (!k.tgmem_symbol.empty()) {
      auto* tg = static_cast<const std::uint64_t*>(::dlsym(h, k.tgmem_symbol.c_str()));
      if (!tg) throw Error("the compiled shader lacks '" + k.tgmem_symbol + "'");
      k.static_shared_bytes = static_cast<std::size_t>(*tg);
    }
  }
}

}  // namespace bronze::cpu
