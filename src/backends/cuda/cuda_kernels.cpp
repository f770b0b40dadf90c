#include "backends/cuda/cuda_kernels.hpp"

#include <algorithm>

#include "backends/cuda/nvrtc.hpp"
#include "bronze/error.hpp"
#include "runtime/embedded.hpp"

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
    case DType::UInt16: return "unsigned short";
    case DType::UInt32: return "unsigned int";
    case DType::UInt64: return "unsigned long long";
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
                       {{"philox.hpp", embedded::philox_hpp},
                        {"ziggurat_tables.hpp", embedded::ziggurat_tables_hpp}},
                       arch, opts);
}

CUfunction KernelCache::build(std::uint64_t key, const std::string& source, bool exact_fp) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = fns_.find(key);  // another thread may have built it meanwhile
  if (it != fns_.end()) return it->second;
  std::vector<char> cubin = compile_tensor_kernel(source, arch_, exact_fp);
  CUmodule m = nullptr;
  check(driver()->cuModuleLoadData(&m, cubin.data()), "cuModuleLoadData");
  CUfunction f = nullptr;
  check(driver()->cuModuleGetFunction(&f, m, "k"), "cuModuleGetFunction");
  fns_[key] = f;  // modules stay loaded for the process
  return f;
}

long long KernelCache::resident_blocks(CUfunction f) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = resident_.find(f);
  if (it != resident_.end()) return it->second;
  int per_multiprocessor = 0;
  check(driver()->cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_multiprocessor, f, 256, 0),
        "cuOccupancyMaxActiveBlocksPerMultiprocessor");
  const long long blocks = std::max(1LL, static_cast<long long>(per_multiprocessor) * multiprocessors_);
  resident_.emplace(f, blocks);
  return blocks;
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

std::string fill_source(unsigned bytes) {
  const std::string T = bytes == 1 ? "unsigned char" : bytes == 2 ? "u16" : bytes == 4 ? "u32" : "u64";
  return program("extern \"C\" __global__ void k(" + T + "* d, u64 v, Geometry g) {\n  " BRONZE_GRID_LOOP
                 " d[offset_of(g, 0, i)] = (" + T + ")v;\n}\n");
}

std::string arange_source(DType t, bool integer) {
  // Integers wrap in unsigned arithmetic, as on the CPU (the range was checked).
  const std::string value = integer ? "(long long)((u64)start + (u64)i * (u64)step)" : "start + (double)i * step";
  const std::string number = integer ? "long long" : "double";
  return program("extern \"C\" __global__ void k(" + std::string(ctype(t)) + "* o, " + number + " start, " + number +
                 " step, Geometry g) {\n  " BRONZE_GRID_LOOP " o[i] = " + store(t, value) + ";\n}\n");
}

