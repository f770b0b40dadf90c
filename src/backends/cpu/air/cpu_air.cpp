#include "backends/cpu/air/cpu_air.hpp"

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <stdexcept>

#include "bronze/error.hpp"
#include "jit/llvm_api.hpp"
#include "runtime/embedded.hpp"
#include "shader/metal_headers.hpp"
#include "shader/parser.hpp"

namespace bronze::cpu {
namespace {

using namespace jit::llvm;

// What an air.* intrinsic is in bronze's CPU runtime: a C++ body over its
// arguments x0, x1, x2 (returning a value of the intrinsic's type `R`),
// through bronze_metal.h's functions, so AIR computes as compiled source
// does. Matched on the name after "air." up to its type suffix; an
// intrinsic not listed is refused, never guessed.
struct Lowering {
  std::string name, body;
};
const std::vector<Lowering>& lowerings() {
  static const std::vector<Lowering> table = [] {
    std::vector<Lowering> t = {
        {"wg.barrier", "threadgroup_barrier(mem_flags::mem_threadgroup);"},
        {"simdgroup.barrier", "simdgroup_barrier(mem_flags::mem_none);"},
        {"fma", "return metal::fma(x0, x1, x2);"},
        {"min", "return x0 < x1 ? x0 : x1;"},
        {"max", "return x0 < x1 ? x1 : x0;"},
        {"clamp", "return x0 < x1 ? x1 : x2 < x0 ? x2 : x0;"},
        {"convert", "return bronze_air_convert<R>(x0);"},
        {"normalize_function_constant_predicate", "return x0 != 0;"},
    };
    // Collectives, as Metal names them.
    for (const char* n : {"simd_sum", "simd_product", "simd_max", "simd_min", "simd_prefix_inclusive_sum",
                          "simd_prefix_exclusive_sum", "simd_prefix_inclusive_product", "simd_prefix_exclusive_product",
                          "simd_all", "simd_any", "simd_broadcast_first", "quad_sum", "quad_product", "quad_max",
                          "quad_min", "quad_prefix_inclusive_sum", "quad_prefix_exclusive_sum", "quad_all", "quad_any"})
      t.push_back({n, std::string("return metal::") + n + "(x0);"});
    for (const char* n : {"simd_shuffle", "simd_shuffle_down", "simd_shuffle_up", "simd_shuffle_xor", "simd_broadcast",
                          "quad_shuffle", "quad_shuffle_down", "quad_shuffle_up", "quad_shuffle_xor", "quad_broadcast"})
      t.push_back({n, std::string("return metal::") + n + "(x0, x1);"});
    // Math with a precise and a fast form: air.NAME and air.fast_NAME.
    for (const char* n : {"exp", "exp2", "exp10", "log", "log2", "log10", "sin", "cos", "tan", "asin", "acos", "atan",
                          "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "sqrt", "rsqrt", "floor", "ceil",
                          "round", "rint", "trunc", "fabs"}) {
      t.push_back({n, std::string("return metal::precise::") + n + "(x0);"});
      t.push_back({std::string("fast_") + n, std::string("return metal::fast::") + n + "(x0);"});
    }
    for (const char* n : {"pow", "powr"}) {
      t.push_back({n, std::string("return metal::precise::") + n + "(x0, x1);"});
      t.push_back({std::string("fast_") + n, std::string("return metal::fast::") + n + "(x0, x1);"});
    }
    for (const char* n : {"fmax", "fmin", "atan2", "fmod", "copysign", "fdim"}) {
      t.push_back({n, std::string("return metal::") + n + "(x0, x1);"});
      t.push_back({std::string("fast_") + n, std::string("return metal::") + n + "(x0, x1);"});
    }
    return t;
  }();
  return table;
}

// The lowering of `op` ("simd_sum.f32" -> "simd_sum"): the longest name
// that is the op's prefix up to a '.'.
const Lowering* lowering(const std::string& op) {
  const Lowering* best = nullptr;
  for (const Lowering& l : lowerings()) {
    const std::size_t n = l.name.size();
    if (op.compare(0, n, l.name) == 0 && (op.size() == n || op[n] == '.') && (!best || n > best->name.size()))
      best = &l;
  }
  return best;
}

// A C++ type for an LLVM scalar type; `is_signed` chooses for integers.
// Vectors are not lowered yet.
std::string c_type(const std::string& llvm, bool is_signed) {
  if (llvm == "void") return "void";
  if (llvm == "float") return "float";
  if (llvm == "double") return "double";
  if (llvm == "i1") return "bool";
  for (int bits : {8, 16, 32, 64})
    if (llvm == "i" + std::to_string(bits)) return (is_signed ? "int" : "uint") + std::to_string(bits) + "_t";
  return "";
}

// The C++ runtime function (named `symbol`) an air.* intrinsic becomes;
// empty with `why` set when the CPU runtime does not implement it yet.
std::string runtime_function(const air::AirFunction::Intrinsic& in, const std::string& symbol, std::string& why) {
  const std::string op = in.name.substr(4);
  const Lowering* l = lowering(op);
  if (!l) {
    why = "does not implement yet";
    return "";
  }
  // Signedness from the name: ".s." signed, ".u." unsigned; a conversion
  // names its result's first ("convert.f.f32.u.i32": to float from uint).
  const bool is_convert = op.rfind("convert.", 0) == 0;
  const std::size_t second = is_convert ? op.find('.', op.find('.', 8) + 1) : std::string::npos;
  auto signed_at = [&](std::size_t from) {
    const std::size_t u = op.find(".u.", from), s = op.find(".s.", from);
    return !(u != std::string::npos && (s == std::string::npos || u < s));
  };
  const std::string ret = c_type(in.result, is_convert ? op.compare(8, 2, "u.") != 0 : signed_at(0));
  if (ret.empty()) {
    why = "does not take " + in.result + " values yet";
    return "";
  }
  std::string decl, narrow;
  for (std::size_t i = 0; i < in.params.size(); ++i) {
    const std::string p = c_type(in.params[i], is_convert ? signed_at(second) : signed_at(0));
    const std::string x = "x" + std::to_string(i);
    if (p.empty()) {
      why = "does not take " + in.params[i] + " values yet";
      return "";
    }
    // An 8- or 16-bit argument arrives in a 32-bit register whose upper
    // bits LLVM's call (no signext/zeroext) leaves undefined: taken wide,
    // then narrowed, whatever the host compiler assumes.
    if (in.params[i] == "i8" || in.params[i] == "i16") {
      decl += (i ? ", " : "") + std::string("uint32_t ") + x + "_wide";
      narrow += "  const " + p + " " + x + " = " + p + "(" + x + "_wide);\n";
    } else {
      decl += (i ? ", " : "") + p + " " + x;
    }
  }
  return "extern \"C\" " + ret + " " + symbol + "(" + decl + ") {\n  using R = " + ret + ";\n  (void)sizeof(R);\n" +
         narrow + "  " + l->body + "\n}\n";
}

std::string symbol_of(const std::string& intrinsic) {
  std::string s = "bronze_" + intrinsic;
  for (char& c : s) c = c == '.' ? '_' : c;
  return s;
}

// The thunk: bronze_air_thunk(buffers, positions, threadgroup buffers)
// loads each of the kernel's arguments and calls it. Buffers come in
// declaration order (the entry order dispatch arranges, as for source); a
// thread-position argument from 3 words per attribute parameter (the entry
// fills them); threadgroup buffers by index.
std::string thunk_ir(const Api& a, LLVMValueRef kernel, const std::string& name, const KernelInfo& k) {
  const std::vector<std::string> params = signature(a, kernel).params;
  if (params.size() != k.params.size())
    throw ValueError("kernel '" + name + "': its !air.kernel metadata lists " + std::to_string(k.params.size()) +
                     " arguments, its function takes " + std::to_string(params.size()));
  std::string body, call, decl;
  int attribute = 0, buffer = 0;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const std::string& t = params[i];
    const std::string v = "%a" + std::to_string(i);
    const KernelParam& p = k.params[i];
    decl += (i ? ", " : "") + t;
    call += (i ? ", " : "") + t + " " + v;
    if (p.kind == ParamKind::Buffer || p.kind == ParamKind::ThreadgroupBuffer) {
      const bool tg = p.kind == ParamKind::ThreadgroupBuffer;
      const int slot = tg ? p.index : buffer++;  // the entry takes buffers in declaration order
      body += "  " + v + ".at = getelementptr inbounds ptr, ptr " + (tg ? "%tg" : "%buffers") + ", i64 " +
              std::to_string(slot) + "\n  " + v + ".p = load ptr, ptr " + v + ".at, align 8\n";
      if (t.rfind("ptr", 0) != 0) throw ValueError("kernel '" + name + "': buffer '" + p.name + "' is not a pointer");
      body += "  " + v + " = " + (t == "ptr" ? "bitcast" : "addrspacecast") + " ptr " + v + ".p to " + t + "\n";
    } else if (p.kind == ParamKind::Attribute) {
      const std::string at = std::to_string(3 * attribute++);
      body += "  " + v + ".at = getelementptr inbounds i32, ptr %positions, i64 " + at + "\n";
      if (t == "i32" || t == "<2 x i32>" || t == "<3 x i32>") {
        body += "  " + v + " = load " + t + ", ptr " + v + ".at, align 4\n";
      } else if (t == "i16" || t == "<2 x i16>" || t == "<3 x i16>") {
        const std::string wide = t == "i16" ? "i32" : t.substr(0, 5) + "i32>";
        body += "  " + v + ".w = load " + wide + ", ptr " + v + ".at, align 4\n  " + v + " = trunc " + wide + " " + v +
                ".w to " + t + "\n";
      } else {
        throw NotSupportedError("kernel '" + name + "': its [[" + p.attribute + "]] argument is " + t +
                                ", which bronze's CPU runtime does not pass yet");
      }
    } else {
      throw NotSupportedError("kernel '" + name + "': its parameter '" + p.name + "' is not bound on the CPU yet");
    }
  }
  return "declare void @\"" + name + "\"(" + decl + ")\n\n"
         "define hidden void @bronze_air_thunk(ptr %buffers, ptr %positions, ptr %tg) {\n" + body +
         "  call void @\"" + name + "\"(" + call + ")\n  ret void\n}\n";
}

// The entry bronze launches (cpu_codegen's shape): the group's threads, each
// with its positions, through the thunk.
std::string entry_source(const KernelInfo& k, const std::string& functions) {
  std::string fill;
  int attribute = 0;
  int tg_slots = 0;
  for (const KernelParam& p : k.params) {
    if (p.kind == ParamKind::ThreadgroupBuffer) tg_slots = std::max(tg_slots, p.index + 1);
    if (p.kind != ParamKind::Attribute) continue;
    const char* field = shader::attribute_field(p.attribute);
    if (!field) throw NotSupportedError("kernel '" + k.name + "': [[" + p.attribute + "]] is not a Metal attribute bronze knows");
    fill += "    bronze_air_position(pos + " + std::to_string(3 * attribute++) + ", " + field + ");\n";
  }
  std::string tg = "  void* tg[" + std::to_string(std::max(tg_slots, 1)) + "] = {};\n";
  for (int i = 0; i < tg_slots; ++i) tg += "  tg[" + std::to_string(i) + "] = bronze_rt::tg_buffer(" + std::to_string(i) + ", L);\n";
  return "#define BRONZE_EXPORT __attribute__((visibility(\"default\")))\n#include \"bronze_metal.h\"\n"
         "namespace bronze_msl {\n"
         // AIR's conversions: float to integer saturates, NaN gives 0 (as
         // Apple GPUs convert); to bool is a comparison with zero.
         "template <class R, class T> inline R bronze_air_convert(T x) {\n"
         "  if constexpr (metal::is_same_v<R, bool>) return x != T(0);\n"
         "  else if constexpr (metal::is_integral_v<R> && !metal::is_integral_v<T>) {\n"
         "    constexpr bool is_signed = R(-1) < R(0);\n"
         "    constexpr R hi = is_signed ? R(((R(1) << (sizeof(R) * 8 - 2)) - 1) * 2 + 1) : R(~R(0));\n"
         "    constexpr R lo = is_signed ? R(-hi - 1) : R(0);\n"
         "    return x != x ? R(0) : x <= T(lo) ? lo : x >= T(hi) ? hi : R(x);\n"
         "  } else return R(x);\n}\n"
         "inline void bronze_air_position(uint32_t* p, uint v) { p[0] = v; p[1] = p[2] = 0; }\n"
         "inline void bronze_air_position(uint32_t* p, uint2 v) { p[0] = v.x; p[1] = v.y; p[2] = 0; }\n"
         "inline void bronze_air_position(uint32_t* p, uint3 v) { p[0] = v.x; p[1] = v.y; p[2] = v.z; }\n" +
         functions +
         "extern \"C\" void bronze_air_thunk(void* const* buffers, const uint32_t* positions, void* const* tg);\n"
         "extern \"C\" BRONZE_EXPORT const unsigned long long " + std::string(runtime::kAirTgmemSymbol) + " = 0;\n"
         "extern \"C\" BRONZE_EXPORT void " + runtime::kAirEntrySymbol +
         "(void* const* a, const bronze_cpu_launch* L, unsigned long long g0, unsigned long long g1) {\n" + tg +
         "  auto bronze_body = [&](const bronze_rt::ids& id) {\n    uint32_t pos[" +
         std::to_string(std::max(3 * attribute, 1)) + "];\n" + fill +
         "    bronze_air_thunk(a, pos, tg);\n  };\n"
         "  bronze_rt::" + (k.cooperative ? "run_groups_cooperative" : "run_groups") + "(L, g0, g1, bronze_body);\n}\n"
         "}  // namespace bronze_msl\n";
}

// Each given function constant's value becomes its variable's initializer,
// a constant the optimizer folds through the kernel (as Metal's
// specialization does); a required one without a value is refused, one not
// required stays undefined (is_function_constant_defined is false).
void set_function_constants(const Api& a, LLVMModuleRef m, const std::string& kernel,
                            const std::vector<air::FunctionConstant>& declared,
                            const std::vector<std::pair<std::string, std::string>>& given) {
  for (const air::FunctionConstant& c : declared) {
    const std::string* value = nullptr;
    for (const auto& [name, v] : given)
      if (name == c.name) value = &v;
    const std::string what = "function constant '" + c.name + "' (" + c.type + " [[function_constant(" +
                             std::to_string(c.index) + ")]]) of kernel '" + kernel + "'";
    if (!value) {
      if (c.required) throw ValueError(what + " needs a value: give it with lib.specialize(...)");
      continue;
    }
    LLVMValueRef g = a.LLVMGetNamedGlobal(m, c.global.c_str());
    if (!g) throw ValueError(what + ": its module lacks its variable '" + c.global + "'");
    LLVMTypeRef t = a.LLVMGlobalGetValueType(g);
    LLVMValueRef v = nullptr;
    try {
      if (c.type == "bool") {
        if (*value != "true" && *value != "false" && *value != "1" && *value != "0") throw std::invalid_argument("");
        v = a.LLVMConstInt(t, *value == "true" || *value == "1", 0);
      } else if (c.type == "float" || c.type == "half" || c.type == "double") {
        v = a.LLVMConstReal(t, std::stod(*value));
      } else {
        v = a.LLVMConstInt(t, static_cast<unsigned long long>(std::stoll(*value, nullptr, 0)), 1);
      }
    } catch (const std::exception&) {
      throw ValueError(what + ": '" + *value + "' is not a " + c.type);
    }
    a.LLVMSetInitializer(g, v);
    a.LLVMSetExternallyInitialized(g, 0);
    a.LLVMSetGlobalConstant(g, 1);
  }
}

// The host's target machine, made once (LLVM's targets are registered
// process-wide).
LLVMTargetMachineRef host_machine(const Api& a, std::string& triple) {
  static std::once_flag once;
  std::call_once(once, [&] {
    a.LLVMInitializeX86TargetInfo();
    a.LLVMInitializeX86Target();
    a.LLVMInitializeX86TargetMC();
    a.LLVMInitializeX86AsmPrinter();
  });
  triple = take_message(a, a.LLVMGetDefaultTargetTriple());
  LLVMTargetRef target = nullptr;
  char* error = nullptr;
  if (a.LLVMGetTargetFromTriple(triple.c_str(), &target, &error))
    throw NotSupportedError("LLVM cannot build for this host (" + triple + "): " + take_message(a, error));
  const std::string cpu = take_message(a, a.LLVMGetHostCPUName()), features = take_message(a, a.LLVMGetHostCPUFeatures());
  return a.LLVMCreateTargetMachine(target, triple.c_str(), cpu.c_str(), features.c_str(), kCodeGenLevelAggressive,
                                   kRelocPIC, kCodeModelDefault);
}

}  // namespace

