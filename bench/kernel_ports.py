"""Metal kernels written the way real libraries write them, each against its
line-by-line CUDA C++ port: both compiled by bronze through NVRTC, same
data, same launch, same run (bench_gpu.py prints the rows). A translated
Metal kernel should run as fast as its port; elementwise ones as fast as a
device-to-device copy.

The kernels are bronze's own, in the style of Hugging Face's activation
kernels (silu_and_mul: float4 loads through reinterpret_cast, a uint2
position, an early return, a helper on vectors; and the same work with
coalesced float4 pairs, which the copy bandwidth is for), llama.cpp's rms_norm
(simdgroup reductions, a threadgroup array across simdgroups), PyTorch's
row softmax (a threadgroup tree with barriers) and MLX's sorts (a bitonic
network in threadgroup memory).
"""

METAL = r"""
#include <metal_stdlib>
using namespace metal;

static inline float4 silu(float4 x) { return x / (1.0f + exp(-x)); }

kernel void silu_and_mul(device float* out [[buffer(0)]], device const float* input [[buffer(1)]],
                         constant uint& d [[buffer(2)]], uint2 gid [[thread_position_in_grid]]) {
  const uint col = gid.x * 8;
  if (col >= d) return;
  const uint token = gid.y;
  device const float4* gate = reinterpret_cast<device const float4*>(input + token * 2 * d + col);
  device const float4* up = reinterpret_cast<device const float4*>(input + token * 2 * d + d + col);
  device float4* dst = reinterpret_cast<device float4*>(out + token * d + col);
  dst[0] = silu(gate[0]) * up[0];
  dst[1] = silu(gate[1]) * up[1];
}

// The same work as silu_and_mul, each thread's two float4 half a row apart:
// a simdgroup's loads are 512 contiguous bytes, where silu_and_mul's
// stride 32 bytes and use every other 16.
kernel void silu_and_mul_wide(device float* out [[buffer(0)]], device const float* input [[buffer(1)]],
                              constant uint& d [[buffer(2)]], uint2 gid [[thread_position_in_grid]]) {
  const uint half_row = d / 8;
  const uint i = gid.x;
  if (i >= half_row) return;
  const uint token = gid.y;
  device const float4* gate = reinterpret_cast<device const float4*>(input + token * 2 * d);
  device const float4* up = reinterpret_cast<device const float4*>(input + token * 2 * d + d);
  device float4* dst = reinterpret_cast<device float4*>(out + token * d);
  dst[i] = silu(gate[i]) * up[i];
  dst[i + half_row] = silu(gate[i + half_row]) * up[i + half_row];
}

kernel void rms_norm(device const float* src [[buffer(0)]], device float* dst [[buffer(1)]],
                     constant uint& ncols [[buffer(2)]], constant float& eps [[buffer(3)]],
                     uint row [[threadgroup_position_in_grid]], uint tid [[thread_position_in_threadgroup]],
                     uint ntg [[threads_per_threadgroup]], uint lane [[thread_index_in_simdgroup]],
                     uint sg [[simdgroup_index_in_threadgroup]]) {
  threadgroup float partial[32];
  device const float4* x = (device const float4*)(src + row * ncols);
  float sum = 0.0f;
  for (uint i = tid; i < ncols / 4; i += ntg) {
    const float4 v = x[i];
    sum += dot(v, v);
  }
  sum = simd_sum(sum);
  if (lane == 0) partial[sg] = sum;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (sg == 0) {
    sum = lane < (ntg + 31) / 32 ? partial[lane] : 0.0f;
    sum = simd_sum(sum);
    if (lane == 0) partial[0] = sum;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  const float scale = 1.0f / sqrt(partial[0] / ncols + eps);
  device float4* y = (device float4*)(dst + row * ncols);
  for (uint i = tid; i < ncols / 4; i += ntg) y[i] = x[i] * scale;
}

kernel void softmax_row(device const float* src [[buffer(0)]], device float* dst [[buffer(1)]],
                        constant uint& ncols [[buffer(2)]], uint row [[threadgroup_position_in_grid]],
                        uint tid [[thread_position_in_threadgroup]], uint ntg [[threads_per_threadgroup]]) {
  threadgroup float buf[256];
  device const float* x = src + row * ncols;
  float m = -INFINITY;
  for (uint i = tid; i < ncols; i += ntg) m = max(m, x[i]);
  buf[tid] = m;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint s = ntg / 2; s > 0; s >>= 1) {
    if (tid < s) buf[tid] = max(buf[tid], buf[tid + s]);
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  m = buf[0];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  float sum = 0.0f;
  for (uint i = tid; i < ncols; i += ntg) sum += exp(x[i] - m);
  buf[tid] = sum;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint s = ntg / 2; s > 0; s >>= 1) {
    if (tid < s) buf[tid] += buf[tid + s];
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  const float inv = 1.0f / buf[0];
  device float* y = dst + row * ncols;
  for (uint i = tid; i < ncols; i += ntg) y[i] = exp(x[i] - m) * inv;
}

kernel void bitonic_sort(device float* data [[buffer(0)]], uint block [[threadgroup_position_in_grid]],
                         uint tid [[thread_position_in_threadgroup]]) {
  threadgroup float s[1024];
  device float* v = data + block * 1024;
  s[tid] = v[tid];
  s[tid + 512] = v[tid + 512];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint k = 2; k <= 1024; k <<= 1) {
    for (uint j = k >> 1; j > 0; j >>= 1) {
      const uint i = 2 * tid - (tid & (j - 1));
      const bool ascending = (i & k) == 0;
      const float a = s[i], b = s[i + j];
      if ((a > b) == ascending) {
        s[i] = b;
        s[i + j] = a;
      }
      threadgroup_barrier(mem_flags::mem_threadgroup);
    }
  }
  v[tid] = s[tid];
  v[tid + 512] = s[tid + 512];
}
"""

