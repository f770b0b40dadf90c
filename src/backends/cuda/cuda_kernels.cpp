#include "backends/cuda/cuda_kernels.hpp"

#include "backends/cuda/nvrtc.hpp"
#include "bronze/error.hpp"
#include "shader/metal_headers.hpp"

namespace bronze::cuda {
namespace {

// Device-side helpers shared by every generated kernel. The 16-bit formats
// convert with the same integer round-to-nearest-even as the CPU (dtype.hpp),
// so conversions agree bit for bit.
const char* kPrelude = R"CUDA(
typedef long long i64;
typedef unsigned long long u64;
typedef unsigned int u32;
typedef unsigned short u16;
struct Geometry { int nd; i64 n; i64 shape[8]; i64 stride[3][8]; };
struct half_t { u16 bits; };
struct bf16_t { u16 bits; };
__device__ inline float f32_of(half_t h) {
  u32 sign = ((u32)h.bits & 0x8000u) << 16, exp = (h.bits >> 10) & 0x1fu, mant = h.bits & 0x3ffu;
  if (exp == 0x1f) return __uint_as_float(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) return __uint_as_float(sign | __float_as_uint((float)mant * 5.9604644775390625e-8f));
  return __uint_as_float(sign | ((exp + 112) << 23) | (mant << 13));
}
__device__ inline half_t half_of(float f) {
  u32 x = __float_as_uint(f), sign = (x >> 16) & 0x8000u, a = x & 0x7fffffffu;
  half_t h;
  if (a >= 0x7f800000u) { h.bits = (u16)(sign | (a > 0x7f800000u ? 0x7e00u : 0x7c00u)); return h; }
  if (a >= 0x477ff000u) { h.bits = (u16)(sign | 0x7c00u); return h; }
  if (a < 0x38800000u) { h.bits = (u16)(sign | (__float_as_uint(__fadd_rn(__uint_as_float(a), 0.5f)) - 0x3f000000u)); return h; }
  a += 0xc8000fffu + ((a >> 13) & 1u);
  h.bits = (u16)(sign | (a >> 13));
  return h;
}
__device__ inline float f32_of(bf16_t b) { return __uint_as_float((u32)b.bits << 16); }
__device__ inline bf16_t bf16_of(float f) {
  u32 x = __float_as_uint(f);
  bf16_t b;
  b.bits = (x & 0x7fffffffu) > 0x7f800000u ? (u16)((x >> 16) | 0x40u) : (u16)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
  return b;
}
__device__ inline i64 offset_of(const Geometry& g, int k, i64 i) {
  if (g.nd == 1) return i * g.stride[k][0];  // contiguous operands: no index arithmetic
  i64 o = 0;
  for (int d = g.nd - 1; d >= 0; --d) {
    i64 idx = i % g.shape[d];
    i /= g.shape[d];
    o += idx * g.stride[k][d];
  }
  return o;
}
)CUDA";

const char* ctype(DType t) {
  switch (t) {
    case DType::Bool: return "bool";
    case DType::UInt8: return "unsigned char";
    case DType::Int8: return "signed char";
    case DType::Int16: return "short";
    case DType::Int32: return "int";
    case DType::Int64: return "i64";
    case DType::Float16: return "half_t";
    case DType::BFloat16: return "bf16_t";
    case DType::Float32: return "float";
    case DType::Float64: return "double";
  }
  return "?";
}
bool sixteen(DType t) { return t == DType::Float16 || t == DType::BFloat16; }
// The arithmetic type of t (float for the 16-bit formats, int for bool).
const char* acctype(DType t) { return sixteen(t) ? "float" : t == DType::Bool ? "int" : ctype(t); }
// Expression: x (of type t) as its arithmetic type.
std::string load(DType t, const std::string& x) { return sixteen(t) ? "f32_of(" + x + ")" : "(" + std::string(acctype(t)) + ")(" + x + ")"; }
// Expression: the arithmetic value v stored as t.
std::string store(DType t, const std::string& v) {
  if (t == DType::Float16) return "half_of((float)(" + v + "))";
  if (t == DType::BFloat16) return "bf16_of((float)(" + v + "))";
  if (t == DType::Bool) return "((" + v + ") != 0)";
  return "(" + std::string(ctype(t)) + ")(" + v + ")";
}
std::string program(const std::string& body) { return kPrelude + body; }
}  // namespace

Geometry geometry(const std::vector<const runtime::View*>& views) {
  Geometry g;
  g.n = views[0]->numel();
  bool flat = true;
  for (const auto* v : views) flat = flat && v->contiguous();
  if (flat) {  // one dimension: the kernels index every operand by i
    g.nd = 1;
    g.shape[0] = g.n;
    for (std::size_t k = 0; k < views.size(); ++k) g.stride[k][0] = 1;
    return g;
  }
  const auto& shape = views[0]->shape;
  if (shape.size() > 8) throw NotSupportedError("CUDA tensor kernels take at most 8 dimensions");
  g.nd = static_cast<int>(shape.size());
  for (int d = 0; d < g.nd; ++d) {
    g.shape[d] = shape[d];
    for (std::size_t k = 0; k < views.size(); ++k) g.stride[k][d] = views[k]->strides[d];
  }
  return g;
}