namespace {
// Writes Out w (PER elements) to block blk: one vector store when all `valid`
// are in range and o is aligned, else element by element with constant
// indices (a variable index would put w in local memory).
const char* kStoreBlock =
    "    if (aligned && valid == PER) {\n"
    "      *(Out*)(o + blk * PER) = w;\n"
    "    } else {\n"
    "#pragma unroll\n"
    "      for (int l = 0; l < PER; ++l)\n"
    "        if (l < valid) o[blk * PER + l] = w.e[l];\n"
    "    }\n";

const char* kPhiloxInclude =
    "#define BRONZE_PHILOX_FN __device__ inline\n"
    "#define BRONZE_PHILOX_COLD_FN __device__ __noinline__\n"
    "#define BRONZE_PHILOX_TABLE __device__ const\n"
    "#include \"philox.hpp\"\n"
    "namespace philox = bronze::philox;\n";

// Normals (philox.hpp's ziggurat), float from 32-bit words (four a Philox
// block), double from 64-bit ones (two). A word's rectangle test is a lookup
// in a shared-memory copy of the layers (the sign folded in). The 1.5% of
// words that fail it take further attempts, about half of them more than
// one; a warp running those in place would wait on its slowest lane every
// iteration (about 15 of a float warp's 1024 words an iteration). Instead a
// warp queues them in a ring (slots from a shared-memory atomic, the count by
// a warp reduction, so the check costs no barrier) and runs one attempt on 32
// of them at a time, every lane busy, re-queuing those that need another;
// they overwrite the placeholders the vector stores wrote. At most 31 wait
// between iterations; a batch runs with at most RING - 32 waiting, so that
// its requeues never overwrite the entries it reads. A word is queued as its
// element alone and drawn again by its first attempt: the main loop then
// keeps no words once tested (with 4 chains, 42 registers for float rather
// than 63, which makes room for 8) and queues a lane's words in one loop
// over its rejected bits.
std::string ziggurat_source(DType t, bool wide, bool standard) {
  const std::string T = ctype(t), W = wide ? "u64" : "u32", F = wide ? "double" : "float",
                    PER = wide ? "2" : "4", layer = wide ? "philox::ZigLayer64" : "philox::ZigLayer",
                    value = wide ? (standard ? "z" : "a + b * z")
                                 : store(t, standard ? "z" : "(float)a + (float)b * z");
  // Word l (a constant) of Philox block r, and the same for a variable l.
  auto word = [&](int l) {
    return wide ? "philox::word64(r.v[" + std::to_string(2 * l) + "], r.v[" + std::to_string(2 * l + 1) + "])"
                : "r.v[" + std::to_string(l) + "]";
  };
  std::string word_l = word(wide ? 1 : 3);
  for (int l = wide ? 0 : 2; l >= 0; --l) word_l = "l == " + std::to_string(l) + " ? " + word(l) + " : " + word_l;
  // The position as a number, exactly: I2FP is one instruction for 23 bits,
  // f64_of_u52 an OR and an add (the CPU's way) for 52.
  const std::string position = wide ? "philox::f64_of_u52(m)" : "__uint2float_rn(m)",
                    mask = wide ? "0xfffffffffffffull" : "0x7fffffu";
  std::string words_loop;
  for (int l = 0; l < (wide ? 2 : 4); ++l)
    words_loop += "      {\n        const " + W + " x = " + word(l) + ";\n"
                  "        const " + layer + " layer = layers[philox::zig_index(x)];\n"
                  "        const " + W + " m = x & " + mask + ";\n"
                  "        const " + F + " z = " + position + " * layer.w;\n"
                  "        vals[c].e[" + std::to_string(l) + "] = " + value + ";\n"
                  "        rejected |= (unsigned)(m >= layer.k) << (PER * c + " + std::to_string(l) + ");\n      }\n";
  return program(std::string(kPhiloxInclude) +
                 "enum { CHAINS = 8, RING = 128, PER = " + PER + " };  // RING: a warp's queue, in entries\n"
                 "typedef " + W + " Word;\ntypedef " + F + " Real;\n"
                 "struct __align__(PER * sizeof(" + T + ")) Out { " + T + " e[PER]; };\n"
                 "// Element i, its current word and the attempt due (0: none yet, the word still to be drawn).\n"
                 "struct __align__(16) Pending { i64 i; Word w; u32 attempt; };\n"
                 "// One attempt at p: its element when it accepts, else p queued again (returns 1).\n"
                 "__device__ __noinline__ unsigned attempt(" + T + "* o, Real a, Real b, u64 seed, u64 base, Pending p,\n"
                 "                                        Pending* queue, unsigned* tail) {\n"
                 "  const u64 counter = base + (u64)(p.i / PER);\n"
                 "  const int l = (int)(p.i % PER);\n"
                 "  if (p.attempt == 0) {  // its word again, which the main loop did not keep\n"
                 "    const philox::U32x4 r = philox::block(seed, counter);\n"
                 "    p.w = " + word_l + ";\n"
                 "    p.attempt = 1;\n"
                 "  }\n"
                 "  Real z;\n"
                 "  if (philox::normal_attempt<Real>(&p.w, p.attempt, seed, counter, (u32)l, &z)) {\n"
                 "    o[p.i] = " + value + ";\n    return 0;\n"
                 "  }\n  p.attempt += 1;\n  queue[atomicAdd(tail, 1u) % RING] = p;\n  return 1;\n}\n"
                 "__device__ inline unsigned warp_sum(unsigned v) {\n"
                 "#if __CUDA_ARCH__ >= 800\n  return __reduce_add_sync(~0u, v);\n"
                 "#else\n  for (int d = 16; d > 0; d >>= 1) v += __shfl_xor_sync(~0u, v, d);\n  return v;\n#endif\n}\n"
                 "extern \"C\" __global__ void __launch_bounds__(256) k(" + T +
                 "* o, u64 seed, u64 base, double a64, double b64, double cap, i64 low, i64 high, Geometry g,\n"
                 "    philox::RoundKeys keys) {\n"
                 "  // Indexed by a word's sign and layer bits, the width signed: -(m w) is m (-w) exactly.\n"
                 "  __shared__ " + layer + " layers[512];\n"
                 "  __shared__ Pending ring[8][RING];\n"
                 "  __shared__ unsigned ring_tail[8];\n"
                 "  for (int l = threadIdx.x; l < 512; l += blockDim.x) {\n"
                 "    " + layer + " layer = philox::Zig<Real>::layer(l & 255);\n"
                 "    if (l & 256) layer.w = -layer.w;\n"
                 "    layers[l] = layer;\n  }\n"
                 "  if (threadIdx.x < 8) ring_tail[threadIdx.x] = 0;\n"
                 "  __syncthreads();\n"
                 "  const Real a = (Real)a64, b = (Real)b64;\n"
                 "  const unsigned lane = threadIdx.x & 31;\n"
                 "  Pending* queue = ring[threadIdx.x >> 5];\n"
                 "  unsigned* tail = &ring_tail[threadIdx.x >> 5];\n"
                 "  // *tail hands out slots; head and queued (its value) are kept in registers, the same in every lane.\n"
                 "  unsigned head = 0, queued = 0;\n"
                 "  auto run_batch = [&](unsigned n) {\n"
                 "    __syncwarp();  // entries and placeholders written by other lanes are visible\n"
                 "    const unsigned again = lane < n ? attempt(o, a, b, seed, base, queue[(head + lane) % RING], queue, tail) : 0;\n"
                 "    queued += warp_sum(again);\n    head += n;\n  };\n"
                 "  auto drain = [&] { while (queued != head) run_batch(min(queued - head, 32u)); };\n"
                 "  const bool aligned = ((u64)o % sizeof(Out)) == 0;\n"
                 "  // A warp's iteration takes CHAINS x 32 blocks, lane l the blocks first + 32 c + l: independent\n"
                 "  // Philox chains in flight, and the iteration's fixed costs (the queue's bookkeeping) spread\n"
                 "  // over more words (H200, 64M floats: 2424 GB/s with 4 chains, 2524 with 8; 32M doubles 2519,\n"
                 "  // 2759). Each chain's block is stored as soon as it is made. The trip count is warp-uniform:\n"
                 "  // the whole warp reaches every __syncwarp. (Bounds are read as g.n, a kernel parameter,\n"
                 "  // rather than kept in registers.)\n"
                 "  for (i64 first = (blockIdx.x * (i64)blockDim.x + (threadIdx.x & ~31u)) * CHAINS; first * PER < g.n;\n"
                 "       first += (i64)gridDim.x * blockDim.x * CHAINS) {\n"
                 "    // Whole warps of whole blocks (all but the last) skip the range checks.\n"
                 "    const bool whole = aligned && (first + 32 * CHAINS) * PER <= g.n;\n"
                 "    Out vals[CHAINS];\n"
                 "    unsigned rejected = 0;  // bit PER c + l: word l of chain c failed its rectangle test\n"
                 "#pragma unroll\n"
                 "    for (int c = 0; c < CHAINS; ++c) {\n"
                 "      const philox::U32x4 r = philox::block(keys, base + (u64)(first + 32 * c + lane));\n" + words_loop +
                 "      if (whole) *(Out*)(o + (first + 32 * c + lane) * PER) = vals[c];\n"
                 "    }\n"
                 "    if (!whole) {\n"
                 "#pragma unroll\n"
                 "      for (int c = 0; c < CHAINS; ++c) {\n"
                 "        const i64 blk = first + 32 * c + lane, left = g.n - blk * PER;\n"
                 "        const int valid = left >= PER ? PER : left > 0 ? (int)left : 0;\n"
                 "        const unsigned past = ((1u << PER) - 1) & ~((1u << valid) - 1);  // the words past the end\n"
                 "        rejected &= ~(past << (PER * c));\n"
                 "        const Out& w = vals[c];\n" + kStoreBlock +
                 "      }\n"
                 "    }\n"
                 "    const unsigned count = __popc(rejected), total = warp_sum(count);\n"
                 "    if (queued - head + total > RING - 32) drain();  // room for them and a batch's requeues: never in practice\n"
                 "    if (rejected) {  // usually one word\n"
                 "      unsigned slot = atomicAdd(tail, count);\n"
                 "      for (unsigned left = rejected; left; left &= left - 1) {\n"
                 "        const unsigned bit = __ffs(left) - 1;  // PER c + l\n"
                 "        queue[slot++ % RING] = Pending{(first + 32 * (bit / PER) + lane) * PER + bit % PER, 0, 0u};\n"
                 "      }\n"
                 "    }\n"
                 "    queued += total;\n"
                 "    while (queued - head >= 32) run_batch(32);\n"
                 "  }\n"
                 "  drain();\n"
                 "}\n");
}
}  // namespace