std::string air_unsupported(const air::AirFunction& r) {
  if (!r.unsupported.empty()) return r.unsupported;
  for (const air::AirFunction::Intrinsic& in : r.intrinsics) {
    std::string why;
    if (runtime_function(in, symbol_of(in.name), why).empty()) return in.name + ": " + why;
  }
  for (const KernelParam& p : r.kernel.params)
    if (p.kind == ParamKind::Attribute && !shader::attribute_field(p.attribute))
      return "[[" + p.attribute + "]] is not an attribute bronze knows";
  return "";
}

runtime::ModuleSource lower_air(const air::Function& f, const air::AirFunction& r,
                                const std::vector<std::pair<std::string, std::string>>& constants) {
  const Api& a = require("running an Apple .metallib kernel");
  if (!r.unsupported.empty()) throw NotSupportedError("'" + f.name + "' cannot run: " + r.unsupported);
  Context ctx(a);
  Module m(ctx, f.bitcode, f.bitcode_size, "'" + f.name + "' in the .metallib");

  // air.* declarations -> bronze_air_* functions of the entry's unit.
  std::string functions;
  for (const air::AirFunction::Intrinsic& in : r.intrinsics) {
    const std::string symbol = symbol_of(in.name);
    std::string why;
    const std::string fn = runtime_function(in, symbol, why);
    if (fn.empty())
      throw NotSupportedError("kernel '" + f.name + "' calls " + in.name + ", which bronze's CPU runtime " + why +
                              " (bronze metallib-info FILE lists what each kernel needs)");
    functions += fn;
    if (LLVMValueRef decl = a.LLVMGetNamedFunction(m.get(), in.name.c_str()))
      a.LLVMSetValueName2(decl, symbol.data(), symbol.size());
  }

  set_function_constants(a, m.get(), f.name, r.constants, constants);

  // Threadgroup variables: one per group, and a group runs on one OS thread.
  for (LLVMValueRef g = a.LLVMGetFirstGlobal(m.get()); g; g = a.LLVMGetNextGlobal(g))
    if (a.LLVMGetPointerAddressSpace(a.LLVMTypeOf(g)) == 3) {
      a.LLVMSetThreadLocal(g, 1);
      a.LLVMSetThreadLocalMode(g, kLocalDynamicTLS);
    }

  LLVMValueRef kernel = a.LLVMGetNamedFunction(m.get(), f.name.c_str());
  if (!kernel) throw ValueError("'" + f.name + "': its module does not define it");
  Module thunk(ctx, thunk_ir(a, kernel, f.name, r.kernel), "'" + f.name + "''s thunk");
  std::string triple;
  LLVMTargetMachineRef tm = host_machine(a, triple);
  std::unique_ptr<std::remove_pointer_t<LLVMTargetMachineRef>, void (*)(LLVMTargetMachineRef)> owned(
      tm, a.LLVMDisposeTargetMachine);
  LLVMTargetDataRef layout = a.LLVMCreateTargetDataLayout(tm);
  const std::string dl = take_message(a, a.LLVMCopyStringRepOfTargetData(layout));
  a.LLVMDisposeTargetData(layout);
  for (LLVMModuleRef mod : {m.get(), thunk.get()}) {
    a.LLVMSetTarget(mod, triple.c_str());
    a.LLVMSetDataLayout(mod, dl.c_str());
  }
  if (a.LLVMLinkModules2(m.get(), thunk.release()))
    throw Error("'" + f.name + "': LLVM could not link its thunk (" + ctx.take_errors() + ")");
  a.LLVMSetLinkage(kernel, kInternalLinkage);  // inlined into the thunk, never exported
  char* message = nullptr;
  if (a.LLVMVerifyModule(m.get(), kReturnStatusAction, &message))
    throw Error("'" + f.name + "' lowered for the CPU is not valid LLVM IR: " + take_message(a, message));
  take_message(a, message);
  LLVMPassBuilderOptionsRef options = a.LLVMCreatePassBuilderOptions();
  LLVMErrorRef err = a.LLVMRunPasses(m.get(), "default<O2>", tm, options);
  a.LLVMDisposePassBuilderOptions(options);
  if (err) {
    char* e = a.LLVMGetErrorMessage(err);
    std::string why = e ? e : "";
    a.LLVMDisposeErrorMessage(e);
    throw Error("'" + f.name + "': LLVM's optimizer failed: " + why);
  }
  LLVMMemoryBufferRef obj = nullptr;
  if (a.LLVMTargetMachineEmitToMemoryBuffer(tm, m.get(), kObjectFile, &message, &obj))
    throw Error("'" + f.name + "': LLVM could not build it for " + triple + ": " + take_message(a, message));
  runtime::ModuleSource out;
  out.objects.emplace_back("air_kernel.o", std::string(a.LLVMGetBufferStart(obj), a.LLVMGetBufferSize(obj)));
  a.LLVMDisposeMemoryBuffer(obj);
  out.code = entry_source(r.kernel, functions);
  out.filename = f.name + ".metallib";
  out.headers = {{"bronze_metal.h", embedded::bronze_metal_h}, {"launch_abi.h", embedded::launch_abi_h}};
  // Metal's math modes are in the AIR (air.fast_* or not): the entry's own
  // code (positions, conversions) is exact.
  out.math_mode = runtime::MathMode::Safe;
  return out;
}

}  // namespace bronze::cpu