std::vector<char> compile_tensor_kernel(const std::string& source, int arch, bool exact_fp) {
  std::vector<std::string> opts;
  if (exact_fp) opts.push_back("--fmad=false");  // no contraction: the CPU's rounding, step for step
  return compile_cubin(source,
                       {{"philox.hpp", shader::embedded::philox_hpp},
                        {"ziggurat_tables.hpp", shader::embedded::ziggurat_tables_hpp}},
                       arch, opts);
}

CUfunction KernelCache::get(const std::string& source, bool exact_fp) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string key = (exact_fp ? "exact\n" : "") + source;
  auto it = fns_.find(key);
  if (it != fns_.end()) return it->second;
  std::vector<char> cubin = compile_tensor_kernel(source, arch_, exact_fp);
  CUmodule m = nullptr;
  check(driver()->cuModuleLoadData(&m, cubin.data()), "cuModuleLoadData");
  CUfunction f = nullptr;
  check(driver()->cuModuleGetFunction(&f, m, "k"), "cuModuleGetFunction");
  fns_[key] = f;  // modules stay loaded for the process
  return f;
}

void KernelCache::launch_1d(CUfunction f, long long n, CUstream s, void** args, long long max_blocks) const {
  const unsigned threads = 256;
  long long blocks = (n + threads - 1) / threads;
  if (blocks > max_blocks) blocks = max_blocks;  // grid-stride loops cover the rest
  if (blocks < 1) blocks = 1;
  check(driver()->cuLaunchKernel(f, static_cast<unsigned>(blocks), 1, 1, threads, 1, 1, 0, s, args, nullptr),
        "cuLaunchKernel");
}

#define BRONZE_GRID_LOOP "for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < g.n; i += (i64)gridDim.x * blockDim.x)"

std::string copy_source(DType dst, DType src) {
  std::string value = dst == src ? "x" : store(dst, load(src, "x"));
  if (!sixteen(dst) && !sixteen(src) && dst != DType::Bool && src != DType::Bool && dst != src)
    value = "(" + std::string(ctype(dst)) + ")x";  // integer and float conversions as C++ does them
  return program(std::string("extern \"C\" __global__ void k(") + ctype(dst) + "* d, const " + ctype(src) +
                 "* s, Geometry g) {\n  " BRONZE_GRID_LOOP " {\n    " + ctype(src) +
                 " x = s[offset_of(g, 1, i)];\n    d[offset_of(g, 0, i)] = " + value + ";\n  }\n}\n");
}

std::string binary_source(DType t, runtime::BinaryOp op, bool scalar_operand, bool vectorized) {
  const char* expr = nullptr;
  switch (op) {
    case runtime::BinaryOp::Add: expr = "x + y"; break;
    case runtime::BinaryOp::Sub: expr = "x - y"; break;
    case runtime::BinaryOp::Mul: expr = "x * y"; break;
    case runtime::BinaryOp::Div: expr = "x / y"; break;
    case runtime::BinaryOp::RSub: expr = "y - x"; break;
    case runtime::BinaryOp::RDiv: expr = "y / x"; break;
  }
  std::string A = acctype(t), T = ctype(t);
  std::string scalar = "(" + A + ")(" + std::string(is_floating(t) ? "yf" : "yi") + ")";
  // One element: x and y of type A from the T expressions xa and yb, stored to `to`.
  auto element = [&](const std::string& to, const std::string& xa, const std::string& yb) {
    return A + " x = " + load(t, xa) + ";\n    " + A + " y = " + (scalar_operand ? scalar : load(t, yb)) + ";\n    " +
           to + " = " + store(t, expr) + ";";
  };
  std::string head = "extern \"C\" __global__ void k(" + T + "* o, const " + T + "* a, const " + T +
                     "* b, double yf, i64 yi, Geometry g) {\n";
  if (!vectorized)
    return program(head + "  " BRONZE_GRID_LOOP " {\n    " +
                   element("o[offset_of(g, 0, i)]", "a[offset_of(g, 1, i)]", "b[offset_of(g, 2, i)]") + "\n  }\n}\n");
  // Contiguous, 16-byte aligned operands: 128-bit loads and stores, then the
  // tail of n % W elements one by one.
  return program("struct __align__(16) V { " + T + " e[16 / sizeof(" + T + ")]; };\n" + head +
                 "  const int W = 16 / sizeof(" + T + ");\n"
                 "  const i64 nv = g.n / W, step = (i64)gridDim.x * blockDim.x, tid = blockIdx.x * (i64)blockDim.x + threadIdx.x;\n"
                 "  for (i64 j = tid; j < nv; j += step) {\n"
                 "    V va = ((const V*)a)[j], vb" + (scalar_operand ? "" : " = ((const V*)b)[j]") + ", r;\n"
                 "    for (int l = 0; l < W; ++l) {\n    " + element("r.e[l]", "va.e[l]", "vb.e[l]") + "\n    }\n"
                 "    ((V*)o)[j] = r;\n  }\n"
                 "  for (i64 i = nv * W + tid; i < g.n; i += step) {\n    " + element("o[i]", "a[i]", "b[i]") + "\n  }\n}\n");
}

