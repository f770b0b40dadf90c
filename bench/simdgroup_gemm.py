"""A tiled GEMM written with simdgroup_matrix, as MLX's steel GEMM and
llama.cpp's mul_mm are, against cuBLAS through torch in the same run
(bench_gpu.py calls run()). The kernel is bronze's own: 64 x 64 blocks of C
per threadgroup of four simdgroups, each a 32 x 32 quarter held as 4 x 4
float accumulators, K in steps of 16 through threadgroup tiles.
"""

METAL = """
#include <metal_stdlib>
using namespace metal;

template <typename T>
kernel void sg_gemm(device const T* A [[buffer(0)]], device const T* B [[buffer(1)]],
                    device float* C [[buffer(2)]], constant uint& N [[buffer(3)]],
                    uint2 tg [[threadgroup_position_in_grid]], ushort tid [[thread_index_in_threadgroup]],
                    ushort sg [[simdgroup_index_in_threadgroup]]) {
  constexpr int BM = 64, BN = 64, BK = 16;
  threadgroup T As[BM * BK];
  threadgroup T Bs[BK * BN];
  const uint row0 = tg.y * BM, col0 = tg.x * BN;
  const int sm = (sg / 2) * 32, sn = (sg % 2) * 32;
  simdgroup_matrix<float, 8, 8> acc[4][4];
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) acc[i][j] = make_filled_simdgroup_matrix<float, 8>(0.0f);
  for (uint k0 = 0; k0 < N; k0 += BK) {
    for (int e = tid; e < BM * BK; e += 128) As[e] = A[(row0 + e / BK) * N + k0 + e % BK];
    for (int e = tid; e < BK * BN; e += 128) Bs[e] = B[(k0 + e / BN) * N + col0 + e % BN];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (int kk = 0; kk < BK; kk += 8) {
      simdgroup_matrix<T, 8, 8> a[4], b[4];
      for (int i = 0; i < 4; ++i) simdgroup_load(a[i], As + (sm + 8 * i) * BK + kk, BK);
      for (int j = 0; j < 4; ++j) simdgroup_load(b[j], Bs + kk * BN + sn + 8 * j, BN);
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) simdgroup_multiply_accumulate(acc[i][j], a[i], b[j], acc[i][j]);
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) simdgroup_store(acc[i][j], C + (row0 + sm + 8 * i) * N + col0 + sn + 8 * j, N);
}
#define INSTANTIATE(T)                                                                             \\
  template [[host_name("sg_gemm_" #T)]] kernel void sg_gemm<T>(device const T*, device const T*,   \\
      device float*, constant uint&, uint2, ushort, ushort);
INSTANTIATE(float)
INSTANTIATE(half)
"""


def run(row, best, bsync, dev, n=4096):
    """Adds a row per element type: TFLOP/s of the Metal kernel against
    torch.mm (cuBLAS) on the same inputs, after checking the result."""
    import torch

    import bronze

    lib = bronze.compile_shader(METAL, device=dev)
    flops = 2 * n ** 3
    for name, tdtype, tol in (("float", torch.float32, 1e-3), ("half", torch.float16, 2e-2)):
        ta = torch.randn(n, n, device="cuda").to(tdtype)
        tb = torch.randn(n, n, device="cuda").to(tdtype)
        a, b = bronze.from_dlpack(ta), bronze.from_dlpack(tb)
        c = bronze.empty(n, n, device=dev)
        torch.cuda.synchronize()
        kernel = getattr(lib, f"sg_gemm_{name}")
        launch = lambda: kernel(a, b, c, n, threads=(n // 64 * 128, n // 64), group_size=(128, 1))
        launch()
        bsync()
        want = ta.float() @ tb.float()
        err = ((torch.from_dlpack(c) - want).abs().max() / want.abs().max()).item()
        assert err < tol, f"simdgroup_matrix GEMM ({name}) is wrong: relative error {err}"
        ours = best(launch, bsync, repeat=5)
        peer = best(lambda: ta @ tb, torch.cuda.synchronize, repeat=5)
        row(f"simdgroup_matrix GEMM {n}^2 {name}", flops / ours / 1e12, flops / peer / 1e12, "torch mm (cuBLAS)",
            "TFLOP/s", True)
