#include "backends/cpu/air/cpu_air.hpp"

#include <algorithm>
#include <memory>

#include "backends/air_lowering.hpp"
#include "bronze/error.hpp"
#include "jit/llvm_api.hpp"
#include "runtime/embedded.hpp"
#include "shader/metal_headers.hpp"

namespace bronze::cpu {
namespace {

using namespace jit::llvm;

// The entry bronze launches (cpu_codegen's shape): the group's threads, each
// with its positions, through the thunk; a kernel without barriers or
// collectives a row of threads at a time (backends::row_thunk_ir); its
// declared limit of threads a group (0: none) exported for the loader.
std::string entry_source(const KernelInfo& k, std::size_t threadgroup_bytes, int max_threads,
                         const std::string& functions) {
  const backends::AirEntryParts e = backends::air_entry_parts(k);
  std::string tg = "  void* tg[" + std::to_string(std::max(e.tg_slots, 1)) + "] = {};\n";
  for (int i = 0; i < e.tg_slots; ++i)
    tg += "  tg[" + std::to_string(i) + "] = bronze_rt::tg_buffer(" + std::to_string(i) + ", L);\n";
  const std::string pos = "    uint32_t pos[" + std::to_string(e.position_words) + "];\n" + e.positions;
  const std::string run =
      k.cooperative
          ? "  auto bronze_body = [&](const bronze_rt::ids& id) {\n" + pos + "    bronze_air_thunk(a, pos, tg);\n  };\n"
            "  bronze_rt::run_groups_cooperative(L, g0, g1, bronze_body);\n"
          : "  bronze_rt::run_rows(L, g0, g1, [&](const bronze_rt::ids& id, uint32_t count) {\n" + pos +
            "    bronze_air_row(a, pos, tg, count, id.tiitg);\n  });\n";
  const std::string row = k.cooperative ? "" : "extern \"C\" void bronze_air_row(void* const* buffers, "
                                               "const uint32_t* positions, void* const* tg, uint32_t count, "
                                               "uint32_t first);\n";
  return "#define BRONZE_EXPORT __attribute__((visibility(\"default\")))\n#include \"bronze_metal.h\"\n"
         "namespace bronze_msl {\n" + backends::air_entry_prelude() + functions + row +
         "extern \"C\" BRONZE_EXPORT const unsigned long long " + std::string(runtime::kAirTgmemSymbol) + " = " +
         std::to_string(threadgroup_bytes) + "ull;\n"
         "extern \"C\" BRONZE_EXPORT const unsigned long long " + std::string(runtime::kAirMaxThreadsSymbol) + " = " +
         std::to_string(max_threads) + "ull;\n"
         "extern \"C\" BRONZE_EXPORT void " + runtime::kAirEntrySymbol +
         "(void* const* a, const bronze_cpu_launch* L, unsigned long long g0, unsigned long long g1) {\n" + tg + run +
         "}\n}  // namespace bronze_msl\n";
}

// The host as LLVM builds for it (LLVM's targets are registered once,
// process-wide).
struct Host {
  std::string triple, cpu, features;
};
const Host& host(const Api& a) {
  static const Host h = [&] {
    a.LLVMInitializeX86TargetInfo();
    a.LLVMInitializeX86Target();
    a.LLVMInitializeX86TargetMC();
    a.LLVMInitializeX86AsmPrinter();
    return Host{take_message(a, a.LLVMGetDefaultTargetTriple()), take_message(a, a.LLVMGetHostCPUName()),
                take_message(a, a.LLVMGetHostCPUFeatures())};
  }();
  return h;
}

LLVMTargetMachineRef host_machine(const Api& a, std::string& triple) {
  const Host& h = host(a);
  triple = h.triple;
  LLVMTargetRef target = nullptr;
  char* error = nullptr;
  if (a.LLVMGetTargetFromTriple(triple.c_str(), &target, &error))
    throw NotSupportedError("LLVM cannot build for this host (" + triple + "): " + take_message(a, error));
  return a.LLVMCreateTargetMachine(target, triple.c_str(), h.cpu.c_str(), h.features.c_str(), kCodeGenLevelAggressive,
                                   kRelocPIC, kCodeModelDefault);
}

}  // namespace

std::string air_target() {
  const Api& a = require("running an Apple .metallib kernel");
  const Host& h = host(a);
  return status() + " " + h.triple + " " + h.cpu + " " + h.features;
}

runtime::ModuleSource lower_air(const air::Function& f, const air::AirFunction& r,
                                const std::vector<std::pair<std::string, std::string>>& constants) {
  backends::AirModule m(f, r, constants);
  const Api& a = m.api;
  if (!r.kernel.cooperative) m.thunk_extra = backends::row_thunk_ir(r.kernel);
  // Threadgroup variables: one per group, and a group runs on one OS thread.
  for (LLVMValueRef g = a.LLVMGetFirstGlobal(m.module->get()); g; g = a.LLVMGetNextGlobal(g))
    if (a.LLVMGetPointerAddressSpace(a.LLVMTypeOf(g)) == 3) {
      a.LLVMSetThreadLocal(g, 1);
      a.LLVMSetThreadLocalMode(g, kLocalDynamicTLS);
    }
  std::string triple;
  std::unique_ptr<std::remove_pointer_t<LLVMTargetMachineRef>, void (*)(LLVMTargetMachineRef)> tm(
      host_machine(a, triple), a.LLVMDisposeTargetMachine);
  runtime::ModuleSource out;
  out.objects.emplace_back("air_kernel.o", m.emit(tm.get(), triple, kObjectFile, "the CPU (" + triple + ")"));
  out.code = entry_source(r.kernel, r.threadgroup_bytes, r.max_threads, m.functions);
  out.filename = f.name + ".metallib";
  out.headers = {{"bronze_metal.h", embedded::bronze_metal_h}, {"launch_abi.h", embedded::launch_abi_h}};
  // Metal's math modes are in the AIR (air.fast_* or not): the entry's own
  // code (positions, conversions) is exact.
  out.math_mode = runtime::MathMode::Safe;
  return out;
}

}  // namespace bronze::cpu
