#include "backends/cuda/metal/cuda_codegen.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>

namespace bronze::cuda {
using namespace shader;  // the front end's parse is this generator's input

namespace {
// NVRTC refuses non-ASCII identifiers (`kernel void 核`, valid Metal and
// C++): in UTF-8 at all, and as universal character names in device
// functions' names. So each non-ASCII character outside string and character
// literals (where alone the preprocessor lets one stand) becomes
// `bronze_uXXXX_`, the same everywhere in the unit; kernels are found by
// their entries, whose names are ASCII.
std::string ascii_identifiers(const std::string& code) {
  if (std::all_of(code.begin(), code.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; })) return code;
  std::string out;
  out.reserve(code.size() + 64);
  for (std::size_t i = 0; i < code.size();) {
    const unsigned char c = static_cast<unsigned char>(code[i]);
    if (c == '"' || c == '\'') {  // a literal, copied whole (its escapes included)
      std::size_t e = i + 1;
      while (e < code.size() && code[e] != static_cast<char>(c) && code[e] != '\n') e += code[e] == '\\' ? 2 : 1;
      e = std::min(e + 1, code.size());
      out.append(code, i, e - i);
      i = e;
      continue;
    }
    if (c < 0x80) {
      out += code[i++];
      continue;
    }
    const int n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;  // UTF-8 (the preprocessor checked it)
    std::uint32_t cp = n == 1 ? c : c & (0x7F >> n);
    for (int k = 1; k < n && i + k < code.size(); ++k) cp = cp << 6 | (static_cast<unsigned char>(code[i + k]) & 0x3F);
    char buf[24];
    std::snprintf(buf, sizeof buf, "bronze_u%X_", static_cast<unsigned>(cp));
    out += buf;
    i += n;
  }
  return out;
}

// From the parse's tokens (the unit is lexed once).
bool mentions(const ParsedSource& ps, const std::string& name) {
  for (const Token& t : ps.tokens)
    if (t.kind == Token::Ident && t.text == name) return true;
  return false;
}
}  // namespace

std::string generate(const std::string& unit, const ParsedSource& ps, const RewriteOptions& options) {
  std::string body = rewrite_body(unit, ps, options, {"__shared__", true, true});
  std::string out = binding_plans(ps, options);
  for (std::size_t k = 0; k < ps.kernels.size(); ++k) {
    if (!options.has_entry(k) || options.check_only) continue;
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
    out += max_threads_decl(pk, k);
    const std::string bounds = pk.max_threads.empty() ? "" : "__launch_bounds__(" + max_threads_name(pk, k) + ") ";
    out += "extern \"C\" __global__ void " + bounds + entry_symbol(k) + "(" + params + ") {\n"
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
  return ascii_identifiers(
      generated_file(body, out, mentions(ps, "thread_elements") ? "#define BRONZE_SGM_THREAD_ELEMENTS\n" : ""));
}

}  // namespace bronze::cuda
