"""Metal's matrix types and simdgroup_matrix, checked against NumPy.

Run on the CPU here and in CI (each kernel also built for sm_90 where NVRTC
is installed), and on the GPU by scripts/gpu-check with BRONZE_DEVICE=cuda.
The kernels are written here in the style of MLX's steel GEMM and
llama.cpp's mul_mm: tiles staged in threadgroup memory, 8 x 8
simdgroup_matrix operands, thread_elements() read by Apple's lane layout.
"""

import numpy as np
import pytest

import bronze
from test_shaders import compile


def apple_lane_coords(lane):
    """(row, column) of the first of a lane's two elements, as Apple lays
    out simdgroup_matrix<T, 8, 8> (the layout MLX's BaseMMAFrag documents)."""
    qid = lane // 4
    return (qid & 4) + (lane // 2) % 4, (qid & 2) * 2 + (lane % 2) * 2


def round_to(x, dtype):
    """x (float32) rounded as the kernel's element type rounds it."""
    if dtype == "float":
        return x.astype(np.float32)
    if dtype == "half":
        return x.astype(np.float16).astype(np.float32)
    bits = x.astype(np.float32).view(np.uint32)  # bfloat: round to nearest even
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.astype(np.uint32).view(np.float32)


def test_thread_elements_follow_apples_lane_layout():
    lib = compile("""
    kernel void layout(device const float* m, device float* out,
                       ushort lane [[thread_index_in_simdgroup]]) {
      simdgroup_float8x8 a;
      simdgroup_load(a, m, 8);
      out[lane * 2 + 0] = a.thread_elements()[0];
      out[lane * 2 + 1] = a.thread_elements()[1];
    }""")
    m = np.arange(64, dtype=np.float32)  # element (r, c) holds 8r + c
    out = bronze.empty(64)
    lib.layout(m, out, threads=32, group_size=32)
    got = out.numpy().reshape(32, 2)
    for lane in range(32):
        r, c = apple_lane_coords(lane)
        assert list(got[lane]) == [8 * r + c, 8 * r + c + 1], lane


def test_load_store_with_stride_origin_and_transpose():
    lib = compile("""
    kernel void move(device const float* src, device float* plain, device float* transposed,
                     device float* filled) {
      simdgroup_float8x8 a;
      simdgroup_load(a, src, 16, ulong2(4, 2));           // the block at column 4, row 2
      simdgroup_store(a, plain, 8);
      simdgroup_load(a, src, 16, ulong2(4, 2), true);     // that block, transposed
      simdgroup_store(a, transposed, 12, ulong2(2, 0));   // stored at column 2 of a 12-wide matrix
      simdgroup_float8x8 f = make_filled_simdgroup_matrix<float, 8>(2.5f);
      simdgroup_store(f, filled, 8, 0, true);
    }""")
    src = np.arange(16 * 16, dtype=np.float32).reshape(16, 16)
    plain, filled = bronze.zeros(64), bronze.zeros(64)
    transposed = bronze.zeros(8 * 12)
    lib.move(src.ravel(), plain, transposed, filled, threads=32, group_size=32)
    np.testing.assert_array_equal(plain.numpy().reshape(8, 8), src[2:10, 4:12])
    # Transposed load: element (r, c) = src[origin.y + c][origin.x + r], the block's transpose.
    t = transposed.numpy().reshape(8, 12)
    np.testing.assert_array_equal(t[:, 2:10], src[2:10, 4:12].T)
    assert not t[:, :2].any() and not t[:, 10:].any()
    np.testing.assert_array_equal(filled.numpy(), np.full(64, 2.5, np.float32))


def test_thread_elements_written_then_multiplied():
    # conv.metal's style: operands built lane by lane through thread_elements(),
    # a diagonal matrix from the scalar constructor, simdgroup_multiply.
    lib = compile("""
    kernel void build(device const float* a, device float* out, ushort lane [[thread_index_in_simdgroup]]) {
      const short qid = lane / 4;
      const short fm = (qid & 4) + ((lane / 2) % 4);
      const short fn = (qid & 2) * 2 + (lane % 2) * 2;
      simdgroup_matrix<float, 8, 8> m;
      m.thread_elements()[0] = a[fm * 8 + fn];
      m.thread_elements()[1] = a[fm * 8 + fn + 1];
      simdgroup_float8x8 twice = simdgroup_float8x8(2.0f), p;
      simdgroup_multiply(p, m, twice);
      simdgroup_store(p, out);
      simdgroup_store((twice * m) * twice, out + 64);   // operator*, as MLX's Winograd conv writes it
    }""")
    a = np.random.default_rng(1).standard_normal(64).astype(np.float32)
    out = bronze.empty(128)
    lib.build(a, out, threads=32, group_size=32)
    np.testing.assert_allclose(out.numpy(), np.concatenate([2 * a, 4 * a]), rtol=1e-6)


@pytest.mark.parametrize("element", ["half", "float"])
@pytest.mark.parametrize("reads_lanes", [True, False])
def test_operands_reused_in_every_role(element, reads_lanes):
    # On CUDA a unit holds its matrices in NVIDIA's mma fragments, or in
    # Apple's layout where it reads thread_elements(); half operands
    # multiply on tensor cores, float ones by shuffles, so each pairing runs
    # here: a right operand later on the left and the reverse, one matrix as
    # destination and operand, a transposed load, a diagonal matrix on the
    # left, a transposed store. Small integers keep every result exact.
    read = """
      seen[lane * 2 + 0] = ma.thread_elements()[0];
      seen[lane * 2 + 1] = ma.thread_elements()[1];
      seen[64 + lane * 2 + 0] = p.thread_elements()[0];
      seen[64 + lane * 2 + 1] = p.thread_elements()[1];""" if reads_lanes else ""
    lib = compile(f"""
    typedef {element} T;
    kernel void roles(device const T* a, device const T* b, device T* out, device float* seen,
                      ushort lane [[thread_index_in_simdgroup]]) {{
      simdgroup_matrix<T, 8, 8> ma, mb, at, p, q;
      simdgroup_load(ma, a);
      simdgroup_load(mb, b);
      simdgroup_load(at, a, 8, ulong2(0), true);
      simdgroup_multiply(p, ma, mb);
      simdgroup_multiply(q, mb, ma);
      simdgroup_multiply(q, q, at);
      simdgroup_multiply_accumulate(q, simdgroup_matrix<T, 8, 8>(T(0.5)), q, p);
      simdgroup_store(q, out);
      simdgroup_store(p, out + 64, 8, ulong2(0), true);{read}
    }}""")
    dtype = np.float16 if element == "half" else np.float32
    rng = np.random.default_rng(5)
    a = rng.integers(-2, 3, (8, 8)).astype(dtype)
    b = rng.integers(-2, 3, (8, 8)).astype(dtype)
    out = bronze.empty(128, dtype=bronze.float16 if element == "half" else bronze.float32)
    seen = bronze.empty(128)
    lib.roles(a.ravel(), b.ravel(), out, seen, threads=32, group_size=32)
    A, B = a.astype(np.float64), b.astype(np.float64)
    P = A @ B
    got = out.numpy().astype(np.float64).reshape(2, 8, 8)
    np.testing.assert_array_equal(got[0], 0.5 * (B @ A @ A.T) + P)
    np.testing.assert_array_equal(got[1], P.T)
    if reads_lanes:
        lanes = seen.numpy().reshape(2, 32, 2)
        for lane in range(32):
            r, c = apple_lane_coords(lane)
            assert list(lanes[0, lane]) == [A[r, c], A[r, c + 1]], lane
            assert list(lanes[1, lane]) == [P[r, c], P[r, c + 1]], lane


GEMM = """
// C (M x N, float) = A (M x K) * B (K x N), A and B rounded to T. A group of
// four simdgroups computes a 32 x 32 block of C, each simdgroup a 16 x 16
// quarter as 2 x 2 accumulators; K goes in steps of 16 through threadgroup
// tiles. M, N and K are multiples of 32, 32 and 16.
template <typename T>
kernel void gemm(device const float* A [[buffer(0)]], device const float* B [[buffer(1)]],
                 device float* C [[buffer(2)]], constant uint3& mnk [[buffer(3)]],
                 uint2 tg [[threadgroup_position_in_grid]], ushort tid [[thread_index_in_threadgroup]],
                 ushort sg [[simdgroup_index_in_threadgroup]]) {
  constexpr int BM = 32, BN = 32, BK = 16;
  threadgroup T As[BM * BK];
  threadgroup T Bs[BK * BN];
  const uint N = mnk.y, K = mnk.z, row0 = tg.y * BM, col0 = tg.x * BN;
  const short sm = (sg / 2) * 16, sn = (sg % 2) * 16;
  simdgroup_matrix<float, 8, 8> acc[2][2];
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) acc[i][j] = make_filled_simdgroup_matrix<float, 8>(0.0f);
  for (uint k0 = 0; k0 < K; k0 += BK) {
    for (int e = tid; e < BM * BK; e += 128) As[e] = T(A[(row0 + e / BK) * K + k0 + e % BK]);
    for (int e = tid; e < BK * BN; e += 128) Bs[e] = T(B[(k0 + e / BN) * N + col0 + e % BN]);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (int kk = 0; kk < BK; kk += 8) {
      simdgroup_matrix<T, 8, 8> a[2], b[2];
      for (int i = 0; i < 2; ++i) simdgroup_load(a[i], As + (sm + 8 * i) * BK + kk, BK);
      for (int j = 0; j < 2; ++j) simdgroup_load(b[j], Bs + kk * BN + sn + 8 * j, BN);
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j) simdgroup_multiply_accumulate(acc[i][j], a[i], b[j], acc[i][j]);
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      simdgroup_store(acc[i][j], C + (row0 + sm + 8 * i) * N + col0 + sn + 8 * j, N);
}
template [[host_name("gemm_float")]] kernel void gemm<float>(device const float*, device const float*,
    device float*, constant uint3&, uint2, ushort, ushort);
template [[host_name("gemm_half")]] kernel void gemm<half>(device const float*, device const float*,
    device float*, constant uint3&, uint2, ushort, ushort);
template [[host_name("gemm_bfloat")]] kernel void gemm<bfloat>(device const float*, device const float*,
    device float*, constant uint3&, uint2, ushort, ushort);
"""


@pytest.mark.parametrize("dtype", ["float", "half", "bfloat"])
def test_tiled_gemm_matches_numpy(dtype):
    lib = compile(GEMM)
    M, N, K = 64, 96, 48
    rng = np.random.default_rng(7)
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    c = bronze.empty(M * N)
    getattr(lib, f"gemm_{dtype}")(a.ravel(), b.ravel(), c, [M, N, K],
                                   threads=(N // 32 * 128, M // 32), group_size=(128, 1))
    want = round_to(a, dtype).astype(np.float64) @ round_to(b, dtype).astype(np.float64)
    # Products of T are exact in float; what differs is the order of the float sums.
    np.testing.assert_allclose(c.numpy().reshape(M, N), want, rtol=1e-5, atol=1e-4)


def test_multiply_accumulate_into_half_and_mixed_operands():
    lib = compile("""
    kernel void mixed(device const half* a, device const float* b, device const half* c, device half* d) {
      simdgroup_half8x8 ma, mc, md;
      simdgroup_float8x8 mb;
      simdgroup_load(ma, a);
      simdgroup_load(mb, b);
      simdgroup_load(mc, c);
      simdgroup_multiply_accumulate(md, ma, mb, mc);
      simdgroup_multiply_accumulate(mc, ma, ma, mc);   // the accumulator as the destination
      simdgroup_store(md, d);
      simdgroup_store(mc, d + 64);
    }""")
    rng = np.random.default_rng(3)
    a = rng.standard_normal((8, 8)).astype(np.float16)
    b = rng.standard_normal((8, 8)).astype(np.float32)
    c = rng.standard_normal((8, 8)).astype(np.float16)
    d = bronze.empty(128, dtype=bronze.float16)
    lib.mixed(a.ravel(), b.ravel(), c.ravel(), d, threads=32, group_size=32)
    got = d.numpy().astype(np.float32).reshape(2, 8, 8)
    a64, c64 = a.astype(np.float64), c.astype(np.float64)
    np.testing.assert_allclose(got[0], a64 @ b + c64, rtol=2e-3, atol=2e-3)
    np.testing.assert_allclose(got[1], a64 @ a64 + c64, rtol=2e-3, atol=2e-3)


def test_matrix_types():
    lib = compile("""
    kernel void mats(device const float4x4* m, device const half2x4* h, device float* out) {
      float4x4 a = *m;                          // columns a[0] .. a[3]
      float4 v = float4(1, 2, 3, 4);
      float4 mv = a * v, vm = v * a;
      float4x4 prod = a * transpose(a), sum = a + float4x4(1.0f), scaled = 2.0f * a;
      float2x4 hf = float2x4(*h);               // half2x4 -> float2x4, explicitly
      float2x2 small = float2x2(float2(1, 2), float2(3, 4));
      half4x4 back = half4x4(a);
      int k = 0;
      for (int i = 0; i < 4; ++i) out[k++] = mv[i];
      for (int i = 0; i < 4; ++i) out[k++] = vm[i];
      for (int c = 0; c < 4; ++c) for (int r = 0; r < 4; ++r) out[k++] = prod[c][r];
      for (int c = 0; c < 4; ++c) for (int r = 0; r < 4; ++r) out[k++] = sum[c][r] + scaled[c][r];
      for (int c = 0; c < 2; ++c) for (int r = 0; r < 4; ++r) out[k++] = hf[c][r];
      out[k++] = determinant(small);
      out[k++] = determinant(a);
      out[k++] = back[3][2];
    }""")
    rng = np.random.default_rng(5)
    cols = rng.standard_normal((4, 4)).astype(np.float32)  # cols[c] is column c
    A = cols.T.astype(np.float64)                           # A[r, c]
    h = rng.standard_normal((2, 4)).astype(np.float16)
    out = bronze.zeros(64)
    lib.mats(cols.ravel(), h.ravel(), out, threads=1)
    got = out.numpy()
    v = np.array([1, 2, 3, 4], np.float64)
    np.testing.assert_allclose(got[0:4], A @ v, rtol=1e-5)
    np.testing.assert_allclose(got[4:8], v @ A, rtol=1e-5)
    np.testing.assert_allclose(got[8:24], (A @ A.T).T.ravel(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[24:40], (A + np.eye(4) + 2 * A).T.ravel(), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(got[40:48], h.astype(np.float32).ravel())
    assert got[48] == 1 * 4 - 3 * 2
    np.testing.assert_allclose(got[49], np.linalg.det(A), rtol=1e-4)
    assert got[50] == np.float32(np.float16(cols[3, 2]))
