#include "backends/cuda/metal/cuda_codegen.hpp"

namespace bronze::cuda {
using namespace shader;  // the front end's parse is this generator's input

namespace {
// From the parse's tokens (the unit is lexed once).
bool mentions(const ParsedSource& ps, const std::string& name) {
  for (const Token& t : ps.tokens)
    if (t.kind == Token::Ident && t.text == name) return true;
  return false;
}
}  // namespace

std::string generate(const std::string& unit, const ParsedSource& ps, const RewriteOptions& options) {
  std::string body = rewrite_body(unit, ps, options, {"__shared__", true});
  std::string out = binding_plans(ps, options);
  for (std::size_t k = 0; k < ps.kernels.size(); ++k) {
    if (!options.has_entry(k)) continue;
    const ParsedKernel& pk = ps.kernels[k];
    // One entry parameter per buffer and value, in entry order
    // (rewrite.hpp's entry_position; the runtime passes zeros for those a
    // function constant removed): buffers and arrays as pointers
    // (bronze_rt::slot_t), values by value in kernel parameter space, read
    // through the constant cache (`constant T&` binds to it).
    std::string params = "const bronze_gpu_launch L", args;
    for (std::size_t i = 0, j = 0; i < pk.params.size(); ++i) {
      const ParsedParam& p = pk.params[i];
      std::string e, P = param_type(k, i), present = present_expr(pk, i);
      switch (p.info.kind) {
        case ParamKind::Buffer:
        case ParamKind::Scalar: {
          const std::string a = "a" + std::to_string(j++);
          const bool by_value = p.info.by_value;
          params += std::string(by_value ? ", bronze_rt::value_t<" : ", bronze_rt::slot_t<") + P + ">" +
                    (options.restrict_read_only && p.info.read_only && !by_value ? " __restrict__" : "") + " " + a;
          e = by_value ? "bronze_rt::value_if<" + P + ", " + present + ">(" + a + ")"
                       : "bronze_rt::from_slot_if<" + P + ", " + present + ">(" + a + ")";
          break;
        }
        case ParamKind::ThreadgroupBuffer:
          e = "(" + P + ")bronze_rt::tg_buffer(bronze_rt::plan_threadgroup_index(" + plan_name(pk) + ", " +
              std::to_string(i) + "), L)";
          break;
        case ParamKind::Attribute: e = attribute_expr(k, i, p.info); break;
      }
      args += (i ? ", " : "") + e;
    }
    out += "extern \"C\" __global__ void " + entry_symbol(k) + "(" + params + ") {\n"
           "  bronze_rt::ids id;\n"
           "  if (!bronze_rt::make_ids(L, id)) return;\n"
           "  (" + pk.callee + ")(" + args + ");\n}\n";
    out += "extern \"C\" __device__ const unsigned long long " + layout_symbol(k) + "[] = " +
           layout_initializer(pk, k) + ";\n";
    if (options.carve_threadgroup) {  // where threadgroup buffers begin in dynamic shared memory
      std::string tg = "0";
      for (const std::string& e : pk.threadgroup_sizes) tg += " + bronze_rt::tg_round(" + e + ")";
      out += "extern \"C\" __device__ const unsigned long long " + tgmem_symbol(k) + " = " + tg + ";\n";
    }
  }
  // simdgroup_matrix is held in tensor-core fragments unless the unit reads
  // Apple's per-lane layout (bronze_metal.h).
  return generated_file(body, out, mentions(ps, "thread_elements") ? "#define BRONZE_SGM_THREAD_ELEMENTS\n" : "");
}

}  // namespace bronze::cuda
