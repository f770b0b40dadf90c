#include "air/air_module.hpp"

#include <algorithm>
#include <optional>

#include "bronze/error.hpp"

namespace bronze::air {
namespace {

using jit::llvm::LLVMValueRef;

// Reading AIR's metadata through the C API: nodes, strings and integers.
struct Metadata {
  const jit::llvm::Api& a;
  std::vector<LLVMValueRef> ops(LLVMValueRef node) const {
    if (!node || !a.LLVMIsAMDNode(node)) return {};
    std::vector<LLVMValueRef> v(a.LLVMGetMDNodeNumOperands(node));
    a.LLVMGetMDNodeOperands(node, v.data());
    return v;
  }
  std::optional<std::string> str(LLVMValueRef v) const {
    if (!v) return std::nullopt;
    unsigned n = 0;
    const char* s = a.LLVMGetMDString(v, &n);
    if (!s) return std::nullopt;
    return std::string(s, n);
  }
  std::optional<long long> num(LLVMValueRef v) const {
    if (!v || !a.LLVMIsAConstantInt(v)) return std::nullopt;
    return static_cast<long long>(a.LLVMConstIntGetZExtValue(v));
  }
  std::vector<LLVMValueRef> named(jit::llvm::LLVMModuleRef m, const char* name) const {
    std::vector<LLVMValueRef> v(a.LLVMGetNamedMetadataNumOperands(m, name));
    if (!v.empty()) a.LLVMGetNamedMetadataOperands(m, name, v.data());
    return v;
  }
  std::string name(LLVMValueRef v) const {
    std::size_t n = 0;
    const char* s = a.LLVMGetValueName2(v, &n);
    return s ? std::string(s, n) : std::string();
  }
};

// One argument's node: its number, its role ("air.buffer",
// "air.thread_position_in_grid", ...), then fields: a key and the integers
// (or, for names, the string) after it.
struct ArgNode {
  long long number = -1;
  std::string role;
  std::vector<std::pair<std::string, std::vector<long long>>> fields;
  std::string type_name, arg_name;
  std::string guard;  // the function constant that keeps it, if any
  bool has(const std::string& key) const {
    return std::any_of(fields.begin(), fields.end(), [&](const auto& f) { return f.first == key; });
  }
  long long get(const std::string& key, std::size_t i = 0, long long fallback = -1) const {
    for (const auto& [k, v] : fields)
      if (k == key && i < v.size()) return v[i];
    return fallback;
  }
};

ArgNode read_arg(const Metadata& md, LLVMValueRef node, const std::string& fn) {
  const std::vector<LLVMValueRef> ops = md.ops(node);
  ArgNode a;
  if (ops.size() < 2 || !md.num(ops[0]) || !md.str(ops[1]))
    throw ValueError("'" + fn + "': an argument of its !air.kernel metadata is not AIR's (number, role, fields)");
  a.number = *md.num(ops[0]);
  a.role = *md.str(ops[1]);
  std::size_t first = 2;
  // An argument a function constant guards: !"air.function_constant",
  // !{ptr @predicate, !"bool", !"name"}, then its role and fields.
  if (a.role == "air.function_constant" && ops.size() > 3 && md.str(ops[3])) {
    const std::vector<LLVMValueRef> pred = md.ops(ops[2]);
    a.guard = pred.size() > 2 ? md.str(pred[2]).value_or("") : "";
    a.role = *md.str(ops[3]);
    first = 4;
  }
  for (std::size_t i = first; i < ops.size(); ++i) {
    std::optional<std::string> key = md.str(ops[i]);
    if (!key) continue;  // a node (struct layout, a function constant's predicate): not needed to bind
    if ((*key == "air.arg_type_name" || *key == "air.arg_name") && i + 1 < ops.size()) {
      (*key == "air.arg_name" ? a.arg_name : a.type_name) = md.str(ops[i + 1]).value_or("");
      ++i;
      continue;
    }
    std::vector<long long> values;
    while (i + 1 < ops.size() && md.num(ops[i + 1])) values.push_back(*md.num(ops[++i]));
    a.fields.emplace_back(*key, std::move(values));
  }
  return a;
}

bool collective(const std::string& intrinsic) {
  for (const char* p : {"air.wg.barrier", "air.simdgroup", "air.simd_", "air.quad_"})
    if (intrinsic.rfind(p, 0) == 0) return true;
  return false;
}

}  // namespace

AirFunction reflect(jit::llvm::Context& ctx, const Function& f) {
  const jit::llvm::Api& a = jit::llvm::require("reading an Apple .metallib");
  jit::llvm::Module mod(ctx, f.bitcode, f.bitcode_size, "'" + f.name + "' in the .metallib");
  const Metadata md{a};
  AirFunction out;
  KernelInfo& k = out.kernel;
  k.name = f.name;

  const std::vector<LLVMValueRef> kernels = md.named(mod.get(), "air.kernel");
  if (kernels.empty()) {
    out.unsupported = std::string("a ") + function_type_name(f.type) + " function, not a kernel";
  } else {
    // !{ptr @fn, !{}, !{arg nodes...}}
    const std::vector<LLVMValueRef> entry = md.ops(kernels[0]);
    if (entry.size() < 3) throw ValueError("'" + f.name + "': its !air.kernel metadata is not AIR's");
    std::vector<std::pair<long long, int>> slots;  // (index, param) of the call's arguments
    for (LLVMValueRef node : md.ops(entry[2])) {
      const ArgNode arg = read_arg(md, node, f.name);
      KernelParam p;
      p.name = arg.arg_name.empty() ? "arg" + std::to_string(arg.number) : arg.arg_name;
      p.type = arg.type_name;
      if (arg.role == "air.buffer") {
        // A reference (constant T&: AIR gives its buffer's size) takes a
        // value, as the source path's does: a number, bytes or a tensor.
        p.by_value = arg.has("air.buffer_size");
        p.kind = p.by_value ? ParamKind::Scalar : ParamKind::Buffer;
        p.index = static_cast<int>(arg.get("air.location_index"));
        const long long space = arg.get("air.address_space");
        p.read_only = arg.has("air.read") || space == 2;
        p.size = static_cast<std::size_t>(std::max(0LL, arg.get("air.arg_type_size", 0, 0)));
        slots.emplace_back(p.index, static_cast<int>(k.params.size()));
      } else if (arg.role == "air.threadgroup") {
        p.kind = ParamKind::ThreadgroupBuffer;
        p.index = static_cast<int>(arg.get("air.location_index", 0, 0));
        p.size = static_cast<std::size_t>(std::max(0LL, arg.get("air.arg_type_size", 0, 0)));
      } else if (arg.role.rfind("air.", 0) == 0 && arg.role.find("texture") == std::string::npos &&
                 arg.role != "air.sampler" && !arg.has("air.location_index")) {
        p.kind = ParamKind::Attribute;
        p.attribute = arg.role.substr(4);
      } else {
        if (out.unsupported.empty())
          out.unsupported = "its parameter '" + p.name + "' is a " + arg.role.substr(arg.role.rfind('.') + 1) +
                            ", which bronze does not bind";
        p.kind = ParamKind::Buffer;  // listed, never bound
      }
      out.air_params.push_back({arg.guard, static_cast<int>(arg.get("air.address_space", 0, 0))});
      k.params.push_back(std::move(p));
    }
    for (std::size_t i = 3; i < entry.size(); ++i) {
      const std::vector<LLVMValueRef> ops = md.ops(entry[i]);
      if (ops.size() == 2 && md.str(ops[0]) == std::optional<std::string>("air.max_work_group_size"))
        out.max_threads = static_cast<int>(std::clamp(md.num(ops[1]).value_or(0), 0LL, 1LL << 20));
    }
    std::stable_sort(slots.begin(), slots.end());
    for (const auto& [index, i] : slots) {
      k.params[i].binding = static_cast<int>(k.bound.size());
      k.bound.push_back(i);
    }
  }

  // !{ptr @global, !"type", !"name", i32 index, i1 required}
  for (LLVMValueRef node : md.named(mod.get(), "air.function_constants")) {
    const std::vector<LLVMValueRef> ops = md.ops(node);
    if (ops.size() < 4) continue;
    FunctionConstant c;
    c.global = md.name(ops[0]);
    c.type = md.str(ops[1]).value_or("");
    c.name = md.str(ops[2]).value_or("");
    c.index = static_cast<int>(md.num(ops[3]).value_or(-1));
    c.required = ops.size() > 4 && md.num(ops[4]).value_or(0) != 0;
    out.constants.push_back(std::move(c));
  }

  for (LLVMValueRef fn = a.LLVMGetFirstFunction(mod.get()); fn; fn = a.LLVMGetNextFunction(fn)) {
    std::string name = md.name(fn);
    if (!a.LLVMIsDeclaration(fn) || name.rfind("air.", 0) != 0) continue;
    AirFunction::Intrinsic in;
    for (auto u = a.LLVMGetFirstUse(fn); u; u = a.LLVMGetNextUse(u)) ++in.calls;
    k.cooperative = k.cooperative || collective(name);
    jit::llvm::Signature sig = jit::llvm::signature(a, fn);
    in.result = std::move(sig.result);
    in.params = std::move(sig.params);
    in.name = std::move(name);
    out.intrinsics.push_back(std::move(in));
  }

  const auto layout = a.LLVMGetModuleDataLayout(mod.get());
  for (LLVMValueRef g = a.LLVMGetFirstGlobal(mod.get()); g; g = a.LLVMGetNextGlobal(g))
    if (a.LLVMGetPointerAddressSpace(a.LLVMTypeOf(g)) == 3)
      out.threadgroup_bytes += a.LLVMABISizeOfType(layout, a.LLVMGlobalGetValueType(g));
  return out;
}

}  // namespace bronze::air