// The CPU's mapping (philox.hpp, cpu_kernels.cpp random()): the same seed
// and offset give the same numbers. Normals are ziggurat_source's; uniforms
// and integers take one thread per Philox block. A thread
// makes its block's `per` elements at once and writes them with one vector
// store when they are all in range: per * sizeof(T) is 4 to 16 bytes and the
// output is contiguous. Standard float uniforms stay in float: the general
// a + u (b - a) in double costs two conversions per element, which run at a
// sixteenth of the FMA rate.
std::string random_source(DType t, runtime::RandomKind kind, bool wide, bool standard) {
  if (kind == runtime::RandomKind::Normal) return ziggurat_source(t, wide, standard);
  const std::string per = wide ? "2" : "4", T = ctype(t);
  std::string make;  // fills v[per] (of type vt) from block r
  if (kind == runtime::RandomKind::Uniform) {
    // As the CPU's: standard 16-bit uniforms on their dtype's grid, others clamped below b.
    const std::string u = wide                                    ? "philox::uniform_f64(r.v[2 * l], r.v[2 * l + 1])"
                          : standard && t == DType::Float16  ? "philox::uniform_f16(r.v[l])"
                          : standard && t == DType::BFloat16 ? "philox::uniform_bf16(r.v[l])"
                                                             : "philox::uniform_f32(r.v[l])";
    make = "    for (int l = 0; l < " + per + "; ++l) v[l] = " +
           (standard ? u : "philox::uniform_between((double)" + u + ", a, b, cap)") + ";\n";
  } else {
    make = std::string("    for (int l = 0; l < ") + per + "; ++l) v[l] = low + (i64)(" +
           (wide ? "((u64)r.v[2 * l] << 32 | r.v[2 * l + 1])" : "(u64)r.v[l]") + " % (u64)(high - low));\n";
  }
  const char* vt = kind == runtime::RandomKind::Int ? "i64" : standard && !wide ? "float" : "double";
  return program(std::string(kPhiloxInclude) +
                 "enum { PER = " + per + " };\nstruct __align__(PER * sizeof(" + T + ")) Out { " + T + " e[PER]; };\n"
                 "extern \"C\" __global__ void k(" + T +
                 "* o, u64 seed, u64 base, double a, double b, double cap, i64 low, i64 high, Geometry g,\n"
                 "    philox::RoundKeys keys) {\n"
                 "  const i64 blocks = (g.n + " + per + " - 1) / " + per + ";\n"
                 "  const bool aligned = ((u64)o % sizeof(Out)) == 0;\n"
                 "  for (i64 blk = blockIdx.x * (i64)blockDim.x + threadIdx.x; blk < blocks; blk += (i64)gridDim.x * blockDim.x) {\n"
                 "    philox::U32x4 r = philox::block(keys, base + (u64)blk);\n    " + vt + " v[" + per + "];\n" + make +
                 "    Out w;\n    for (int l = 0; l < " + per + "; ++l) w.e[l] = " + store(t, "v[l]") + ";\n"
                 "    const i64 left = g.n - blk * " + per + ";\n"
                 "    const int valid = left >= " + per + " ? " + per + " : (int)left;\n" + kStoreBlock + "  }\n}\n");
}

}  // namespace bronze::cuda