CUDA = r"""
__device__ inline float silu1(float x) { return x / (1.0f + expf(-x)); }
__device__ inline float4 silu_mul(float4 g, float4 u) {
  float4 r;
  r.x = silu1(g.x) * u.x;
  r.y = silu1(g.y) * u.y;
  r.z = silu1(g.z) * u.z;
  r.w = silu1(g.w) * u.w;
  return r;
}

__device__ inline void silu_and_mul_body(float* out, const float* input, unsigned d) {
  const unsigned gx = blockIdx.x * blockDim.x + threadIdx.x, gy = blockIdx.y * blockDim.y + threadIdx.y;
  const unsigned col = gx * 8;
  if (col >= d) return;
  const unsigned token = gy;
  const float4* gate = reinterpret_cast<const float4*>(input + token * 2 * d + col);
  const float4* up = reinterpret_cast<const float4*>(input + token * 2 * d + d + col);
  float4* dst = reinterpret_cast<float4*>(out + token * d + col);
  dst[0] = silu_mul(gate[0], up[0]);
  dst[1] = silu_mul(gate[1], up[1]);
}

extern "C" __global__ void silu_and_mul(float* out, const float* input, unsigned d) { silu_and_mul_body(out, input, d); }

// As a CUDA C++ author writes it, and as bronze's translation takes Metal's
// read-only buffers: the input __restrict__.
extern "C" __global__ void silu_and_mul_restrict(float* out, const float* __restrict__ input, unsigned d) {
  silu_and_mul_body(out, input, d);
}

extern "C" __global__ void silu_and_mul_wide(float* out, const float* input, unsigned d) {
  const unsigned gx = blockIdx.x * blockDim.x + threadIdx.x, gy = blockIdx.y * blockDim.y + threadIdx.y;
  const unsigned half_row = d / 8;
  const unsigned i = gx;
  if (i >= half_row) return;
  const unsigned token = gy;
  const float4* gate = reinterpret_cast<const float4*>(input + token * 2 * d);
  const float4* up = reinterpret_cast<const float4*>(input + token * 2 * d + d);
  float4* dst = reinterpret_cast<float4*>(out + token * d);
  dst[i] = silu_mul(gate[i], up[i]);
  dst[i + half_row] = silu_mul(gate[i + half_row], up[i + half_row]);
}

__device__ inline float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

extern "C" __global__ void rms_norm(const float* src, float* dst, unsigned ncols, float eps) {
  __shared__ float partial[32];
  const unsigned row = blockIdx.x, tid = threadIdx.x, ntg = blockDim.x, lane = tid & 31, sg = tid >> 5;
  const float4* x = (const float4*)(src + row * ncols);
  float sum = 0.0f;
  for (unsigned i = tid; i < ncols / 4; i += ntg) {
    const float4 v = x[i];
    sum += v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w;
  }
  sum = warp_sum(sum);
  if (lane == 0) partial[sg] = sum;
  __syncthreads();
  if (sg == 0) {
    sum = lane < (ntg + 31) / 32 ? partial[lane] : 0.0f;
    sum = warp_sum(sum);
    if (lane == 0) partial[0] = sum;
  }
  __syncthreads();
  const float scale = 1.0f / sqrtf(partial[0] / ncols + eps);
  float4* y = (float4*)(dst + row * ncols);
  for (unsigned i = tid; i < ncols / 4; i += ntg) {
    float4 v = x[i];
    v.x *= scale;
    v.y *= scale;
    v.z *= scale;
    v.w *= scale;
    y[i] = v;
  }
}

extern "C" __global__ void softmax_row(const float* src, float* dst, unsigned ncols) {
  __shared__ float buf[256];
  const unsigned row = blockIdx.x, tid = threadIdx.x, ntg = blockDim.x;
  const float* x = src + row * ncols;
  float m = -__int_as_float(0x7f800000);
  for (unsigned i = tid; i < ncols; i += ntg) m = fmaxf(m, x[i]);
  buf[tid] = m;
  __syncthreads();
  for (unsigned s = ntg / 2; s > 0; s >>= 1) {
    if (tid < s) buf[tid] = fmaxf(buf[tid], buf[tid + s]);
    __syncthreads();
  }
  m = buf[0];
  __syncthreads();
  float sum = 0.0f;
  for (unsigned i = tid; i < ncols; i += ntg) sum += expf(x[i] - m);
  buf[tid] = sum;
  __syncthreads();
  for (unsigned s = ntg / 2; s > 0; s >>= 1) {
    if (tid < s) buf[tid] += buf[tid + s];
    __syncthreads();
  }
  const float inv = 1.0f / buf[0];
  float* y = dst + row * ncols;
  for (unsigned i = tid; i < ncols; i += ntg) y[i] = expf(x[i] - m) * inv;
}

extern "C" __global__ void bitonic_sort(float* data) {
  __shared__ float s[1024];
  const unsigned block = blockIdx.x, tid = threadIdx.x;
  float* v = data + block * 1024;
  s[tid] = v[tid];
  s[tid + 512] = v[tid + 512];
  __syncthreads();
  for (unsigned k = 2; k <= 1024; k <<= 1) {
    for (unsigned j = k >> 1; j > 0; j >>= 1) {
      const unsigned i = 2 * tid - (tid & (j - 1));
      const bool ascending = (i & k) == 0;
      const float a = s[i], b = s[i + j];
      if ((a > b) == ascending) {
        s[i] = b;
        s[i + j] = a;
      }
      __syncthreads();
    }
  }
  v[tid] = s[tid];
  v[tid + 512] = s[tid + 512];
}
"""


