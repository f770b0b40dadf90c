#include "shader/rewrite_cpu.hpp"

#include "shader/rewrite.hpp"

namespace bronze::shader {
namespace {
// Kernels whose only thread attribute is thread_position_in_grid, on a 1-D
// grid, run as one flat loop over their range with the arguments hoisted:
// the shape the host compiler vectorizes.
bool flat_loop_ok(const ParsedKernel& pk) {
  if (pk.info.cooperative) return false;
  for (const ParsedParam& p : pk.params) {
    if (p.info.kind == ParamKind::ThreadgroupBuffer) return false;
    if (p.info.kind == ParamKind::Attribute && p.info.attribute != "thread_position_in_grid") return false;
  }
  return true;
}

std::string flat_arg_expr(const ParsedParam& p) {
  if (p.info.kind != ParamKind::Attribute) return "a" + std::to_string(p.info.binding);
  int n = vector_components(p.info.type);
  if (n == 1) return "(" + p.info.type + ")(i)";
  return p.info.type + (n == 2 ? "((uint)i, 0u)" : "((uint)i, 0u, 0u)");
}

std::string arg_expr(const ParsedParam& p, bool validate) {
  const KernelParam& k = p.info;
  std::string b = std::to_string(k.binding);
  switch (k.kind) {
    case ParamKind::Buffer:
      if (checked(p, validate))
        return "bronze_bounded<" + p.cast_type + ">((" + p.cast_type + "*)a[" + b + "], L->arg_bytes[" + b +
               "] / sizeof(" + p.cast_type + "), \"" + k.name + "\", L->fault)";
      return p.pointer ? "(" + p.cast_type + "*)a[" + b + "]" : "*(" + p.cast_type + "*)a[" + b + "]";
    case ParamKind::Scalar:
      return p.pointer ? "(" + p.cast_type + "*)a[" + b + "]" : "*(" + p.cast_type + "*)a[" + b + "]";
    case ParamKind::ThreadgroupBuffer:
      return "(" + p.cast_type + "*)bronze_rt::tg_buffer(" + std::to_string(k.index) + ", L)";
    case ParamKind::Attribute:
      return attribute_expr(k);
  }
  return "";
}

std::string hoisted_arg(const ParsedParam& p, bool validate) {
  std::string b = std::to_string(p.info.binding);
  if (checked(p, validate)) return "  auto a" + b + " = " + arg_expr(p, true) + ";\n";
  bool ref = !p.pointer;
  return "  " + p.cast_type + (ref ? "& a" : "* a") + b + " = " + (ref ? "*(" : "(") + p.cast_type + "*)a[" + b + "];\n";
}
}  // namespace

std::string rewrite_for_cpu(const std::string& src, const ParsedSource& ps, const std::string& filename,
                            bool validate) {
  std::string body = rewrite_body(src, ps, Target::Cpu, validate);
  // Only the entries are exported (-fvisibility=hidden): kernel functions
  // that cannot be interposed are inlined into the loops and vectorized.
  std::string out;
  for (std::size_t k = 0; k < ps.kernels.size(); ++k) {
    const ParsedKernel& pk = ps.kernels[k];
    std::string n = std::to_string(k);
    std::string args;
    for (const ParsedParam& p : pk.params) args += (args.empty() ? "" : ", ") + arg_expr(p, validate);
    std::string flat;
    if (flat_loop_ok(pk)) {
      std::string hoist, fargs;
      for (const ParsedParam& p : pk.params) {
        if (p.info.kind != ParamKind::Attribute) hoist += hoisted_arg(p, validate);
        fargs += (fargs.empty() ? "" : ", ") + flat_arg_expr(p);
      }
      flat = "  if (L->grid[1] == 1 && L->grid[2] == 1) {\n" + hoist +
             "    uint64_t begin = g0 * L->group[0], end = g1 * L->group[0];\n"
             "    if (end > L->grid[0]) end = L->grid[0];\n"
             "    for (uint64_t i = begin; i < end; ++i) " + pk.call + "(" + fargs + ");\n"
             "    return;\n  }\n";
    }
    out += "extern \"C\" BRONZE_EXPORT void bronze_entry_" + n +
           "(void* const* a, const bronze_launch* L, uint64_t g0, uint64_t g1) {\n"
           "  (void)a;\n" + flat +
           "  auto f = [&](const bronze_rt::ids& id) { (void)id; " + pk.call + "(" + args + "); };\n"
           "  bronze_rt::" + (pk.info.cooperative ? "run_groups_cooperative" : "run_groups") + "(L, g0, g1, f);\n}\n";
    out += "extern \"C\" BRONZE_EXPORT const unsigned long long bronze_sizes_" + n + "[] = {";
    for (int b : pk.info.bound) out += "sizeof(" + pk.params[b].info.type + "), ";
    out += "0};\n";
    std::string tg = "0";
    for (const std::string& e : pk.threadgroup_sizes) tg += " + " + e;
    out += "extern \"C\" BRONZE_EXPORT const unsigned long long bronze_tgmem_" + n + " = " + tg + ";\n";
  }
  return generated_file(filename, body, out, "#define BRONZE_EXPORT __attribute__((visibility(\"default\")))\n");
}

}  // namespace bronze::shader
