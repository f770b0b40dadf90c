#include "shader/rewrite_cuda.hpp"

#include "shader/rewrite.hpp"

namespace bronze::shader {
namespace {
// The entry's parameter for a binding, and what it passes to the kernel.
void binding_param(const ParsedParam& p, std::string& params, std::string& arg) {
  std::string a = "a" + std::to_string(p.info.binding);
  if (p.info.kind == ParamKind::Buffer || p.pointer) {
    params += ", " + p.cast_type + "* " + a;
    arg = p.pointer ? a : "*" + a;  // device T& binds to the pointed-to element
  } else {
    params += ", " + p.cast_type + " " + a;  // kernel parameter space, read through the constant cache
    arg = a;
  }
}
}  // namespace

std::string rewrite_for_cuda(const std::string& src, const ParsedSource& ps, const std::string& filename) {
  std::string body = rewrite_body(src, ps, Target::Cuda, false);
  std::string out;
  for (std::size_t k = 0; k < ps.kernels.size(); ++k) {
    const ParsedKernel& pk = ps.kernels[k];
    std::string params = "const bronze_rt::launch L";
    std::vector<std::string> bound_args(pk.info.bound.size());
    for (int b = 0; b < pk.info.bindings(); ++b) binding_param(pk.params[pk.info.bound[b]], params, bound_args[b]);
    std::string args;
    for (const ParsedParam& p : pk.params) {
      std::string e;
      switch (p.info.kind) {
        case ParamKind::Buffer:
        case ParamKind::Scalar: e = bound_args[p.info.binding]; break;
        case ParamKind::ThreadgroupBuffer:
          e = "(" + p.cast_type + "*)bronze_rt::tg_buffer(" + std::to_string(p.info.index) + ", L)";
          break;
        case ParamKind::Attribute: e = attribute_expr(p.info); break;
      }
      args += (args.empty() ? "" : ", ") + e;
    }
    out += "extern \"C\" __global__ void " + entry_symbol(k) + "(" + params + ") {\n"
           "  bronze_rt::ids id;\n"
           "  if (!bronze_rt::make_ids(L, id)) return;\n"
           "  " + pk.call + "(" + args + ");\n}\n";
    out += "extern \"C\" __device__ const unsigned long long " + sizes_symbol(k) + "[] = {";
    for (int b : pk.info.bound) out += "sizeof(" + pk.params[b].info.type + "), ";
    out += "0};\n";
  }
  return generated_file(filename, body, out, "");
}

}  // namespace bronze::shader