std::string fill64_source() {
  return program("extern \"C\" __global__ void k(u64* d, u64 v, Geometry g) {\n  " BRONZE_GRID_LOOP " d[i] = v;\n}\n");
}

std::string arange_source(DType t) {
  return program("extern \"C\" __global__ void k(" + std::string(ctype(t)) +
                 "* o, double start, double step, Geometry g) {\n  " BRONZE_GRID_LOOP " o[i] = " +
                 store(t, "start + (double)i * step") + ";\n}\n");
}

// The CPU's mapping (philox.hpp, cpu_kernels.cpp random()), one thread per
// Philox block: the same seed and offset give the same numbers. A thread
// makes its block's `per` elements at once and writes them with one vector
// store when they are all in range: per * sizeof(T) is 4 to 16 bytes and the
// output is contiguous. Float normals read the ziggurat's layers from a copy
// in shared memory (2 KB): four random lookups a block.
std::string random_source(DType t, runtime::RandomKind kind, bool wide) {
  const std::string per = wide ? "2" : "4", T = ctype(t);
  std::string setup;  // before the grid loop
  std::string make;   // fills double/i64 v[per] from block r
  switch (kind) {
    case runtime::RandomKind::Uniform:
      make = wide ? "    for (int l = 0; l < 2; ++l) v[l] = a + philox::uniform_f64(r.v[2 * l], r.v[2 * l + 1]) * (b - a);\n"
                  : "    for (int l = 0; l < 4; ++l) v[l] = a + (double)philox::uniform_f32(r.v[l]) * (b - a);\n";
      break;
    case runtime::RandomKind::Normal:  // wide: double Box-Muller, the first normal of each pair; else float throughout
      make = wide ? "    double s0, s1;\n    box_muller(r.v[0], r.v[1], &v[0], &s0);\n    box_muller(r.v[2], r.v[3], &v[1], &s1);\n"
                    "    v[0] = a + b * v[0]; v[1] = a + b * v[1];\n"
                  : "    for (int l = 0; l < 4; ++l)\n"
                    "      v[l] = (double)((float)a + (float)b * philox::normal_f32(r.v[l], layers, seed, base + (u64)blk, l));\n";
      if (!wide)
        setup = "  __shared__ philox::ZigLayer layers[256];\n"
                "  for (int l = threadIdx.x; l < 256; l += blockDim.x) layers[l] = philox::kZigLayers[l];\n"
                "  __syncthreads();\n";
      break;
    case runtime::RandomKind::Int:
      make = std::string("    for (int l = 0; l < ") + per + "; ++l) v[l] = low + (i64)(" +
             (wide ? "((u64)r.v[2 * l] << 32 | r.v[2 * l + 1])" : "(u64)r.v[l]") + " % (u64)(high - low));\n";
      break;
  }
  const char* vt = kind == runtime::RandomKind::Int ? "i64" : "double";
  return program(std::string("#define BRONZE_PHILOX_FN __device__ inline\n"
                             "#define BRONZE_PHILOX_COLD_FN __device__ __noinline__\n"
                             "#define BRONZE_PHILOX_TABLE __device__ const\n#include \"philox.hpp\"\n"
                             "namespace philox = bronze::philox;\n"
                             "__device__ inline void box_muller(unsigned x0, unsigned x1, double* n0, double* n1) {\n"
                             "  double u1 = philox::uniform_f32_open0(x0), u2 = philox::uniform_f32(x1);\n"
                             "  double r = sqrt(-2.0 * log(u1)), s, c;\n"
                             "  sincos(6.283185307179586476925286766559 * u2, &s, &c);\n"
                             "  *n0 = r * c;\n  *n1 = r * s;\n}\n"
                             "struct __align__(" + per + " * sizeof(" + T + ")) Out { " + T + " e[" + per + "]; };\n"
                             "extern \"C\" __global__ void k(") +
                 T + "* o, u64 seed, u64 base, double a, double b, i64 low, i64 high, Geometry g) {\n"
                 "  const i64 blocks = (g.n + " + per + " - 1) / " + per + ";\n"
                 "  const bool aligned = ((u64)o % sizeof(Out)) == 0;\n" + setup +
                 "  for (i64 blk = blockIdx.x * (i64)blockDim.x + threadIdx.x; blk < blocks; blk += (i64)gridDim.x * blockDim.x) {\n"
                 "    philox::U32x4 r = philox::block(seed, base + (u64)blk);\n    " + vt + " v[" + per + "];\n" + make +
                 "    Out w;\n    for (int l = 0; l < " + per + "; ++l) w.e[l] = " + store(t, "v[l]") + ";\n"
                 "    const i64 i0 = blk * " + per + ";\n"
                 "    if (aligned && i0 + " + per + " <= g.n) {\n      *(Out*)(o + i0) = w;\n    } else {\n"
                 "      for (int l = 0; l < " + per + " && i0 + l < g.n; ++l) o[i0 + l] = w.e[l];\n    }\n  }\n}\n");
}

}  // namespace bronze::cuda
