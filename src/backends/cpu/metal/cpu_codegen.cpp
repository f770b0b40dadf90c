#include "backends/cpu/metal/cpu_codegen.hpp"

namespace bronze::cpu {
using namespace shader;  // the front end's parse is this generator's input

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

// The argument kernel k's parameter i gets from the launch: its argument
// slot `a` in entry order (rewrite.hpp's entry_position); absent where its
// function constant removes it.
std::string arg_expr(const ParsedKernel& pk, std::size_t k, std::size_t i, bool wrap) {
  const ParsedParam& p = pk.params[i];
  const KernelParam& info = p.info;
  std::string P = param_type(k, i), j = std::to_string(entry_position(pk, i)), present = present_expr(pk, i);
  switch (info.kind) {
    case ParamKind::Buffer:
    case ParamKind::Scalar:
      if (checked(p, wrap))
        return "bronze_rt::make_if<" + P + ", " + present + ">([&] { return bronze_rt::bounded<" + P + ">(a[" + j +
               "], L->arg_bytes[" + j + "], \"" + info.name + "\", L->fault); })";
      return "bronze_rt::arg_if<" + P + ", " + present + ">(a[" + j + "])";
    case ParamKind::ThreadgroupBuffer:  // this OS thread's buffer, found once per entry call (threadgroup_buffers)
      return "(" + P + ")bronze_tg" + std::to_string(i);
    case ParamKind::Attribute:
      return attribute_expr(k, i, info);
  }
  return "";
}
// The entry's threadgroup buffers, each the calling OS thread's (the
// runtime's memory, launch_abi.h), fetched before the loops over the groups.
std::string threadgroup_buffers(const ParsedKernel& pk) {
  std::string out;
  for (std::size_t i = 0; i < pk.params.size(); ++i)
    if (pk.params[i].info.kind == ParamKind::ThreadgroupBuffer)
      out += "  void* bronze_tg" + std::to_string(i) + " = bronze_rt::tg_buffer(bronze_rt::plan_threadgroup_index(" +
             plan_name(pk) + ", " + std::to_string(i) + "), L);\n";
  return out;
}
}  // namespace

std::string generate(const std::string& unit, const ParsedSource& ps, const RewriteOptions& options) {
  const bool validate = options.validate, wrap = options.wraps_buffers();
  std::string body = rewrite_body(unit, ps, options, {"static thread_local", false, false});
  // Only the entries are exported (-fvisibility=hidden): kernel functions
  // that cannot be interposed are inlined into the loops and vectorized.
  std::string out = binding_plans(ps, options);
  for (std::size_t k = 0; k < ps.kernels.size(); ++k) {
    if (!options.has_entry(k) || options.check_only) continue;
    const ParsedKernel& pk = ps.kernels[k];
    std::string args;
    for (std::size_t i = 0; i < pk.params.size(); ++i) args += (i ? ", " : "") + arg_expr(pk, k, i, wrap);
    std::string flat;
    if (flat_loop_ok(pk)) {
      std::string hoist, fargs;
      for (std::size_t i = 0; i < pk.params.size(); ++i) {
        const ParsedParam& p = pk.params[i];
        std::string v = "a" + std::to_string(i);
        if (p.info.kind != ParamKind::Attribute) {
          hoist += "    " + param_type(k, i) + " " + v + " = " + arg_expr(pk, k, i, wrap) + ";\n";
          fargs += (i ? ", " : "") + v;
        } else {
          fargs += std::string(i ? ", " : "") + "bronze_rt::dim<" + param_type(k, i) + ">(uint3((uint)i, 0u, 0u))";
        }
      }
      flat = "  if (L->grid[1] == 1 && L->grid[2] == 1) {\n" + hoist +
             "    uint64_t begin = g0 * L->group[0], end = g1 * L->group[0];\n"
             "    if (end > L->grid[0]) end = L->grid[0];\n"
             "    for (uint64_t i = begin; i < end; ++i) (" + pk.callee + ")(" + fargs + ");\n"
             "    return;\n  }\n";
    }
    out += "extern \"C\" BRONZE_EXPORT void " + entry_symbol(k) +
           "(void* const* a, const bronze_cpu_launch* L, unsigned long long g0, unsigned long long g1) {\n"
           "  (void)a;\n" + (validate ? "  bronze_rt::validated_fault = L->fault;\n" : "") + flat + threadgroup_buffers(pk) +
           "  auto bronze_body = [&](const bronze_rt::ids& id) { (void)id; (" + pk.callee + ")(" + args + "); };\n"
           "  bronze_rt::" + (pk.info.cooperative ? "run_groups_cooperative" : "run_groups") +
           "(L, g0, g1, bronze_body);\n}\n";
    // constexpr: the compiler evaluates the table (a slot it cannot
    // evaluate is an error here, never code that runs when the module loads).
    out += "extern \"C\" BRONZE_EXPORT constexpr unsigned long long " + layout_symbol(k) + "[] = " +
           layout_initializer(pk, k) + ";\n";
    std::string tg = "0";
    for (const std::string& e : pk.threadgroup_sizes) tg += " + " + e;
    out += "extern \"C\" BRONZE_EXPORT const unsigned long long " + tgmem_symbol(k) + " = " + tg + ";\n";
    out += max_threads_decl(pk, k);
    out += "extern \"C\" BRONZE_EXPORT const unsigned long long " + max_threads_symbol(k) + " = " +
           (pk.max_threads.empty() ? "0" : max_threads_name(pk, k)) + ";\n";
  }
  return generated_file(body, out, "#define BRONZE_EXPORT __attribute__((visibility(\"default\")))\n");
}

}  // namespace bronze::cpu
