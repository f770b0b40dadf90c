#include "backends/cuda/air/cuda_air.hpp"

#include <algorithm>
#include <memory>

#include "backends/air_lowering.hpp"
#include "bronze/error.hpp"
#include "jit/llvm_api.hpp"
#include "runtime/embedded.hpp"
#include "shader/metal_headers.hpp"

namespace bronze::cuda {
namespace {

using namespace jit::llvm;

// PTX for sm_80 and PTX ISA 7.0, which nvJitLink compiles for the device
// (any GPU bronze runs Metal on; AIR's half arithmetic is native there).
constexpr const char* kTriple = "nvptx64-nvidia-cuda";
constexpr const char* kCpu = "sm_80";
constexpr const char* kFeatures = "+ptx70";

LLVMTargetMachineRef ptx_machine(const Api& a) {
  if (!initialize_target("NVPTX"))
    throw NotSupportedError("running an Apple .metallib kernel on CUDA needs LLVM's NVPTX target, which " +
                            status() + " was built without");
  LLVMTargetRef target = nullptr;
  char* error = nullptr;
  if (a.LLVMGetTargetFromTriple(kTriple, &target, &error))
    throw NotSupportedError(std::string("LLVM cannot build for ") + kTriple + ": " + take_message(a, error));
  return a.LLVMCreateTargetMachine(target, kTriple, kCpu, kFeatures, kCodeGenLevelAggressive, kRelocPIC,
                                   kCodeModelDefault);
}

// The entry bronze launches (cuda_codegen's shape): the launch record, then
// one parameter per argument in entry order, a buffer's pointer or a
// value's bytes (its size and alignment, so the driver lays it out as
// bound); the thread's positions; the thunk. simdgroup matrices are in
// Apple's layout, as AIR's thread_elements() are. A kernel's declared limit
// of threads a group bounds the launch, as for source.
std::string entry_source(const KernelInfo& k, int max_threads, const std::string& functions) {
  const backends::AirEntryParts e = backends::air_entry_parts(k);
  std::string params = "const bronze_gpu_launch L", args;
  int n = 0;
  for (const KernelParam& p : k.params) {
    if (p.kind != ParamKind::Buffer && p.kind != ParamKind::Scalar) continue;
    const std::string a = "a" + std::to_string(n++);
    if (p.by_value) {
      std::size_t align = 16;
      while (align > 1 && p.size % align) align /= 2;
      params += ", bronze_air_value<" + std::to_string(std::max<std::size_t>(p.size, 1)) + ", " +
                std::to_string(align) + "> " + a;
      args += "&" + a + ", ";
    } else {
      params += ", void* " + a;
      args += a + ", ";
    }
  }
  std::string tg = "  void* tg[" + std::to_string(std::max(e.tg_slots, 1)) + "] = {};\n";
  for (int i = 0; i < e.tg_slots; ++i)
    tg += "  tg[" + std::to_string(i) + "] = bronze_rt::tg_buffer(" + std::to_string(i) + ", L);\n";
  return "#define BRONZE_SGM_THREAD_ELEMENTS\n#include \"bronze_metal.h\"\nnamespace bronze_msl {\n" +
         backends::air_entry_prelude() +
         "template <unsigned long long N, unsigned long long A> struct alignas(A) bronze_air_value { unsigned char b[N]; };\n" +
         functions + "extern \"C\" __device__ const unsigned long long " + runtime::kAirTgmemSymbol + " = 0;\n" +
         "extern \"C\" __global__ void " +
         (max_threads ? "__launch_bounds__(" + std::to_string(max_threads) + ") " : std::string()) +
         runtime::kAirEntrySymbol + "(" + params + ") {\n"
         "  bronze_rt::ids id;\n  if (!bronze_rt::make_ids(L, id)) return;\n"
         "  void* a[] = {" + args + "nullptr};\n" + tg + "  uint32_t pos[" + std::to_string(e.position_words) + "];\n" +
         e.positions + "  bronze_air_thunk(a, pos, tg);\n}\n}  // namespace bronze_msl\n";
}

// NVPTX has no address space 2. AIR's constant buffers become generic
// pointers, not global ones: a `constant T&` value is the entry's copy of
// a kernel parameter, in local memory, which only a generic load reaches.
// Casts that then go from generic to generic become no-op bitcasts.
std::string generic_constant_space(std::string ir) {
  static const std::string as2 = " addrspace(2)";
  std::string out;
  out.reserve(ir.size());
  for (std::size_t at = 0;;) {
    const std::size_t next = ir.find(as2, at);
    out.append(ir, at, next == std::string::npos ? std::string::npos : next - at);
    if (next == std::string::npos) break;
    at = next + as2.size();
  }
  static const std::string cast = "addrspacecast ";
  for (std::size_t at = 0; (at = out.find(cast, at)) != std::string::npos; at += cast.size()) {
    std::size_t p = at + cast.size() + (out.compare(at + cast.size(), 1, "(") == 0 ? 1 : 0);
    if (out.compare(p, 4, "ptr ") != 0 || (out[p + 4] != '%' && out[p + 4] != '@')) continue;  // from a typed space
    const std::size_t to = out.find(' ', p + 4);  // the value's end
    if (to == std::string::npos || out.compare(to, 7, " to ptr") != 0) continue;
    if (out.compare(to + 7, 11, " addrspace(") == 0) continue;  // to a typed space: a real cast
    out.replace(at, cast.size(), "bitcast ");
  }
  return out;
}

}  // namespace

std::string air_target() {
  require("running an Apple .metallib kernel");
  return status() + " " + kTriple + " " + kCpu + " " + kFeatures;
}

runtime::ModuleSource lower_air(const air::Function& f, const air::AirFunction& r,
                                const std::vector<std::pair<std::string, std::string>>& constants) {
  backends::AirModule m(f, r, constants);
  const Api& a = m.api;
  m.run_initializers_in_thunk();
  m.edit(generic_constant_space);
  std::unique_ptr<std::remove_pointer_t<LLVMTargetMachineRef>, void (*)(LLVMTargetMachineRef)> tm(
      ptx_machine(a), a.LLVMDisposeTargetMachine);
  runtime::ModuleSource out;
  out.objects.emplace_back("air_kernel.ptx", m.emit(tm.get(), kTriple, kAssemblyFile, std::string("CUDA (") + kCpu + ")"));
  out.code = entry_source(r.kernel, r.max_threads, m.functions);
  out.filename = f.name + ".metallib";
  out.headers = {{"bronze_metal.h", embedded::bronze_metal_h}, {"launch_abi.h", embedded::launch_abi_h}};
  out.math_mode = runtime::MathMode::Safe;  // Metal's math modes are in the AIR (air.fast_* or not)
  return out;
}

}  // namespace bronze::cuda
