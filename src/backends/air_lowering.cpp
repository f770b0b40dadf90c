#include "backends/air_lowering.hpp"

#include <algorithm>
#include <cctype>
#include <optional>
#include <stdexcept>

#include "bronze/error.hpp"
#include "shader/parser.hpp"

namespace bronze::backends {
namespace {

using namespace jit::llvm;

// What an air.* intrinsic is in bronze's Metal runtime: a C++ body over its
// arguments x0, x1, ... (ARGS stands for all of them; returning a value of
// the intrinsic's type R, whose scalar is E; P0 is the pointee of its first
// pointer, from the name's "p1f32"), through bronze_metal.h's functions, so
// AIR computes as compiled source does. Matched on the name after "air." up
// to its type suffix; an intrinsic not listed is refused, never guessed.
//
// A lowering whose body starts with "ir:" is the adapter's own body in IR
// over %x0, %x1, ... ($T: the result's LLVM type), with no C++ function: what
// the optimizer must see through (function-constant predicates, which
// Apple's static initializers compute; uniformity assertions).
struct Lowering {
  std::string name, body;
};
const std::vector<Lowering>& lowerings() {
  static const std::vector<Lowering> table = [] {
    std::vector<Lowering> t = {
        {"wg.barrier", "threadgroup_barrier(mem_flags::mem_threadgroup);"},
        {"simdgroup.barrier", "simdgroup_barrier(mem_flags::mem_none);"},
        {"fma", "return metal::fma(ARGS);"},
        {"min", "return x0 < x1 ? x0 : x1;"},
        {"max", "return x0 < x1 ? x1 : x0;"},
        {"clamp", "return x0 < x1 ? x1 : x2 < x0 ? x2 : x0;"},
        {"abs", "return metal::abs(x0);"},
        {"dot", "return metal::dot(ARGS);"},
        {"ldexp", "return metal::ldexp(ARGS);"},
        {"convert", "return bronze_air_convert<R>(x0);"},
        {"normalize_function_constant_predicate", "ir:  %c = icmp ne $T %x0, 0\n  %r = zext i1 %c to $T\n  ret $T %r\n"},
        // Apple's compiler states a value is the same in every thread, for
        // llvm.assume: it is, or the program is wrong on the Mac too.
        {"is_uniform", "ir:  ret i1 true\n"},
        {"get_simdgroup_size", "ir:  ret $T 32\n"},  // a simdgroup is 32 lanes on every backend
        // (pointer, value, order, scope, volatile): the old value.
        {"atomic.global.add", "return atomic_fetch_add_explicit((bronze_atomic<R>*)x0, x1, memory_order_relaxed);"},
        {"atomic.local.add", "return atomic_fetch_add_explicit((bronze_atomic<R>*)x0, x1, memory_order_relaxed);"},
        // A simdgroup matrix is the lane's two elements in Apple's layout.
        {"simdgroup_matrix_8x8_multiply_accumulate", "return bronze_rt::sgm_multiply<E>(ARGS);"},
        {"simdgroup_matrix_8x8_init_filled", "return R(E(x0));"},
        // (pointer, elements per row, origin, transpose)
        {"simdgroup_matrix_8x8_load",
         "R m;\n  for (uint j = 0; j < 2; ++j) m[j] = E(((const P0*)x0)[bronze_rt::sgm_offset(j, x1, ulong2(x2), x3)]);\n"
         "  return m;"},
        {"simdgroup_matrix_8x8_store",
         "for (uint j = 0; j < 2; ++j) ((P0*)x1)[bronze_rt::sgm_offset(j, x2, ulong2(x3), x4)] = P0(x0[j]);"},
    };
    // Collectives, as Metal names them.
    for (const char* n : {"simd_sum", "simd_product", "simd_max", "simd_min", "simd_prefix_inclusive_sum",
                          "simd_prefix_exclusive_sum", "simd_prefix_inclusive_product", "simd_prefix_exclusive_product",
                          "simd_all", "simd_any", "simd_broadcast_first", "quad_sum", "quad_product", "quad_max",
                          "quad_min", "quad_prefix_inclusive_sum", "quad_prefix_exclusive_sum", "quad_all", "quad_any",
                          "simd_shuffle", "simd_shuffle_down", "simd_shuffle_up", "simd_shuffle_xor", "simd_broadcast",
                          "simd_shuffle_and_fill_up", "simd_shuffle_and_fill_down", "simd_shuffle_rotate_up",
                          "simd_shuffle_rotate_down", "quad_shuffle", "quad_shuffle_down", "quad_shuffle_up",
                          "quad_shuffle_xor", "quad_broadcast"})
      t.push_back({n, std::string("return metal::") + n + "(ARGS);"});
    // Math with a precise and a fast form: air.NAME and air.fast_NAME.
    for (const char* n : {"exp", "exp2", "exp10", "log", "log2", "log10", "sin", "cos", "tan", "asin", "acos", "atan",
                          "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "sqrt", "rsqrt", "floor", "ceil",
                          "round", "rint", "trunc", "fabs", "pow", "powr"}) {
      t.push_back({n, std::string("return metal::precise::") + n + "(ARGS);"});
      t.push_back({std::string("fast_") + n, std::string("return metal::fast::") + n + "(ARGS);"});
    }
    for (const char* n : {"fmax", "fmin", "atan2", "fmod", "copysign", "fdim"}) {
      t.push_back({n, std::string("return metal::") + n + "(ARGS);"});
      t.push_back({std::string("fast_") + n, std::string("return metal::") + n + "(ARGS);"});
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

// The C++ type of an LLVM scalar type ("" when none); `is_signed` chooses
// for integers.
std::string scalar_type(const std::string& llvm, bool is_signed) {
  if (llvm == "float" || llvm == "double" || llvm == "half" || llvm == "bfloat") return llvm;
  if (llvm == "i1") return "bool";
  for (int bits : {8, 16, 32, 64})
    if (llvm == "i" + std::to_string(bits)) return (is_signed ? "int" : "uint") + std::to_string(bits) + "_t";
  return "";
}

// How one value of an intrinsic's call crosses into the C++ function that
// implements it (compiled by the backend's compiler: the host's, NVRTC).
// Their conventions and LLVM's agree on float, double, i32, i64 and
// pointers (Direct, Pointer). Narrower integers arrive with undefined upper
// bits (LLVM's call sets no zeroext), and what half and bfloat are depends
// on the compiler: those go as 32 zero-extended bits (Wide, Bits). Vectors
// go through memory. A simdgroup matrix (<64 x T>, Matrix) is the lane's two
// elements of it, taken out and put back by element: the other 62 are never
// moved (and a 64-wide vector in memory is what NVPTX handles worst).
struct Crossing {
  enum Kind { Direct, Wide, Bits, Memory, Matrix, Pointer } kind = Direct;
  std::string llvm;       // the value's LLVM type
  std::string c;          // what the body sees
  std::string elem;       // its scalar's C++ type (a vector's element)
  std::string elem_llvm;  // Matrix: the element's LLVM type
  int lanes = 0;          // Memory, Matrix: the elements the body sees
};

std::optional<Crossing> crossing(const std::string& llvm, bool is_signed) {
  Crossing x;
  x.llvm = llvm;
  if (llvm == "ptr" || llvm.rfind("ptr addrspace(", 0) == 0) {
    x.kind = Crossing::Pointer;
    x.c = x.elem = "void*";
    return x;
  }
  if (llvm.size() > 4 && llvm.front() == '<' && llvm.back() == '>') {
    const std::size_t by = llvm.find(" x ");
    const std::string n = llvm.substr(1, by == std::string::npos ? 0 : by - 1);
    const std::string e = by == std::string::npos ? "" : llvm.substr(by + 3, llvm.size() - by - 4);
    x.elem = scalar_type(e, is_signed);
    x.elem_llvm = e;
    x.lanes = n == "2" || n == "3" || n == "4" ? n[0] - '0' : n == "64" ? 2 : 0;
    if (x.elem.empty() || x.elem == "bool" || !x.lanes) return std::nullopt;
    x.kind = n == "64" ? Crossing::Matrix : Crossing::Memory;
    if (x.kind == Crossing::Matrix && e != "float" && e != "half" && e != "bfloat") return std::nullopt;
    x.c = "metal::vec<" + x.elem + ", " + std::to_string(x.lanes) + ">";
    return x;
  }
  x.c = x.elem = scalar_type(llvm, is_signed);
  if (x.c.empty()) return std::nullopt;
  x.kind = llvm == "half" || llvm == "bfloat"             ? Crossing::Bits
           : llvm == "i1" || llvm == "i8" || llvm == "i16" ? Crossing::Wide
                                                           : Crossing::Direct;
  return x;
}

// The C++ type of the pointee named in an intrinsic's name ("p1f32": float
// in address space 1), for the matrix loads and stores.
std::string pointee(const std::string& op) {
  std::size_t at = 0;
  while ((at = op.find(".p", at)) != std::string::npos) {
    std::size_t t = at + 2;
    while (t < op.size() && std::isdigit(static_cast<unsigned char>(op[t]))) ++t;
    const std::size_t end = op.find('.', t);
    const std::string e = op.substr(t, end == std::string::npos ? std::string::npos : end - t);
    const std::string llvm = e == "f16" ? "half" : e == "f32" ? "float" : e == "bf16" ? "bfloat" : e == "f64" ? "double" : e;
    if (t > at + 2 && !scalar_type(llvm, true).empty()) return scalar_type(llvm, true);
    at = t;
  }
  return "";
}

// An intrinsic as bronze's runtime implements it: `cpp`, the C++
// function `<symbol>_c` (in the entry's unit), and `ir`, the function
// `<symbol>` (the intrinsic's declaration, renamed) that passes its values
// to it as Crossing says, inlined into the kernel. `why` is set, and both
// empty, when the runtime does not implement it yet.
struct RuntimeFunction {
  std::string cpp, ir, why;
};

RuntimeFunction runtime_function(const air::AirFunction::Intrinsic& in, const std::string& symbol) {
  RuntimeFunction out;
  const std::string op = in.name.substr(4);
  const Lowering* l = lowering(op);
  if (!l) {
    out.why = "does not implement yet";
    return out;
  }
  if (l->body.rfind("ir:", 0) == 0) {
    std::string params, body = l->body.substr(3);
    for (std::size_t i = 0; i < in.params.size(); ++i) params += (i ? ", " : "") + in.params[i] + " %x" + std::to_string(i);
    for (std::size_t at; (at = body.find("$T")) != std::string::npos;) body.replace(at, 2, in.result);
    out.ir = "define linkonce_odr hidden " + in.result + " @" + symbol + "(" + params + ") #0 {\n" + body + "}\n";
    return out;
  }
  // Signedness from the name: ".s." signed, ".u." unsigned; a conversion
  // names its result's first ("convert.f.f32.u.i32": to float from uint).
  const bool is_convert = op.rfind("convert.", 0) == 0;
  const std::size_t second = is_convert ? op.find('.', op.find('.', 8) + 1) : std::string::npos;
  auto signed_at = [&](std::size_t from) {
    const std::size_t u = op.find(".u.", from), s = op.find(".s.", from);
    return !(u != std::string::npos && (s == std::string::npos || u < s));
  };
  std::optional<Crossing> ret;
  if (in.result != "void") {
    ret = crossing(in.result, is_convert ? op.compare(8, 2, "u.") != 0 : signed_at(0));
    if (!ret) {
      out.why = "does not take " + in.result + " values yet";
      return out;
    }
  }
  std::string decl, unpack, args, ir_allocas, ir_body, ir_params, ir_args, c_params;
  for (std::size_t i = 0; i < in.params.size(); ++i) {
    const std::optional<Crossing> p = crossing(in.params[i], is_convert ? signed_at(second) : signed_at(0));
    const std::string x = "x" + std::to_string(i), v = "%" + x;
    if (!p) {
      out.why = "does not take " + in.params[i] + " values yet";
      return out;
    }
    const std::string sep = i ? ", " : "";
    args += sep + x;
    ir_params += sep + p->llvm + " " + v;
    switch (p->kind) {
      case Crossing::Direct:
        decl += sep + p->c + " " + x;
        c_params += sep + p->llvm;
        ir_args += sep + p->llvm + " " + v;
        break;
      case Crossing::Pointer:
        decl += sep + "void* " + x;
        c_params += sep + "ptr";
        if (p->llvm == "ptr") {
          ir_args += sep + "ptr " + v;
        } else {
          ir_body += "  " + v + ".p = addrspacecast " + p->llvm + " " + v + " to ptr\n";
          ir_args += sep + "ptr " + v + ".p";
        }
        break;
      case Crossing::Wide:
      case Crossing::Bits:
        decl += sep + "uint32_t " + x + "_w";
        unpack += "  const " + p->c + " " + x + " = " +
                  (p->kind == Crossing::Bits ? "metal::as_type<" + p->c + ">(uint16_t(" + x + "_w))"
                                             : p->c + "(" + x + "_w)") + ";\n";
        if (p->kind == Crossing::Bits) {
          ir_body += "  " + v + ".b = bitcast " + p->llvm + " " + v + " to i16\n";
          ir_body += "  " + v + ".w = zext i16 " + v + ".b to i32\n";
        } else {
          ir_body += "  " + v + ".w = zext " + p->llvm + " " + v + " to i32\n";
        }
        c_params += sep + "i32";
        ir_args += sep + "i32 " + v + ".w";
        break;
      case Crossing::Memory:
        decl += sep + "const " + p->elem + "* " + x + "_m";
        unpack += "  " + p->c + " " + x + ";\n  for (int i = 0; i < " + std::to_string(p->lanes) + "; ++i) " + x +
                  "[i] = " + x + "_m[i];\n";
        ir_allocas += "  " + v + ".m = alloca " + p->llvm + ", align 16\n";
        ir_body += "  store " + p->llvm + " " + v + ", ptr " + v + ".m, align 16\n";
        c_params += sep + "ptr";
        ir_args += sep + "ptr " + v + ".m";
        break;
      case Crossing::Matrix: {  // its elements 0 and 1, as float or as 32 bits
        const bool bits = p->elem_llvm != "float";
        std::string pair;
        for (int j = 0; j < 2; ++j) {
          const std::string e = v + ".e" + std::to_string(j), w = x + "_" + std::to_string(j);
          ir_body += "  " + e + " = extractelement " + p->llvm + " " + v + ", i64 " + std::to_string(j) + "\n";
          if (bits) {
            ir_body += "  " + e + ".b = bitcast " + p->elem_llvm + " " + e + " to i16\n  " + e + ".w = zext i16 " + e +
                       ".b to i32\n";
          }
          decl += (j ? ", " : sep) + std::string(bits ? "uint32_t " : "float ") + w;
          c_params += (j ? ", " : sep) + std::string(bits ? "i32" : "float");
          ir_args += (j ? ", " : sep) + (bits ? "i32 " + e + ".w" : "float " + e);
          pair += (j ? ", " : "") + (bits ? "metal::as_type<" + p->elem + ">(uint16_t(" + w + "))" : w);
        }
        unpack += "  const " + p->c + " " + x + "(" + pair + ");\n";
        break;
      }
    }
  }
  std::string body = l->body;
  for (std::size_t at; (at = body.find("ARGS")) != std::string::npos;) body.replace(at, 4, args);
  if (body.find("P0") != std::string::npos) {
    const std::string p0 = pointee(op);
    if (p0.empty()) {
      out.why = "does not name the type its pointer points to";
      return out;
    }
    for (std::size_t at; (at = body.find("P0")) != std::string::npos;) body.replace(at, 2, p0);
  }

  // The C++ function and the IR adapter's call of it, by what the result is.
  const std::string cfn = symbol + "_c", sep = in.params.empty() ? "" : ", ";
  std::string c_ret = "void", c_result, ir_call, ir_ret = "  ret void\n";
  if (!ret) {
    c_result = "  " + body + "\n";
    ir_call = "  call void @" + cfn + "(" + ir_args + ")\n";
  } else {
    c_result = "  const R v = [&]() -> R {\n  " + body + "\n  }();\n";
    const std::string t = ret->llvm;
    switch (ret->kind) {
      case Crossing::Direct:
      case Crossing::Pointer:
        c_ret = ret->kind == Crossing::Pointer ? "void*" : ret->c;
        c_result += "  return v;\n";
        ir_call = "  %r = call " + t + " @" + cfn + "(" + ir_args + ")\n";
        ir_ret = "  ret " + t + " %r\n";
        break;
      case Crossing::Wide:
      case Crossing::Bits:
        c_ret = "uint32_t";
        c_result += ret->kind == Crossing::Bits ? "  return metal::as_type<uint16_t>(v);\n" : "  return uint32_t(v);\n";
        ir_call = "  %r.w = call i32 @" + cfn + "(" + ir_args + ")\n";
        ir_call += ret->kind == Crossing::Bits ? "  %r.b = trunc i32 %r.w to i16\n  %r = bitcast i16 %r.b to " + t + "\n"
                                               : "  %r = trunc i32 %r.w to " + t + "\n";
        ir_ret = "  ret " + t + " %r\n";
        break;
      case Crossing::Memory:
        decl += sep + ret->elem + "* r_m";
        c_params += sep + "ptr";
        c_result += "  for (int i = 0; i < " + std::to_string(ret->lanes) + "; ++i) r_m[i] = v[i];\n";
        ir_allocas += "  %r.m = alloca " + t + ", align 16\n";
        ir_call = "  call void @" + cfn + "(" + ir_args + sep + "ptr %r.m)\n  %r = load " + t + ", ptr %r.m, align 16\n";
        ir_ret = "  ret " + t + " %r\n";
        break;
      case Crossing::Matrix: {  // its elements 0 and 1 written to two slots, put into a vector
        const std::string e = ret->elem_llvm;
        decl += sep + ret->elem + "* r_m";
        c_params += sep + "ptr";
        c_result += "  r_m[0] = v[0];\n  r_m[1] = v[1];\n";
        ir_allocas += "  %r.m = alloca [2 x " + e + "], align 16\n";
        ir_call = "  call void @" + cfn + "(" + ir_args + sep + "ptr %r.m)\n  %r.p1 = getelementptr " + e +
                  ", ptr %r.m, i64 1\n  %r.0 = load " + e + ", ptr %r.m\n  %r.1 = load " + e + ", ptr %r.p1\n" +
                  "  %r.v = insertelement " + t + " poison, " + e + " %r.0, i64 0\n  %r = insertelement " + t +
                  " %r.v, " + e + " %r.1, i64 1\n";
        ir_ret = "  ret " + t + " %r\n";
        break;
      }
    }
  }
  const std::string c_ret_llvm = c_ret == "void" ? "void" : c_ret == "uint32_t" ? "i32" : ret->kind == Crossing::Pointer ? "ptr" : ret->llvm;
  out.cpp = "extern \"C\" " + c_ret + " " + cfn + "(" + decl + ") {\n" +
            (ret ? "  using R = " + ret->c + ";\n  using E = " + ret->elem + ";\n  (void)sizeof(E);\n" : "") + unpack +
            c_result + "}\n";
  out.ir = "declare " + c_ret_llvm + " @" + cfn + "(" + c_params + ")\n" + "define linkonce_odr hidden " +
           (ret ? ret->llvm : "void") + " @" + symbol + "(" + ir_params + ") #0 {\n" + ir_allocas + ir_body + ir_call +
           ir_ret + "}\n";
  return out;
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
std::string thunk_ir(const Api& a, LLVMValueRef kernel, const std::string& name, const KernelInfo& k,
                     const std::vector<std::string>& initializers) {
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
    // A value (constant T&) comes as a pointer to its bytes, as a buffer does.
    if (p.kind == ParamKind::Buffer || p.kind == ParamKind::ThreadgroupBuffer || p.kind == ParamKind::Scalar) {
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
  std::string declare, init;
  for (const std::string& f : initializers) {
    declare += "declare void @\"" + f + "\"()\n";
    init += "  call void @\"" + f + "\"()\n";
  }
  return declare + "declare void @\"" + name + "\"(" + decl + ")\n\n"
         "define hidden void @bronze_air_thunk(ptr %buffers, ptr %positions, ptr %tg) #1 {\n" + init + body +
         "  call void @\"" + name + "\"(" + call + ")\n  ret void\n}\n";
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

}  // namespace

std::string air_unsupported(const air::AirFunction& r) {
  if (!r.unsupported.empty()) return r.unsupported;
  for (const air::AirFunction::Intrinsic& in : r.intrinsics)
    if (const std::string why = runtime_function(in, symbol_of(in.name)).why; !why.empty()) return in.name + ": " + why;
  for (const KernelParam& p : r.kernel.params)
    if (p.kind == ParamKind::Attribute && !shader::attribute_field(p.attribute))
      return "[[" + p.attribute + "]] is not an attribute bronze knows";
  return "";
}

AirModule::AirModule(const air::Function& f, const air::AirFunction& r,
                     const std::vector<std::pair<std::string, std::string>>& constants)
    : api(require("running an Apple .metallib kernel")), ctx(api), f_(f), r_(r) {
  if (!r.unsupported.empty()) throw NotSupportedError("'" + f.name + "' cannot run: " + r.unsupported);
  module = std::make_unique<Module>(ctx, f.bitcode, f.bitcode_size, "'" + f.name + "' in the .metallib");
  // air.* declarations -> bronze_air_* adapters (beside the thunk) over
  // functions of the entry's unit.
  for (const air::AirFunction::Intrinsic& in : r.intrinsics) {
    const std::string symbol = symbol_of(in.name);
    const RuntimeFunction fn = runtime_function(in, symbol);
    if (!fn.why.empty())
      throw NotSupportedError("kernel '" + f.name + "' calls " + in.name + ", which bronze's runtime " + fn.why +
                              " (bronze metallib-info FILE lists what each kernel needs)");
    functions += fn.cpp;
    adapters_ += fn.ir;
    if (LLVMValueRef decl = api.LLVMGetNamedFunction(module->get(), in.name.c_str()))
      api.LLVMSetValueName2(decl, symbol.data(), symbol.size());
  }
  set_function_constants(api, module->get(), f.name, r.constants, constants);
}

void AirModule::run_initializers_in_thunk() {
  const Api& a = api;
  LLVMValueRef ctors = a.LLVMGetNamedGlobal(module->get(), "llvm.global_ctors");
  if (!ctors) return;
  // [n x { i32 priority, ptr function, ptr data }], in priority order as written.
  LLVMValueRef list = a.LLVMGetInitializer(ctors);
  for (int i = 0, n = list ? a.LLVMGetNumOperands(list) : 0; i < n; ++i) {
    LLVMValueRef entry = a.LLVMGetOperand(list, static_cast<unsigned>(i));
    LLVMValueRef fn = a.LLVMGetNumOperands(entry) > 1 ? a.LLVMGetOperand(entry, 1) : nullptr;
    if (!fn || !a.LLVMIsAFunction(fn)) throw ValueError("'" + f_.name + "': a static initializer that is not a function");
    a.LLVMSetLinkage(fn, kExternalLinkage);  // the thunk's module names it; internal again once linked
    std::size_t len = 0;
    const char* name = a.LLVMGetValueName2(fn, &len);
    initializers_.emplace_back(name, len);
  }
  a.LLVMDeleteGlobal(ctors);
}

void AirModule::edit(const std::function<std::string(std::string)>& rewrite) {
  const std::string text = rewrite(take_message(api, api.LLVMPrintModuleToString(module->get())));
  module = std::make_unique<Module>(ctx, text, "'" + f_.name + "' edited");
}

std::string AirModule::emit(LLVMTargetMachineRef tm, const std::string& triple, int file_type,
                            const std::string& target_name) {
  const Api& a = api;
  LLVMModuleRef m = module->get();
  LLVMValueRef kernel = a.LLVMGetNamedFunction(m, f_.name.c_str());
  if (!kernel) throw ValueError("'" + f_.name + "': its module does not define it");
  // The thunk is "no-builtins" as Apple's functions are: LLVM inlines no
  // such function into one without it, and the kernel must inline.
  Module thunk(ctx, thunk_ir(a, kernel, f_.name, r_.kernel, initializers_) + thunk_extra + adapters_ +
                        "attributes #0 = { alwaysinline nounwind }\nattributes #1 = { nounwind \"no-builtins\" }\n",
               "'" + f_.name + "''s thunk");
  LLVMTargetDataRef layout = a.LLVMCreateTargetDataLayout(tm);
  const std::string dl = take_message(a, a.LLVMCopyStringRepOfTargetData(layout));
  a.LLVMDisposeTargetData(layout);
  for (LLVMModuleRef mod : {m, thunk.get()}) {
    a.LLVMSetTarget(mod, triple.c_str());
    a.LLVMSetDataLayout(mod, dl.c_str());
  }
  if (a.LLVMLinkModules2(m, thunk.release()))
    throw Error("'" + f_.name + "': LLVM could not link its thunk (" + ctx.take_errors() + ")");
  a.LLVMSetLinkage(kernel, kInternalLinkage);  // inlined into the thunk, never exported
  for (const std::string& name : initializers_) a.LLVMSetLinkage(a.LLVMGetNamedFunction(m, name.c_str()), kInternalLinkage);
  char* message = nullptr;
  if (a.LLVMVerifyModule(m, kReturnStatusAction, &message))
    throw Error("'" + f_.name + "' lowered for " + target_name + " is not valid LLVM IR: " + take_message(a, message));
  take_message(a, message);
  LLVMPassBuilderOptionsRef options = a.LLVMCreatePassBuilderOptions();
  LLVMErrorRef err = a.LLVMRunPasses(m, "default<O2>", tm, options);
  a.LLVMDisposePassBuilderOptions(options);
  if (err) {
    char* e = a.LLVMGetErrorMessage(err);
    std::string why = e ? e : "";
    a.LLVMDisposeErrorMessage(e);
    throw Error("'" + f_.name + "': LLVM's optimizer failed: " + why);
  }
  LLVMMemoryBufferRef out = nullptr;
  if (a.LLVMTargetMachineEmitToMemoryBuffer(tm, m, file_type, &message, &out))
    throw Error("'" + f_.name + "': LLVM could not build it for " + target_name + ": " + take_message(a, message));
  std::string bytes(a.LLVMGetBufferStart(out), a.LLVMGetBufferSize(out));
  a.LLVMDisposeMemoryBuffer(out);
  return bytes;
}

std::string air_entry_prelude() {
  // AIR's conversions: float to integer saturates, NaN gives 0 (as Apple
  // GPUs convert); to bool is a comparison with zero.
  return "template <class R, class T> inline R bronze_air_convert(T x) {\n"
         "  if constexpr (metal::is_same_v<R, bool>) return x != T(0);\n"
         "  else if constexpr (metal::is_integral_v<R> && !metal::is_integral_v<T>) {\n"
         "    constexpr bool is_signed = R(-1) < R(0);\n"
         "    constexpr R hi = is_signed ? R(((R(1) << (sizeof(R) * 8 - 2)) - 1) * 2 + 1) : R(~R(0));\n"
         "    constexpr R lo = is_signed ? R(-hi - 1) : R(0);\n"
         "    return x != x ? R(0) : x <= T(lo) ? lo : x >= T(hi) ? hi : R(x);\n"
         "  } else if constexpr (is_vec_<R>::value) {\n"
         "    R r;\n    for (int i = 0; i < vec_traits<R>::n; ++i) r[i] = bronze_air_convert<typename vec_traits<R>::elem>(x[i]);\n"
         "    return r;\n"
         "  } else return R(x);\n}\n"
         "inline void bronze_air_position(uint32_t* p, uint v) { p[0] = v; p[1] = p[2] = 0; }\n"
         "inline void bronze_air_position(uint32_t* p, uint2 v) { p[0] = v.x; p[1] = v.y; p[2] = 0; }\n"
         "inline void bronze_air_position(uint32_t* p, uint3 v) { p[0] = v.x; p[1] = v.y; p[2] = v.z; }\n"
         "extern \"C\" void bronze_air_thunk(void* const* buffers, const uint32_t* positions, void* const* tg);\n";
}

std::string row_thunk_ir(const KernelInfo& k) {
  const int words = air_entry_parts(k).position_words;
  std::string copy, vary;
  for (int j = 0; j < words; ++j) {
    const std::string n = std::to_string(j);
    copy += "  %w" + n + ".at = getelementptr inbounds i32, ptr %positions, i64 " + n + "\n  %w" + n +
            " = load i32, ptr %w" + n + ".at, align 4\n  %p" + n + ".at = getelementptr inbounds i32, ptr %pos, i64 " +
            n + "\n  store i32 %w" + n + ", ptr %p" + n + ".at, align 4\n";
  }
  int attribute = 0;
  for (const KernelParam& p : k.params) {
    if (p.kind != ParamKind::Attribute) continue;
    const std::string w = std::to_string(3 * attribute++);  // the first word: x, or the value
    // Along a row: x of the positions, the index in the group, and what
    // comes from it (shader::attribute_field's); the rest are the group's.
    const std::string& a = p.attribute;
    std::string v;
    if (a == "thread_position_in_grid" || a == "thread_position_in_threadgroup") v = "add i32 %w" + w + ", %i";
    else if (a == "thread_index_in_threadgroup") v = "add i32 %t, 0";
    else if (a == "thread_index_in_simdgroup") v = "and i32 %t, 31";
    else if (a == "simdgroup_index_in_threadgroup") v = "lshr i32 %t, 5";
    else if (a == "thread_index_in_quadgroup") v = "and i32 %t, 3";
    else if (a == "quadgroup_index_in_threadgroup") v = "lshr i32 %t, 2";
    else continue;
    vary += "  %v" + w + " = " + v + "\n  store i32 %v" + w + ", ptr %p" + w + ".at, align 4\n";
  }
  return "define hidden void @bronze_air_row(ptr noalias readonly %buffers, ptr noalias readonly %positions, "
         "ptr noalias readonly %tg, i32 %count, i32 %first) #1 {\n"
         "entry:\n  %pos = alloca [" + std::to_string(words) + " x i32], align 4\n" + copy + "  br label %row\n"
         "row:\n  %i = phi i32 [ 0, %entry ], [ %next, %row ]\n  %t = add i32 %first, %i\n" + vary +
         "  call void @bronze_air_thunk(ptr %buffers, ptr %pos, ptr %tg)\n  %next = add i32 %i, 1\n"
         "  %more = icmp ult i32 %next, %count\n  br i1 %more, label %row, label %done\n"
         "done:\n  ret void\n}\n";
}

AirEntryParts air_entry_parts(const KernelInfo& k) {
  AirEntryParts e;
  int attribute = 0;
  for (const KernelParam& p : k.params) {
    if (p.kind == ParamKind::ThreadgroupBuffer) e.tg_slots = std::max(e.tg_slots, p.index + 1);
    if (p.kind != ParamKind::Attribute) continue;
    const char* field = shader::attribute_field(p.attribute);
    if (!field) throw NotSupportedError("kernel '" + k.name + "': [[" + p.attribute + "]] is not a Metal attribute bronze knows");
    e.positions += "    bronze_air_position(pos + " + std::to_string(3 * attribute++) + ", " + field + ");\n";
  }
  e.position_words = std::max(3 * attribute, 1);
  return e;
}

}  // namespace bronze::backends