def run(row, best, bsync, copy_gbs, dev):
    """Adds a row per kernel: the Metal translation against its CUDA C++ port
    (ratio = port time / Metal time), elementwise ones also against copy."""
    import torch

    import bronze

    metal = bronze.compile_shader(METAL, device=dev)
    cuda = bronze.compile_shader(CUDA, language="cuda", device=dev)
    both = {"Metal": metal, "CUDA": cuda}
    tview = torch.from_dlpack

    def compare(name, launches, nbytes, check, elementwise=False):
        times = {}
        for which, launch in launches.items():
            launch()
            bsync()
            check(which)
            times[which] = best(launch, bsync, repeat=7, number=10)
        row(f"{name}: MSL vs CUDA port", nbytes / times["Metal"] / 1e9, nbytes / times["CUDA"] / 1e9,
            "the same kernel in CUDA C++", "GB/s", True)
        if elementwise:
            row(f"{name}: MSL vs copy", nbytes / times["Metal"] / 1e9, copy_gbs, "torch clone (D2D copy)", "GB/s", True)

    # silu_and_mul: 4096 tokens of 2 x 8192 floats in, 8192 out.
    tokens, d = 4096, 8192
    x = bronze.randn(tokens, 2 * d, device=dev)
    outs = {w: bronze.empty(tokens, d, device=dev) for w in both}
    bsync()  # torch reads bronze's tensors on its own stream
    tx = tview(x)
    ref = torch.nn.functional.silu(tx[:, :d]) * tx[:, d:]
    torch.cuda.synchronize()

    def check_silu(which):
        assert torch.allclose(tview(outs[which]), ref, rtol=1e-5, atol=1e-5), f"silu_and_mul ({which}) is wrong"
    compare("silu_and_mul 4096x8192",
            {w: (lambda w=w: both[w].silu_and_mul(outs[w], x, d, threads=(d // 8, tokens), group_size=(d // 8, 1)))
             for w in both}, 3 * 4 * tokens * d, check_silu, elementwise=True)
    for o in outs.values():
        o.zero_()  # the check sees this kernel's results, not the last one's
    compare("silu_and_mul 4096x8192, float4 pairs half a row apart",
            {w: (lambda w=w: both[w].silu_and_mul_wide(outs[w], x, d, threads=(d // 8, tokens),
                                                       group_size=(d // 8, 1)))
             for w in both}, 3 * 4 * tokens * d, check_silu, elementwise=True)
    # The port launched by CuPy instead of bronze: what the kernel as
    # written reaches natively (its two float4 per input and thread, eight
    # floats apart, keep it under the copy bandwidth whoever launches it).
    try:
        import cupy
    except ImportError:
        cupy = None
    if cupy is not None:
        k = cupy.RawModule(code=CUDA).get_function("silu_and_mul")
        cx, co = cupy.from_dlpack(x), cupy.from_dlpack(outs["CUDA"])
        cupy_time = best(lambda: k((1, tokens), (d // 8, 1), (co, cx, cupy.uint32(d))), cupy.cuda.Device().synchronize,
                         repeat=7, number=10)
        metal_time = best(lambda: metal.silu_and_mul(outs["Metal"], x, d, threads=(d // 8, tokens),
                                                     group_size=(d // 8, 1)), bsync, repeat=7, number=10)
        nbytes = 3 * 4 * tokens * d
        row("silu_and_mul: MSL vs CUDA port by CuPy", nbytes / metal_time / 1e9, nbytes / cupy_time / 1e9,
            "the port, cupy.RawModule", "GB/s", True)
    outs["CUDA"].zero_()  # the check sees this kernel's results
    restrict_time = best(lambda: cuda.silu_and_mul_restrict(outs["CUDA"], x, d, threads=(d // 8, tokens),
                                                            group_size=(d // 8, 1)), bsync, repeat=7, number=10)
    check_silu("CUDA")
    metal_time = best(lambda: metal.silu_and_mul(outs["Metal"], x, d, threads=(d // 8, tokens),
                                                 group_size=(d // 8, 1)), bsync, repeat=7, number=10)
    nbytes = 3 * 4 * tokens * d
    row("silu_and_mul: MSL vs CUDA port with __restrict__", nbytes / metal_time / 1e9, nbytes / restrict_time / 1e9,
        "the port, input __restrict__", "GB/s", True)

    # rms_norm and softmax: 8192 rows of 4096 floats, a threadgroup of 256 per row.
    rows, cols = 8192, 4096
    src = bronze.randn(rows, cols, device=dev)
    bsync()
    tsrc = tview(src)
    outs = {w: bronze.empty(rows, cols, device=dev) for w in both}
    ref = tsrc * torch.rsqrt(tsrc.pow(2).mean(dim=1, keepdim=True) + 1e-6)
    torch.cuda.synchronize()

    def check_rms(which):
        assert torch.allclose(tview(outs[which]), ref, rtol=1e-4, atol=1e-4), f"rms_norm ({which}) is wrong"
    compare("rms_norm 8192x4096",
            {w: (lambda w=w: both[w].rms_norm(src, outs[w], cols, 1e-6, threads=rows * 256, group_size=256))
             for w in both}, 2 * 4 * rows * cols, check_rms)
    ref = torch.softmax(tsrc, dim=1)
    torch.cuda.synchronize()

    def check_softmax(which):
        assert torch.allclose(tview(outs[which]), ref, rtol=1e-4, atol=1e-6), f"softmax ({which}) is wrong"
    compare("softmax_row 8192x4096",
            {w: (lambda w=w: both[w].softmax_row(src, outs[w], cols, threads=rows * 256, group_size=256))
             for w in both}, 2 * 4 * rows * cols, check_softmax)

    # bitonic sort of 16M floats in blocks of 1024, 512 threads a block.
    n = 1 << 24
    data = {w: bronze.randn(n, device=dev) for w in both}
    bsync()
    ref = torch.sort(tview(data["Metal"]).view(-1, 1024), dim=1).values
    torch.cuda.synchronize()

    def check_sort(which):
        assert torch.equal(tview(data[which]).view(-1, 1024), ref), f"bitonic_sort ({which}) is wrong"
    data["CUDA"].copy_(data["Metal"])
    compare("bitonic_sort 16M in 1024s",
            {w: (lambda w=w: both[w].bitonic_sort(data[w], threads=n // 2, group_size=512)) for w in both},
            2 * 4 * n, check_sort)
