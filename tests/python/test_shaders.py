"""Metal kernels compiled by bronze, checked against NumPy.

They run on the current device: the CPU backend here and in CI, and the
CUDA backend when scripts/gpu-check runs this file with BRONZE_DEVICE=cuda.
On the CPU, wherever NVRTC is installed, every kernel is also translated to
CUDA and compiled for sm_90, so the CUDA translation is checked without a GPU.
"""

import struct

import numpy as np
import pytest

import bronze

SEED = "kernel void full(device float* out, constant float& val, uint idx [[thread_position_in_grid]]) { out[idx] = val; }"

HEADER = "#include <metal_stdlib>\nusing namespace metal;\n"

ON_CPU = bronze.current_device().type == "cpu"
cpu_only = pytest.mark.skipif(not ON_CPU, reason="a CPU-backend feature")


def _nvrtc_available():
    try:
        bronze.compile_library(SEED, archs=[90])
        return True
    except bronze.NotSupportedError:
        return False


CHECK_CUDA_TRANSLATION = ON_CPU and _nvrtc_available()


class _Kernel:
    """A kernel whose NumPy inputs are copied to the current device first."""

    def __init__(self, kernel):
        self._kernel = kernel

    def __call__(self, *args, **kwargs):
        return self._kernel(*[bronze.tensor(a) if isinstance(a, np.ndarray) else a for a in args], **kwargs)

    def __getattr__(self, name):
        return getattr(self._kernel, name)


class _Library:
    def __init__(self, lib):
        self._lib = lib

    def __getattr__(self, name):
        attr = getattr(self._lib, name)
        return _Kernel(attr) if isinstance(attr, bronze.Kernel) else attr


def compile(src):
    lib = bronze.compile_shader(HEADER + src)
    if CHECK_CUDA_TRANSLATION:
        bronze.compile_library(HEADER + src, archs=[90])  # raises ShaderCompileError if the CUDA side fails
    return _Library(lib)


def test_seed_example_verbatim():
    lib = bronze.compile_shader(SEED)
    x = bronze.empty(1000)
    lib.full(x, 3.14)
    np.testing.assert_allclose(x.numpy(), np.full(1000, 3.14, np.float32))
    assert "full" in dir(lib)
    assert lib.full.max_threads_per_threadgroup == 1024
    assert lib.full.thread_execution_width == 32
    assert lib.full.static_thread_group_memory_length == 0
    p = lib.full.params
    assert [x["kind"] for x in p] == ["buffer", "scalar", "attribute"]
    assert p[0]["access"] == "read_write" and p[1]["access"] == "read"
    assert p[2]["attribute"] == "thread_position_in_grid"


def test_max_total_threads_per_threadgroup_is_the_kernels_limit():
    # Metal's pipeline reports the attribute's n as its limit and refuses
    # larger groups; CUDA also allots registers for n threads (launch
    # bounds). n may use the template's arguments and the namespace's names.
    lib = compile("""
namespace tiles {
constant constexpr int kGroup = 64;
template <typename T, int WM, int WN>
[[kernel, max_total_threads_per_threadgroup(WM * WN * 32)]] void fill(device T* o [[buffer(0)]],
                                                                     uint i [[thread_position_in_grid]]) {
  o[i] = T(i);
}
template [[host_name("fill_2x2")]] [[kernel]] void fill<float, 2, 2>(device float* o [[buffer(0)]],
                                                                      uint i [[thread_position_in_grid]]);
[[kernel, max_total_threads_per_threadgroup(kGroup)]] void group_size(device float* o [[buffer(0)]],
                                                                     uint i [[thread_position_in_grid]],
                                                                     uint n [[threads_per_threadgroup]]) {
  o[i] = float(n);
}
}
kernel void unbounded(device float* o [[buffer(0)]], uint i [[thread_position_in_grid]]) { o[i] = 3; }
""")
    device_limit = bronze.get_device_properties(bronze.current_device()).max_threads_per_threadgroup
    assert lib.fill_2x2.max_threads_per_threadgroup == 128
    assert lib.group_size.max_threads_per_threadgroup == 64
    assert 256 <= lib.unbounded.max_threads_per_threadgroup <= device_limit
    out = np.zeros(512, np.float32)
    o = bronze.tensor(out)
    lib.fill_2x2(o, threads=512, group_size=128)
    np.testing.assert_array_equal(o.numpy(), np.arange(512, dtype=np.float32))
    lib.group_size(o, threads=512)  # the group the launch picks is the limit
    np.testing.assert_array_equal(o.numpy(), np.full(512, 64, np.float32))
    with pytest.raises(ValueError, match="over the kernel's limit of 128 threads per threadgroup"):
        lib.fill_2x2(o, threads=512, group_size=256)


def test_hot_compile_returns_the_same_library():
    a = bronze.compile_shader(SEED)
    b = bronze.compile_shader(SEED)
    assert a.hash == b.hash


def test_scalars_bind_by_signature():
    lib = compile("""
    kernel void k(device float* f, device int* i, device half* h, constant float& a, constant int& b,
                  constant half& c, constant bool& d, constant uint2& e, uint t [[thread_position_in_grid]]) {
      f[t] = a + float(e.y); i[t] = b + int(d); h[t] = c;
    }""")
    f, i, h = bronze.empty(2), bronze.empty(2, dtype=bronze.int32), bronze.empty(2, dtype=bronze.float16)
    lib.k(f, i, h, 3, 7, 0.5, True, [1, 10])  # 3 -> 3.0f; a list -> uint2
    assert f.numpy().tolist() == [13.0, 13.0]
    assert i.numpy().tolist() == [8, 8]
    assert h.numpy().tolist() == [0.5, 0.5]


def test_explicit_buffer_indices_order_arguments():
    lib = compile("""
    kernel void k(constant float& s [[buffer(1)]], device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
      out[i] = s * i;
    }""")
    out = bronze.empty(4)
    lib.k(out, 2.0)
    assert out.numpy().tolist() == [0, 2, 4, 6]


def test_attributes_2d_grid_and_partial_groups():
    lib = compile("""
    kernel void k(device uint4* o, uint2 gid [[thread_position_in_grid]], uint2 tid [[thread_position_in_threadgroup]],
                  uint2 tg [[threadgroup_position_in_grid]], uint2 dtptg [[dispatch_threads_per_threadgroup]],
                  uint2 tptg [[threads_per_threadgroup]], uint2 grid [[threads_per_grid]],
                  uint2 ngroups [[threadgroups_per_grid]], uint lin [[thread_index_in_threadgroup]]) {
      o[gid.y * grid.x + gid.x] = uint4(tg.x * dtptg.x + tid.x, tg.y * dtptg.y + tid.y,
                                        ngroups.x * 100 + ngroups.y + tptg.x * 1000, lin);
    }""")
    w, h = 7, 5
    o = bronze.zeros(h, w, 4, dtype=bronze.int32)
    lib.k(o, threads=(w, h), group_size=(4, 2))
    r = o.numpy()
    ys, xs = np.mgrid[0:h, 0:w]
    np.testing.assert_array_equal(r[..., 0], xs)
    np.testing.assert_array_equal(r[..., 1], ys)
    # Partial groups: the last column group is 3 wide (threads_per_threadgroup
    # gives the actual size, dispatch_threads_per_threadgroup the dispatched one).
    tx, ty = xs % 4, ys % 2
    width = np.where(xs >= 4, 3, 4)
    np.testing.assert_array_equal(r[..., 2], 2 * 100 + 3 + 1000 * width)
    np.testing.assert_array_equal(r[..., 3], tx + width * ty)


def test_templates_with_host_name():
    lib = compile("""
    template <typename T, int SCALE>
    kernel void scale(device T* y, device const T* x, uint i [[thread_position_in_grid]]) { y[i] = x[i] * T(SCALE); }
    template [[host_name("scale_f32")]] kernel void scale<float, 2>(device float*, device const float*, uint);
    template [[host_name("scale_i32")]] kernel void scale<int, 3>(device int*, device const int*, uint);
    """)
    assert sorted(lib.kernel_names) == ["scale_f32", "scale_i32"]
    x = np.arange(5, dtype=np.int32)
    y = bronze.empty(5, dtype=bronze.int32)
    lib.scale_i32(y, x)
    assert y.numpy().tolist() == [0, 3, 6, 9, 12]
    yf = bronze.empty(5)
    lib.scale_f32(yf, x.astype(np.float32))
    assert yf.numpy().tolist() == [0, 2, 4, 6, 8]


def test_threadgroup_reduction_with_barriers():
    lib = compile("""
    kernel void reduce(device const float* x, device float* out, constant uint& n,
                       uint tid [[thread_index_in_threadgroup]], uint gid [[threadgroup_position_in_grid]],
                       uint tpg [[threads_per_threadgroup]]) {
      threadgroup float buf[256];
      uint i = gid * tpg + tid;
      buf[tid] = i < n ? x[i] : 0.0f;
      threadgroup_barrier(mem_flags::mem_threadgroup);
      for (uint s = tpg / 2; s > 0; s >>= 1) {
        if (tid < s) buf[tid] += buf[tid + s];
        threadgroup_barrier(mem_flags::mem_threadgroup);
      }
      if (tid == 0) out[gid] = buf[0];
    }""")
    assert lib.reduce.cooperative
    assert lib.reduce.static_thread_group_memory_length == 256 * 4
    n = 3000
    x = np.random.default_rng(0).random(n, dtype=np.float32)
    out = bronze.zeros(12)
    lib.reduce(x, out, n, threads=12 * 256, group_size=256)
    np.testing.assert_allclose(out.numpy(), np.pad(x, (0, 12 * 256 - n)).reshape(12, 256).sum(1), rtol=1e-5)


@cpu_only
def test_cooperative_threads_get_room_for_large_private_arrays():
    """Each thread of a barrier kernel runs on its own fiber stack: 96 KiB of
    private array per thread must neither fault nor overwrite a neighbour's."""
    lib = compile("""
    kernel void k(device float* out, constant uint& step, uint i [[thread_position_in_grid]]) {
      float big[24576];  // 96 KiB
      for (uint j = 0; j < 24576; ++j) big[j] = float(i * 24576 + j);
      threadgroup_barrier(mem_flags::mem_threadgroup);  // every thread's array is live at once
      float s = 0.0f;
      for (uint j = 0; j < 24576; j += step) s += big[j];
      out[i] = s;
    }""")
    assert lib.k.cooperative
    out = bronze.zeros(128)
    lib.k(out, 4096, threads=128, group_size=64)
    i = np.arange(128, dtype=np.float64)[:, None]
    np.testing.assert_allclose(out.numpy(), (i * 24576 + np.arange(0, 24576, 4096)).sum(1), rtol=1e-6)


@cpu_only
@pytest.mark.parametrize("barrier", ["threadgroup_barrier(mem_flags::mem_threadgroup);", ""])
def test_a_kernel_over_the_stack_limit_is_a_compile_error(barrier):
    """1.2 MB of private array per thread is over the 512 KiB a thread may
    have (CUDA's local memory limit): a ShaderCompileError at the kernel's
    line, not a fault when its threads run, and the runtime stays usable."""
    src = """
    kernel void k(device float* out, uint i [[thread_position_in_grid]]) {
      float big[300000];
      for (uint j = 0; j < 300000; ++j) big[j] = float(i + j);
      %s
      out[i] = big[i * 7 %% 300000];
    }""" % barrier
    for _ in range(2):  # the failed build is not cached as a success
        with pytest.raises(bronze.ShaderCompileError, match="1172 KiB of stack per thread") as info:
            bronze.compile_shader(HEADER + src)
        assert info.value.lineno == HEADER.count("\n") + 2
    lib = compile(src.replace("300000", "1000"))
    out = bronze.zeros(64)
    lib.k(out, threads=64, group_size=64)
    np.testing.assert_array_equal(out.numpy(), np.arange(64) * 8 % 1000)


def test_simdgroup_functions():
    lib = compile("""
    kernel void simd(device const float* x, device float* o, uint i [[thread_position_in_grid]],
                     uint lane [[thread_index_in_simdgroup]]) {
      float v = x[i];
      o[i * 10 + 0] = simd_sum(v);
      o[i * 10 + 1] = simd_max(v);
      o[i * 10 + 2] = simd_min(v);
      o[i * 10 + 3] = simd_prefix_exclusive_sum(v);
      o[i * 10 + 4] = simd_prefix_inclusive_sum(v);
      o[i * 10 + 5] = simd_shuffle(v, 3);
      o[i * 10 + 6] = simd_shuffle_down(v, 1);
      o[i * 10 + 7] = simd_shuffle_xor(v, 1);
      o[i * 10 + 8] = simd_broadcast(v, 31);
      o[i * 10 + 9] = float(uint64_t(simd_ballot(v > 0.5f)) & 0xff) + (simd_all(v >= 0.0f) ? 1000.0f : 0.0f) +
                      (simd_any(v > 2.0f) ? 5000.0f : 0.0f);
    }""")
    x = np.random.default_rng(1).random(64, dtype=np.float32)
    o = bronze.zeros(64 * 10)
    lib.simd(x, o, group_size=64)
    r = o.numpy().reshape(64, 10)
    for g in range(2):
        s = x[32 * g:32 * (g + 1)]
        rows = r[32 * g:32 * (g + 1)]
        np.testing.assert_allclose(rows[:, 0], s.sum(), rtol=1e-5)
        np.testing.assert_allclose(rows[:, 1], s.max())
        np.testing.assert_allclose(rows[:, 2], s.min())
        np.testing.assert_allclose(rows[:, 3], np.concatenate([[0], np.cumsum(s)[:-1]]), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(rows[:, 4], np.cumsum(s), rtol=1e-5)
        np.testing.assert_allclose(rows[:, 5], s[3])
        np.testing.assert_allclose(rows[:, 6], np.concatenate([s[1:], s[-1:]]))  # last lane keeps its value
        np.testing.assert_allclose(rows[:, 7], s[np.arange(32) ^ 1])
        np.testing.assert_allclose(rows[:, 8], s[31])
        ballot = sum(1 << l for l in range(8) if s[l] > 0.5)
        np.testing.assert_allclose(rows[:, 9], ballot + 1000)


def test_quad_group_functions_including_divergent_lanes():
    lib = compile("""
    kernel void quad(device const float* x, device float* o, uint i [[thread_position_in_grid]]) {
      float v = x[i];
      o[i * 11 + 0] = quad_sum(v);
      o[i * 11 + 1] = quad_max(v);
      o[i * 11 + 2] = quad_prefix_exclusive_sum(v);
      o[i * 11 + 3] = quad_shuffle(v, 2);
      o[i * 11 + 4] = quad_shuffle_down(v, 1);
      o[i * 11 + 5] = quad_shuffle_xor(v, 3);
      o[i * 11 + 6] = quad_shuffle_rotate_up(v, 1);
      o[i * 11 + 7] = quad_any(v > 0.9f) ? 1.0f : 0.0f;
      o[i * 11 + 8] = float(quad_and(uint(i) | 0x100u)) + 1000.0f * float(quad_vote::vote_t(quad_ballot(v > 0.5f)));
      if (i % 4 != 1) {  // lane 1 of each quad sits these out
        o[i * 11 + 9] = quad_sum(v);
        o[i * 11 + 10] = float(quad_vote::vote_t(quad_active_threads_mask()));
      }
    }""")
    x = np.random.default_rng(2).random(64, dtype=np.float32)
    o = bronze.zeros(64 * 11)
    lib.quad(x, o, group_size=64)
    r = o.numpy().reshape(16, 4, 11)
    q = x.reshape(16, 4)
    np.testing.assert_allclose(r[..., 0], np.repeat(q.sum(1, keepdims=True), 4, 1), rtol=1e-6)
    np.testing.assert_array_equal(r[..., 1], np.repeat(q.max(1, keepdims=True), 4, 1))
    np.testing.assert_allclose(r[..., 2], np.cumsum(q, 1) - q, rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(r[..., 3], np.repeat(q[:, 2:3], 4, 1))
    np.testing.assert_array_equal(r[..., 4], np.concatenate([q[:, 1:], q[:, 3:]], 1))  # lane 3 keeps its own
    np.testing.assert_array_equal(r[..., 5], q[:, [3, 2, 1, 0]])
    np.testing.assert_array_equal(r[..., 6], q[:, [3, 0, 1, 2]])
    np.testing.assert_array_equal(r[..., 7], np.repeat((q > 0.9).any(1, keepdims=True), 4, 1))
    ids = np.arange(64).reshape(16, 4) | 0x100
    ands = np.repeat(np.bitwise_and.reduce(ids, 1)[:, None], 4, 1)
    votes = ((q > 0.5) * [1, 2, 4, 8]).sum(1)
    np.testing.assert_array_equal(r[..., 8], ands + 1000.0 * np.repeat(votes[:, None], 4, 1))
    partial = q[:, [0, 2, 3]].sum(1)
    np.testing.assert_allclose(r[:, [0, 2, 3], 9], np.repeat(partial[:, None], 3, 1), rtol=1e-6)
    assert not r[:, 1, 9].any()
    np.testing.assert_array_equal(r[:, [0, 2, 3], 10], 0b1101)  # the inactive lane's bit is clear


def test_simdgroup_async_copies_tiles_with_edges_and_back():
    # As flash-attention kernels stage tiles: each simdgroup copies a 10 x 6
    # tile of a 33-column matrix into threadgroup memory (past the matrix
    # edge: zeros or the edge element), waits, and copies its result back.
    lib = compile("""
    kernel void stage(device const float* m [[buffer(0)]], device float* out [[buffer(1)]],
                      device float* flat [[buffer(2)]], constant uint2& size [[buffer(3)]],
                      constant int& edge [[buffer(4)]],
                      uint sg [[simdgroup_index_in_threadgroup]], uint lane [[thread_index_in_simdgroup]],
                      uint tg [[threadgroup_position_in_grid]]) {
      threadgroup float tile[2][6][10];
      threadgroup float line[2][40];
      const uint t = tg * 2 + sg;          // tile t: columns 10 t .. 10 t + 9
      const ulong2 src_tile(min(10u, size.x - min(size.x, 10 * t)), size.y);
      simdgroup_event ev[2];
      ev[0] = simdgroup_async_copy(&tile[sg][0][0], 10, 1, ulong2(10, 6), m + 10 * t, size.x, 1, src_tile,
                                   long2(0, 0), edge ? simdgroup_async_copy_clamp_mode::clamp_to_edge
                                                     : simdgroup_async_copy_clamp_mode::clamp_to_zero);
      ev[1] = simdgroup_async_copy(&line[sg][0], m + 40 * t, 40);
      simdgroup_event::wait(2, ev);
      for (uint k = lane; k < 60; k += 32) tile[sg][k / 10][k % 10] *= 2;
      simdgroup_barrier(mem_flags::mem_threadgroup);
      ev[0] = simdgroup_async_copy(out + 10 * t, 40, 1, ulong2(10, 6), &tile[sg][0][0], 10, 1, ulong2(10, 6));
      ev[1] = simdgroup_async_copy(flat + 40 * t, &line[sg][0], 40);
      simdgroup_event::wait(2, ev);
    }""")
    rng = np.random.default_rng(4)
    m = rng.standard_normal((6, 33)).astype(np.float32)
    for edge in (0, 1):
        out, flat = bronze.zeros(6 * 40), bronze.zeros(4 * 40)
        lib.stage(m.ravel(), out, flat, [33, 6], edge, threads=(128, 1, 1), group_size=(64, 1, 1))
        padded = np.pad(m, ((0, 0), (0, 7)), mode="edge" if edge else "constant")
        np.testing.assert_array_equal(out.cpu().numpy().reshape(6, 40), 2 * padded)
        np.testing.assert_array_equal(flat.cpu().numpy(), m.ravel()[:160])


def test_simd_reduction_in_divergent_code_and_partial_group():
    lib = compile("""
    kernel void red(device const float* x, device float* out, constant uint& n, uint i [[thread_position_in_grid]],
                    uint lane [[thread_index_in_simdgroup]], uint sg [[simdgroup_index_in_threadgroup]],
                    uint nsg [[simdgroups_per_threadgroup]]) {
      threadgroup float part[32];
      float v = simd_sum(x[i]);
      if (lane == 0) part[sg] = v;
      threadgroup_barrier(mem_flags::mem_threadgroup);
      if (sg == 0) {
        float w = lane < nsg ? part[lane] : 0.0f;
        w = simd_sum(w);
        if (lane == 0) out[0] = w;
      }
    }""")
    n = 100  # one group of 100 threads: 4 simdgroups, the last of 4 lanes
    x = np.arange(n, dtype=np.float32)
    out = bronze.zeros(1)
    lib.red(x, out, n, threads=n)
    assert out.numpy()[0] == x.sum()


def test_simdgroup_functions_in_both_branches_of_a_divergent_if():
    # Each branch's collective takes the lanes that run that branch, as on
    # the GPU, where the two sides run one after the other; a loop whose
    # lanes leave at different iterations reduces over those still in it,
    # and all lanes meet again after it.
    lib = compile("""
    kernel void branches(device float* o, uint lane [[thread_index_in_simdgroup]]) {
      float a, b;
      if (lane < 8) {
        a = simd_sum(1.0f);
        b = simd_max(float(lane));
      } else {
        a = simd_sum(2.0f) + 100.0f;
        b = simd_min(float(lane));
      }
      uint trips = 0;
      float in_loop = 0.0f;
      for (uint k = 0; k < lane % 4 + 1; ++k) {
        in_loop += simd_sum(1.0f);
        ++trips;
      }
      o[lane * 4 + 0] = a;
      o[lane * 4 + 1] = b;
      o[lane * 4 + 2] = in_loop;
      o[lane * 4 + 3] = simd_sum(float(trips));
    }""")
    o = bronze.zeros(32 * 4)
    lib.branches(o, threads=32)
    r = o.numpy().reshape(32, 4)
    lane = np.arange(32)
    np.testing.assert_array_equal(r[:, 0], np.where(lane < 8, 8, 24 * 2 + 100))
    np.testing.assert_array_equal(r[:, 1], np.where(lane < 8, 7, 8))
    # iteration k runs on the lanes with lane % 4 >= k: 32, 24, 16 and 8 of them
    np.testing.assert_array_equal(r[:, 2], [sum([32, 24, 16, 8][: l % 4 + 1]) for l in lane])
    np.testing.assert_array_equal(r[:, 3], (lane % 4 + 1).sum())


def test_atomics_histogram():
    lib = compile("""
    kernel void hist(device const uint* v, device atomic_uint* bins, device atomic_int* mx,
                     device atomic_float* total, uint i [[thread_position_in_grid]]) {
      atomic_fetch_add_explicit(&bins[v[i] % 16], 1u, memory_order_relaxed);
      atomic_fetch_max_explicit(mx, int(v[i]), memory_order_relaxed);
      atomic_fetch_add_explicit(total, 0.5f, memory_order_relaxed);
    }
    kernel void ops(device atomic_int* a, uint i [[thread_position_in_grid]]) {
      atomic_fetch_or_explicit(&a[0], 1 << (i % 8), memory_order_relaxed);
      atomic_fetch_and_explicit(&a[1], ~(1 << (i % 8)), memory_order_relaxed);
      atomic_fetch_xor_explicit(&a[2], 1, memory_order_relaxed);
      atomic_fetch_min_explicit(&a[3], int(i), memory_order_relaxed);
      atomic_fetch_sub_explicit(&a[4], 2, memory_order_relaxed);
      int expected = atomic_load_explicit(&a[5], memory_order_relaxed);
      while (!atomic_compare_exchange_weak_explicit(&a[5], &expected, expected + 3, memory_order_relaxed, memory_order_relaxed)) {}
      atomic_store_explicit(&a[6], 42, memory_order_relaxed);
      atomic_exchange_explicit(&a[7], 7, memory_order_relaxed);
    }""")
    v = np.random.default_rng(2).integers(0, 1000, 100000).astype(np.int32)
    bins, mx, total = bronze.zeros(16, dtype=bronze.int32), bronze.zeros(1, dtype=bronze.int32), bronze.zeros(1)
    lib.hist(v, bins, mx, total)
    np.testing.assert_array_equal(bins.numpy(), np.bincount(v % 16, minlength=16))
    assert mx.numpy()[0] == v.max()
    assert total.numpy()[0] == 50000.0
    a = bronze.tensor(np.array([0, -1, 0, 1 << 30, 0, 0, 0, 0], dtype=np.int32))
    lib.ops(a, threads=1001)
    assert a.numpy().tolist() == [255, ~255, 1, 0, -2002, 3003, 42, 7]


def test_softmax_rows():
    lib = compile("""
    kernel void softmax(device const float* x, device float* y, constant uint& cols,
                        uint row [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
                        uint tpg [[threads_per_threadgroup]]) {
      threadgroup float red[256];
      float m = -INFINITY;
      for (uint c = tid; c < cols; c += tpg) m = max(m, x[row * cols + c]);
      red[tid] = m;
      threadgroup_barrier(mem_flags::mem_threadgroup);
      for (uint s = tpg / 2; s > 0; s >>= 1) {
        if (tid < s) red[tid] = max(red[tid], red[tid + s]);
        threadgroup_barrier(mem_flags::mem_threadgroup);
      }
      m = red[0];
      threadgroup_barrier(mem_flags::mem_threadgroup);
      float sum = 0.0f;
      for (uint c = tid; c < cols; c += tpg) sum += fast::exp(x[row * cols + c] - m);
      red[tid] = sum;
      threadgroup_barrier(mem_flags::mem_threadgroup);
      for (uint s = tpg / 2; s > 0; s >>= 1) {
        if (tid < s) red[tid] += red[tid + s];
        threadgroup_barrier(mem_flags::mem_threadgroup);
      }
      for (uint c = tid; c < cols; c += tpg) y[row * cols + c] = metal::exp(x[row * cols + c] - m) / red[0];
    }""")
    x = np.random.default_rng(3).standard_normal((6, 300)).astype(np.float32)
    y = bronze.empty(6, 300)
    lib.softmax(x, y, 300, threads=6 * 64, group_size=64)
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(y.numpy(), e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-7)


def test_tiled_matmul_with_threadgroup_memory():
    lib = compile("""
    #define TILE 8
    kernel void matmul(device const float* A, device const float* B, device float* C, constant uint3& dims,
                       uint2 gid [[thread_position_in_grid]], uint2 lid [[thread_position_in_threadgroup]]) {
      threadgroup float As[TILE][TILE];
      threadgroup float Bs[TILE][TILE];
      uint M = dims.x, K = dims.y, N = dims.z;
      float acc = 0.0f;
      for (uint t = 0; t < (K + TILE - 1) / TILE; ++t) {
        uint ak = t * TILE + lid.x, bk = t * TILE + lid.y;
        As[lid.y][lid.x] = (gid.y < M && ak < K) ? A[gid.y * K + ak] : 0.0f;
        Bs[lid.y][lid.x] = (bk < K && gid.x < N) ? B[bk * N + gid.x] : 0.0f;
        threadgroup_barrier(mem_flags::mem_threadgroup);
        for (uint k = 0; k < TILE; ++k) acc = fma(As[lid.y][k], Bs[k][lid.x], acc);
        threadgroup_barrier(mem_flags::mem_threadgroup);
      }
      if (gid.y < M && gid.x < N) C[gid.y * N + gid.x] = acc;
    }""")
    rng = np.random.default_rng(4)
    M, K, N = 20, 13, 17
    A, B = rng.random((M, K), dtype=np.float32), rng.random((K, N), dtype=np.float32)
    C = bronze.zeros(M, N)
    lib.matmul(A, B, C, [M, K, N], threads=(24, 24), group_size=(8, 8))
    np.testing.assert_allclose(C.numpy(), A @ B, rtol=1e-5)


def test_half_and_bfloat_kernels():
    lib = compile("""
    kernel void h(device half* y, device const half* x, uint i [[thread_position_in_grid]]) {
      half2 v = half2(x[i], 1.0h);
      y[i] = v.x * 2.0h + v.y;
    }
    kernel void b(device bfloat* y, device const float* x, uint i [[thread_position_in_grid]]) {
      float f = x[i];
      y[i] = bfloat(f * 2.0f);
    }""")
    x = np.linspace(-2, 2, 9).astype(np.float16)
    y = bronze.empty(9, dtype=bronze.float16)
    lib.h(y, x)
    np.testing.assert_array_equal(y.numpy(), (x * np.float16(2) + np.float16(1)))
    xb = np.array([1.0, 3.0, -0.5, 100.0], dtype=np.float32)
    yb = bronze.empty(4, dtype=bronze.bfloat16)
    lib.b(yb, xb)
    assert yb.to(bronze.float32).numpy().tolist() == [2.0, 6.0, -1.0, 200.0]


def test_vectors_swizzles_and_math():
    lib = compile("""
    kernel void v(device float* o, device const float4* x, device packed_float3* p, uint i [[thread_position_in_grid]]) {
      float4 a = x[i];
      float3 c = a.xyz * 2.0f;
      float2 s = a.xy + a.zw;
      a.xy = a.yx;
      o[i * 12 + 0] = dot(c, float3(1.0f));
      o[i * 12 + 1] = length(float2(3.0f, 4.0f));
      o[i * 12 + 2] = s.x - s.y;
      o[i * 12 + 3] = a.x;
      o[i * 12 + 4] = metal::precise::sqrt(16.0f) + fast::rsqrt(4.0f);
      o[i * 12 + 5] = clamp(a.w, 0.0f, 1.0f) + select(1.0f, 2.0f, a.z > 100.0f);
      o[i * 12 + 6] = normalize(float3(0.0f, 3.0f, 4.0f)).z;
      o[i * 12 + 7] = isnan(NAN) ? 1.0f : 0.0f;
      o[i * 12 + 8] = tanh(0.5f) + fma(2.0f, 3.0f, 1.0f) + pow(2.0f, 3.0f) + floor(-1.5f) + abs(-2.0f);
      o[i * 12 + 9] = float(sizeof(float3)) + float(sizeof(packed_float3)) / 100.0f;
      o[i * 12 + 10] = cross(float3(1, 0, 0), float3(0, 1, 0)).z + float(all(int2(1, 2) > int2(0))) +
                       float(int2(uint4(a).zw).x);  // a swizzle of another element type converts
      o[i * 12 + 11] = max(float4(1, 5, 3, 2), float4(4)).y + min(2, 3);
      p[i] = packed_float3(c.x, c.y, c.z);
    }""")
    x = np.array([[1, 2, 3, 4], [5, 6, 7, 8]], dtype=np.float32)
    o = bronze.zeros(2 * 12)
    p = bronze.zeros(2 * 3)
    lib.v(o, x, p, threads=2)
    r = o.numpy().reshape(2, 12)
    np.testing.assert_allclose(r[:, 0], 2 * x[:, :3].sum(1))
    assert (r[:, 1] == 5).all()
    np.testing.assert_allclose(r[:, 2], (x[:, 0] + x[:, 2]) - (x[:, 1] + x[:, 3]))
    np.testing.assert_allclose(r[:, 3], x[:, 1])
    np.testing.assert_allclose(r[:, 4], 4.5)
    np.testing.assert_allclose(r[:, 5], 2.0)
    np.testing.assert_allclose(r[:, 6], 0.8, rtol=1e-6)
    assert (r[:, 7] == 1).all()
    np.testing.assert_allclose(r[:, 8], np.tanh(0.5) + 7 + 8 - 2 + 2, rtol=1e-6)
    np.testing.assert_allclose(r[:, 9], 16.12)  # float3 is padded to 16 bytes, packed_float3 is 12
    np.testing.assert_array_equal(r[:, 10], 2 + x[:, 2])
    assert (r[:, 11] == 5 + 2).all()
    np.testing.assert_allclose(p.numpy().reshape(2, 3), 2 * x[:, :3])


def test_integer_functions_at_their_own_width():
    # Metal's integer family, scalar and per lane: widths are the type's own
    # (clz(ushort(1)) is 15), extract_bits sign-extends a signed type, the
    # saturating forms clamp to the type's range, mulhi takes the high half.
    lib = compile("""
    template <typename T>
    kernel void ints(device const T* a [[buffer(0)]], device const T* b [[buffer(1)]],
                     device long* o [[buffer(2)]], uint i [[thread_position_in_grid]]) {
      const T x = a[i], y = b[i];
      device long* r = o + i * 16;
      r[0] = clz(x); r[1] = ctz(x); r[2] = popcount(x); r[3] = reverse_bits(x);
      r[4] = extract_bits(x, 2, 5); r[5] = insert_bits(x, y, 3, 4); r[6] = rotate(x, T(3));
      r[7] = hadd(x, y); r[8] = rhadd(x, y); r[9] = absdiff(x, y);
      r[10] = addsat(x, y); r[11] = subsat(x, y); r[12] = mulhi(x, y); r[13] = madhi(x, y, T(1));
      r[14] = madsat(x, y, T(1));
      const vec<T, 2> v = popcount(vec<T, 2>(x, y)) + clz(vec<T, 2>(y, x));
      r[15] = v.x * 1000 + v.y;
    }
    template [[host_name("ints_int")]] kernel void ints<int>(device const int*, device const int*, device long*, uint);
    template [[host_name("ints_uint")]] kernel void ints<uint>(device const uint*, device const uint*, device long*, uint);
    template [[host_name("ints_short")]] kernel void ints<short>(device const short*, device const short*, device long*, uint);
    template [[host_name("ints_uchar")]] kernel void ints<uchar>(device const uchar*, device const uchar*, device long*, uint);
    template [[host_name("ints_ulong")]] kernel void ints<ulong>(device const ulong*, device const ulong*, device long*, uint);
    """)

    def model(x, y, bits, signed):
        mask = (1 << bits) - 1
        u, w = x & mask, y & mask

        def wrap(v):
            v &= mask
            return v - (1 << bits) if signed and v >> (bits - 1) else v

        lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, mask)
        sat = lambda v: min(max(v, lo), hi)
        clz = lambda v: bits - (v & mask).bit_length()
        ctz = lambda v: bits if v & mask == 0 else ((v & mask) & -(v & mask)).bit_length() - 1
        field = (u >> 2) & 0x1f
        ins = (u & ~(0xf << 3)) | ((w << 3) & (0xf << 3))
        return [clz(x), ctz(x), bin(u).count("1"), wrap(int(format(u, f"0{bits}b")[::-1], 2)),
                wrap(field << (bits - 5)) >> (bits - 5) if signed else field, wrap(ins),
                wrap((u << 3 | u >> (bits - 3))), (x + y) >> 1, (x + y + 1) >> 1, wrap(abs(x - y)),
                sat(x + y), sat(x - y), wrap((x * y) >> bits), wrap(((x * y) >> bits) + 1), sat(sat(x * y) + 1),
                (bin(u).count("1") + clz(y)) * 1000 + bin(w).count("1") + clz(x)]

    cases = {"ints_int": (np.int32, 32, True, [5, -7, 2**31 - 1, -2**31, 0, 123456789]),
             "ints_uint": (np.uint32, 32, False, [5, 7, 2**32 - 1, 1, 0, 3000000000]),
             "ints_short": (np.int16, 16, True, [5, -7, 32767, -32768, 0, 1234]),
             "ints_uchar": (np.uint8, 8, False, [5, 7, 255, 1, 0, 200]),
             "ints_ulong": (np.uint64, 64, False, [5, 7, 2**64 - 1, 2, 0, 2**40 + 3])}
    for name, (dtype, bits, signed, xs) in cases.items():
        a = np.array(xs, dtype=dtype)
        b = np.array(xs[::-1], dtype=dtype)
        o = bronze.zeros(len(xs) * 16, dtype=bronze.int64)
        getattr(lib, name)(a, b, o, threads=len(xs))
        got = o.numpy().reshape(len(xs), 16)
        for k, (x, y) in enumerate(zip(xs, xs[::-1])):
            want = [v if v < 2**63 else v - 2**64 for v in (w & (2**64 - 1) for w in model(x, y, bits, signed))]
            assert got[k].tolist() == want, (name, x, y)


def test_float_vector_and_logical_forms():
    # modf, smoothstep, ldexp/frexp per lane, fma with a scalar operand, a
    # scalar dot, ilogb/logb/pown; vectors' ~ ! && ||, compound assignment
    # with a scalar and a scalar on the left of a shift.
    lib = compile("""
    kernel void f(device const float4* x [[buffer(0)]], device float* o [[buffer(1)]], uint i [[thread_position_in_grid]]) {
      const float4 v = x[i];
      float4 ip;
      const float4 fr = modf(v, ip);
      int4 e;
      const float4 m = frexp(v, e);
      uint4 u = uint4(7, 8, 9, 10);
      u &= 3u;
      u |= 8u;
      u <<= 1;
      const uint4 sh = 1u << uint4(0, 1, 2, 3);
      const bool4 b = v > 0.0f;
      const int4 n = ~int4(0, 1, -1, 5);
      device float* r = o + i * 12;
      r[0] = fr.x + fr.y + fr.z + fr.w;
      r[1] = ip.x + ip.y + ip.z + ip.w;
      r[2] = smoothstep(0.0f, 4.0f, v).x + smoothstep(0.0f, 4.0f, 1.0f);
      r[3] = ldexp(m, e).y + ldexp(float2(1.0f), 3).x;
      r[4] = fma(v, 2.0f, float4(1.0f)).z + fma(float2(1, 2), float2(3, 4), 5.0f).y;
      r[5] = dot(2.0f, v.w);
      r[6] = float(ilogb(v.y)) + logb(8.0f) + pown(v.x, 3);
      r[7] = float(u.x + u.y * 10 + u.z * 100 + u.w * 1000);
      r[8] = float(sh.x + sh.y + sh.z + sh.w);
      r[9] = float(all(!b == (v <= 0.0f))) + float(any(b && !b)) + float(all(b || !b)) * 10;
      r[10] = float(n.x + n.y * 10 + n.z * 100 + n.w * 1000);
      r[11] = float(extract_bits(int2(-8, 8), 2, 2).x);
    }""")
    x = np.array([[1.25, -2.5, 3.75, 0.5], [-0.25, 6.5, 2.0, -3.0]], dtype=np.float32)
    o = bronze.zeros(2 * 12)
    lib.f(x, o, threads=2)
    r = o.numpy().reshape(2, 12)
    fr, ip = np.modf(x)
    t = np.clip(x[:, 0] / 4, 0, 1)
    np.testing.assert_allclose(r[:, 0], fr.sum(1), rtol=1e-6)
    np.testing.assert_array_equal(r[:, 1], ip.sum(1))
    np.testing.assert_allclose(r[:, 2], t * t * (3 - 2 * t) + 0.15625, rtol=1e-6)
    np.testing.assert_array_equal(r[:, 3], x[:, 1] + 8)
    np.testing.assert_array_equal(r[:, 4], 2 * x[:, 2] + 1 + 13)
    np.testing.assert_array_equal(r[:, 5], 2 * x[:, 3])
    np.testing.assert_allclose(r[:, 6], np.floor(np.log2(np.abs(x[:, 1]))) + 3 + x[:, 0] ** 3, rtol=1e-6)
    u = ((np.array([7, 8, 9, 10]) & 3) | 8) << 1
    assert (r[:, 7] == u[0] + u[1] * 10 + u[2] * 100 + u[3] * 1000).all()
    assert (r[:, 8] == 15).all() and (r[:, 9] == 11).all()
    assert (r[:, 10] == -1 - 2 * 10 + 0 * 100 - 6 * 1000).all()
    assert (r[:, 11] == -2).all()  # bits 2..3 of -8 (...11000) are 10: -2 signed


def test_fp_encoding_traits_in_a_bfloat_converter():
    # The bit-level bfloat conversion MLX keeps for Metal without bfloat,
    # written with _fp_encoding_traits' masks: NaN stays a NaN, others round
    # to nearest even.
    lib = compile("""
    constexpr METAL_FUNC uint16_t to_bfloat_bits(float x) {
      if ((as_type<uint32_t>(x) & ~_fp_encoding_traits<float>::sign_mask) > _fp_encoding_traits<float>::inf_mask)
        return 0x7FC0;
      uint32_t bits = as_type<uint32_t>(x);
      bits += ((bits >> 16) & 1) + 0x7FFF;
      return bits >> 16;
    }
    kernel void bf(device const float* x, device ushort* o, uint i [[thread_position_in_grid]]) {
      o[i] = to_bfloat_bits(x[i]);
      if (i == 0) o[5] = _fp_encoding_traits<half>::exponent_mask + _fp_encoding_traits<bfloat>::mantissa_mask;
    }""")
    x = np.array([1.0, -2.5, np.nan, 1.00390625, 1.01171875], dtype=np.float32)  # the last two tie: to even
    o = bronze.zeros(6, dtype=bronze.uint16)
    lib.bf(x, o, threads=5)
    bits = x.view(np.uint32).astype(np.uint64)
    want = ((bits + ((bits >> 16) & 1) + 0x7FFF) >> 16).astype(np.uint16)
    want[2] = 0x7FC0
    assert o.numpy()[:5].tolist() == want.tolist()
    assert o.numpy()[5] == 0x7C00 + 0x7F


def test_llama_cpp_style_constructs():
    # Written as ggml-metal writes them: GNU range designators, __extension__
    # anonymous unions, a pragma whose count is a macro, an untyped buffer,
    # Metal's scalar-to-vector conversions (half4 * float, c ? half4 : 0.0f,
    # fmax(0, float4)) and float4(packed_char4).
    lib = compile("""
    #define MIN(x, y) ((x) < (y) ? (x) : (y))
    typedef struct {
      __extension__ union {
        struct { half d; half m; };
        half2 dm;
      };
      char qs[4];
    } block_q;
    template <typename T4, short N>
    kernel void k(device const void* src [[buffer(0)]], device const T4* h4 [[buffer(1)]],
                  device float* o [[buffer(2)]], uint i [[thread_position_in_grid]]) {
      device const block_q* b = (device const block_q*) src + i;
      float acc[N] = { [0 ... N - 1] = 0.5f };
      int picks[5] = { [1 ... 2] = 7, [4] = 9 };
      #pragma unroll (MIN(N, 4))
      for (short j = 0; j < N; ++j) acc[j] += float(b->dm[j % 2]);
      float4 q = float4(*(device const packed_char4*) b->qs) * float(b->d);
      float slope = 0.5f;
      float4 m = float4(i % 2 ? slope * h4[i] : 0.0f);
      float4 f = fmax(0, q - 2.0f) + fmin(1, m) + max(q, 0);
      o[i * 8 + 0] = acc[0] + acc[N - 1];
      o[i * 8 + 1] = float(picks[0] + picks[2] + picks[3] + picks[4]);
      o[i * 8 + 2] = f.x;
      o[i * 8 + 3] = f.y;
      o[i * 8 + 4] = f.z;
      o[i * 8 + 5] = f.w;
      o[i * 8 + 6] = fmax(0, -float(b->m));
      o[i * 8 + 7] = m.w;
    }
    template [[host_name("k_h4")]] kernel void k<half4, 6>(device const void*, device const half4*, device float*, uint);
    """)
    blocks = np.zeros(2, dtype=[("d", np.float16), ("m", np.float16), ("qs", np.int8, 4)])
    blocks["d"], blocks["m"] = [2, 0.5], [-1.5, 3]
    blocks["qs"] = [[1, -2, 3, 4], [0, 5, -6, 1]]
    h4 = np.array([[1, 2, 3, 4], [0.5, 1.5, -2, 4]], dtype=np.float16)
    o = bronze.zeros(16)
    lib.k_h4(np.frombuffer(blocks.tobytes(), dtype=np.uint8), h4, o, threads=2)
    r = o.numpy().reshape(2, 8)
    d, m = blocks["d"].astype(np.float32), blocks["m"].astype(np.float32)
    np.testing.assert_array_equal(r[:, 0], 1.0 + d + m)  # acc[0] += d, acc[5] += m
    np.testing.assert_array_equal(r[:, 1], 0 + 7 + 0 + 9)
    q = blocks["qs"].astype(np.float32) * d[:, None]
    hm = np.where(np.arange(2)[:, None] % 2 == 1, 0.5 * h4.astype(np.float32), 0)
    np.testing.assert_allclose(r[:, 2:6], np.maximum(0, q - 2) + np.minimum(1, hm) + np.maximum(q, 0))
    np.testing.assert_array_equal(r[:, 6], np.maximum(0, -m))
    np.testing.assert_array_equal(r[:, 7], hm[:, 3])


def test_llama_cpp_style_binding_bytes_args_and_threadgroup_memory():
    # As ggml-metal's host code binds a kernel: the argument struct as bytes
    # at slot 0, every tensor as device char* whatever its elements (Metal's
    # buffers are untyped), strides in bytes, the threadgroup buffer's size
    # as one int (0 where the kernel leaves it unused), and short function
    # constants set per pipeline.
    lib = compile("""
    typedef struct { int32_t ne00; uint64_t nb01; float scale; int16_t r2; } kargs_scale;
    constant short FC_shift [[function_constant(700)]];
    kernel void kernel_scale_rows(constant kargs_scale & args, device const char * src0, device char * dst,
                                  threadgroup float * shmem [[threadgroup(0)]],
                                  uint3 tgpig [[threadgroup_position_in_grid]], ushort tiitg [[thread_index_in_threadgroup]],
                                  ushort3 ntg [[threads_per_threadgroup]]) {
      device const float * x = (device const float *) (src0 + tgpig.x * args.nb01);
      device float * y = (device float *) (dst + tgpig.x * args.nb01);
      float m = 0;
      for (int i = tiitg; i < args.ne00; i += ntg.x) m = max(m, fabs(x[i]));
      shmem[tiitg] = m;
      threadgroup_barrier(mem_flags::mem_threadgroup);
      if (tiitg == 0) {
        for (int t = 1; t < ntg.x; ++t) m = max(m, shmem[t]);
        shmem[0] = m;
      }
      threadgroup_barrier(mem_flags::mem_threadgroup);
      for (int i = tiitg; i < args.ne00; i += ntg.x) y[i] = x[i] / shmem[0] * args.scale * args.r2 + FC_shift;
    }
    kernel void kernel_negate(constant kargs_scale & args, device const char * src0, device char * dst,
                              threadgroup char * shmem [[threadgroup(0)]], uint i [[thread_position_in_grid]]) {
      ((device float *) dst)[i] = -((device const float *) src0)[i];
    }""")
    rows, n, nth = 3, 100, 32
    x = np.random.default_rng(5).standard_normal((rows, n)).astype(np.float32)
    args = struct.pack("<i4xQfh2x", n, n * 4, 0.5, 3)
    y = bronze.zeros((rows, n))
    k = lib.specialize("kernel_scale_rows", {700: 2})
    k(args, bronze.tensor(x), y, threads=(rows * nth, 1, 1), group_size=(nth, 1, 1), threadgroup_memory=nth * 4)
    want = x / np.abs(x).max(1, keepdims=True) * 1.5 + 2
    np.testing.assert_allclose(y.to("cpu").numpy(), want, rtol=1e-6)
    # A threadgroup buffer the kernel leaves unused takes 0 bytes, as llama.cpp sets it.
    lib.kernel_negate(args, bronze.tensor(x), y, threads=rows * n, threadgroup_memory=0)
    np.testing.assert_array_equal(y.to("cpu").numpy(), -x)


def test_conditional_operator_mixing_half_and_bfloat():
    # ggml-metal's `il < 2 ? xb->d : xb->d / 16.f` and `c ? (S1) *x : 0`:
    # Metal applies the usual arithmetic conversions to a half or bfloat
    # against an int or a float, where C++ finds the class types' two
    # conversions ambiguous (half under NVRTC, bfloat on both). The forms
    # around them keep their meaning: a pointer against 0, nested and void
    # conditionals, an lvalue conditional, a comma inside template arguments,
    # a class template's constants (MLX's steel loaders).
    lib = compile("""
    struct block_q { half d; half m; };
    template <short BN, short tgp_size>
    struct Loader {
      static constant constexpr short vec_size = (BN == 8) ? 1 : (tgp_size / BN >= 8 ? 8 : 4);
    };
    template <typename T0, typename S1>
    kernel void cond_mix(device const block_q* xb [[buffer(0)]], device const T0* x [[buffer(1)]],
                         device float* o [[buffer(2)]], constant int& n [[buffer(3)]],
                         uint i [[thread_position_in_grid]]) {
      const short il = i % 4;
      const float d = il < 2 ? xb[i].d : xb[i].d / 16.f;
      const S1 v = int(i) < n ? (S1) *((device const T0 *) x + i) : 0;
      const bfloat b = bfloat(float(x[i]));
      const float bf = il == 0 ? b : 0.25f * il;
      const bfloat bi = il == 3 ? b : 2;
      device const T0* p = il == 1 ? x : 0;
      const T0 w = p ? p[i] : T0(il > 2 ? 1 : il == 2 ? -1 : 0);
      const float2 s = il == 3 ? float2(d, v)
                               : vec<float, 2>(float(w), float(i >> 1));
      float lo = 0, hi = 0;
      (il & 1 ? hi : lo) = 1.0f;
      il < 4 ? (void)0 : (void)(lo = 5);
      o[i * 7 + 0] = d;
      o[i * 7 + 1] = float(v);
      o[i * 7 + 2] = bf;
      o[i * 7 + 3] = float(bi);
      o[i * 7 + 4] = float(w);
      o[i * 7 + 5] = s.x + s.y;
      o[i * 7 + 6] = lo - hi + Loader<8, 64>::vec_size * 100 + Loader<4, 64>::vec_size * 1000;
    }
    template [[host_name("cond_mix_half")]] kernel void cond_mix<half, half>(
        device const block_q*, device const half*, device float*, constant int&, uint);
    template [[host_name("cond_mix_float")]] kernel void cond_mix<float, float>(
        device const block_q*, device const float*, device float*, constant int&, uint);
    """)
    count = 8
    blocks = np.zeros(count, dtype=[("d", np.float16), ("m", np.float16)])
    blocks["d"] = [1, -2, 3.5, 0.5, 8, 6, -4, 2.25]
    values = np.array([1.5, -2, 0.25, 3, 5, -6, 0.75, 4])  # exact in half and bfloat
    i = np.arange(count)
    il = i % 4
    d = np.where(il < 2, blocks["d"], blocks["d"].astype(np.float32) / 16)
    v = np.where(i < 5, values, 0)
    w = np.where(il == 1, values, np.where(il > 2, 1, np.where(il == 2, -1, 0)))
    want = np.stack([d, v, np.where(il == 0, values, 0.25 * il), np.where(il == 3, values, 2), w,
                     np.where(il == 3, d + v, w + (i >> 1)), np.where(il % 2 == 1, -1, 1) + 100 + 8000], axis=1)
    for name, dtype in (("cond_mix_half", np.float16), ("cond_mix_float", np.float32)):
        o = bronze.zeros(count * 7)
        getattr(lib, name)(np.frombuffer(blocks.tobytes(), dtype=np.uint8), values.astype(dtype), o,
                           np.int32(5), threads=count)
        np.testing.assert_array_equal(o.numpy().reshape(count, 7), want, err_msg=name)


def test_gcc_bit_builtins_as_metals_clang_has_them():
    # MLX's fft sizes its radix loop with `constexpr short power = __builtin_ctz(radix);`.
    lib = compile("""
    constant constexpr int folded = __builtin_ctz(64u) + __builtin_popcount(0xF0u) * 100;
    kernel void bits(device int* o, device const uint* x, uint i [[thread_position_in_grid]]) {
      o[i * 4 + 0] = folded;
      o[i * 4 + 1] = __builtin_ctz(x[i]);
      o[i * 4 + 2] = __builtin_clz(x[i]);
      o[i * 4 + 3] = __builtin_popcount(x[i]) + __builtin_popcountll(0xFFull << 40) * 100;
    }""")
    x = np.array([1, 0x80000000, 0x00F0F000, 12], dtype=np.uint32)
    o = bronze.zeros(16, dtype=bronze.int32)
    lib.bits(o, x, threads=4)
    r = o.cpu().numpy().reshape(4, 4)
    assert (r[:, 0] == 6 + 400).all()
    assert r[:, 1].tolist() == [0, 31, 12, 2]
    assert r[:, 2].tolist() == [31, 0, 8, 28]
    assert r[:, 3].tolist() == [1 + 800, 1 + 800, 8 + 800, 2 + 800]


def test_a_librarys_log1p_overloads_take_half_as_metal_does():
    # MLX's utils.h: log1p(float) beside log1p(complex64_t), whose converting
    # constructor takes anything convertible to float; log1p(half) is Metal's
    # log1p(float) by a standard conversion (a tie for a class-type half).
    lib = compile("""
    struct cplx {
      float re, im;
      template <typename T, typename = enable_if_t<is_convertible_v<T, float>>>
      constexpr cplx(T x) thread : re(x), im(0) {}
    };
    inline float log1p(float x) { return metal::log(1.0f + x); }
    inline cplx log1p(cplx z) { return cplx(log1p(z.re)); }
    struct Log1p {
      template <typename T> T operator()(T x) thread { return log1p(x); }
    };
    template <typename T>
    kernel void k(device const T* x, device T* y, uint i [[thread_position_in_grid]]) { y[i] = Log1p{}(x[i]); }
    template [[host_name("k_half")]] kernel void k<half>(device const half*, device half*, uint);
    template [[host_name("k_float")]] kernel void k<float>(device const float*, device float*, uint);
    """)
    x = np.array([0.0, 0.5, 1.0, 3.0], dtype=np.float16)
    y = bronze.zeros(4, dtype=bronze.float16)
    lib.k_half(x, y)
    np.testing.assert_allclose(y.cpu().numpy().astype(np.float32), np.log1p(x.astype(np.float32)), rtol=2e-3)


def test_dynamic_threadgroup_memory():
    lib = compile("""
    kernel void rev(device float* x, threadgroup float* tmp [[threadgroup(0)]], uint tid [[thread_index_in_threadgroup]],
                    uint n [[threads_per_threadgroup]], uint g [[threadgroup_position_in_grid]]) {
      tmp[tid] = x[g * n + tid];
      threadgroup_barrier(mem_flags::mem_threadgroup);
      x[g * n + tid] = tmp[n - 1 - tid];
    }""")
    x = bronze.arange(64, dtype=bronze.float32)
    with pytest.raises(ValueError, match="threadgroup_memory"):
        lib.rev(x, group_size=32)
    lib.rev(x, group_size=32, threadgroup_memory=[32 * 4])
    assert x.numpy().tolist() == list(range(31, -1, -1)) + list(range(63, 31, -1))


def test_threadgroup_arrays_over_48_kib():
    # MLX's steel attention at head dim 256: its arrays are over the 48 KiB
    # a CUDA function may declare statically, so CUDA carves them from
    # dynamic shared memory, each after the last, the threadgroup buffer
    # after them. Every thread reads what others wrote: an overlap shows.
    lib = compile("""
    template <typename T, int BQ, int BD>
    kernel void attn_like(device const T* x [[buffer(0)]], device T* out [[buffer(1)]],
                          threadgroup T* extra [[threadgroup(0)]], uint tid [[thread_index_in_threadgroup]],
                          uint g [[threadgroup_position_in_grid]]) {
      constexpr int padQ = 16 / sizeof(T);
      constexpr int tgp_mem_s = (BQ / 2) * (BD + padQ);
      threadgroup T Q_smem[BQ * (BD + padQ)];
      threadgroup T KV_smem[tgp_mem_s];
      threadgroup uint count;
      constexpr int NQ = BQ * (BD + padQ);
      if (tid == 0) count = 7;
      for (int i = tid; i < NQ; i += 256) Q_smem[i] = x[i] + T(g);
      for (int i = tid; i < tgp_mem_s; i += 256) KV_smem[i] = x[i] * T(2);
      extra[tid] = T(tid);
      threadgroup_barrier(mem_flags::mem_threadgroup);
      T s = T(count) + extra[255 - tid];
      for (int i = tid; i < NQ; i += 256) s += Q_smem[NQ - 1 - i];
      for (int i = tid; i < tgp_mem_s; i += 256) s += KV_smem[tgp_mem_s - 1 - i];
      out[g * 256 + tid] = s;
    }
    template [[host_name("attn_like_float")]] [[kernel]] void attn_like<float, 32, 256>(
        device const float*, device float*, threadgroup float*, uint, uint);
    """)
    nq, nkv = 32 * 260, 16 * 260
    assert lib.attn_like_float.static_thread_group_memory_length >= (nq + nkv + 1) * 4 > 48 * 1024
    x = np.random.default_rng(3).random(nq, dtype=np.float32)
    out = bronze.zeros(3 * 256)
    lib.attn_like_float(x, out, threads=3 * 256, group_size=256, threadgroup_memory=[256 * 4])
    want = np.zeros((3, 256))
    for g in range(3):
        for t in range(256):
            want[g, t] = 7 + (255 - t) + sum(x[nq - 1 - i] + g for i in range(t, nq, 256)) + \
                sum(2 * x[nkv - 1 - i] for i in range(t, nkv, 256))
    np.testing.assert_allclose(out.numpy().reshape(3, 256), want, rtol=1e-5)


def test_a_library_of_many_kernels_builds_in_parts():
    # MLX's libraries instantiate hundreds to thousands of kernels: bronze
    # builds such a unit in parts, in parallel, each part a module with its
    # range of the kernels. Every kernel runs, from the source and from a
    # compiled library (which holds a part per object).
    n = 160
    src = HEADER + """
    inline float twice(float x) { return 2.0f * x; }
    template <int N>
    kernel void add_n(device float* a [[buffer(0)]], uint i [[thread_position_in_grid]]) { a[i] = twice(a[i]) + N; }
    kernel void negate(device float* a [[buffer(0)]], uint i [[thread_position_in_grid]]) { a[i] = -a[i]; }
    """ + "".join(f'template [[host_name("add_{k}")]] kernel void add_n<{k}>(device float*, uint);\n' for k in range(n))
    built = bronze.compile_shader(src)
    loaded = bronze.load_metallib(bronze.compile_library(src, device=bronze.current_device()))
    for lib in (built, loaded):
        assert len(lib.kernel_names) == n + 1
        for k in range(n):
            a = bronze.ones(4)
            getattr(lib, f"add_{k}")(a, threads=4)
            assert a.numpy().tolist() == [2.0 + k] * 4, k
        a = bronze.ones(4)
        lib.negate(a, threads=4)
        assert a.numpy().tolist() == [-1.0] * 4


def test_argument_buffer_of_a_metal_array_of_pointers():
    # torch.mps's test_argument_buffers: a tuple of tensors binds to a struct
    # holding a metal::array of device pointers.
    lib = compile("""
    constant constexpr int nbuffers = 16;
    template <typename T> struct Inputs { metal::array<device T*, nbuffers> args; };
    template <typename T>
    kernel void sum_all(device T* output, constant Inputs<T>& inputs, uint i [[thread_position_in_grid]]) {
      T acc = inputs.args[0][i];
      for (int k = 1; k < nbuffers; ++k) acc += inputs.args[k][i];
      output[i] = acc;
    }
    template [[host_name("sum_all_float")]] kernel void sum_all<float>(device float*, constant Inputs<float>&, uint);
    template [[host_name("sum_all_int")]] kernel void sum_all<int>(device int*, constant Inputs<int>&, uint);
    """)
    rng = np.random.default_rng(7)
    for dtype, name in ((np.float32, "sum_all_float"), (np.int32, "sum_all_int")):
        rows = (rng.standard_normal((16, 33)) * 100).astype(dtype)
        out = bronze.zeros(33, dtype=bronze.float32 if dtype == np.float32 else bronze.int32)
        getattr(lib, name)(out, tuple(bronze.tensor(r) for r in rows))
        np.testing.assert_allclose(out.cpu().numpy(), rows.sum(axis=0, dtype=dtype), rtol=1e-5)


def test_argument_buffer_struct_reads_and_writes_through_its_pointers():
    lib = compile("""
    struct Gather {
      device const float* table;
      device const int* index;
      device float* out;
    };
    kernel void gather(constant Gather& g [[buffer(0)]], constant float& scale [[buffer(1)]],
                       uint i [[thread_position_in_grid]]) {
      g.out[i] = g.table[g.index[i]] * scale;
    }
    """)
    table = np.linspace(0, 1, 50, dtype=np.float32)
    index = np.array([3, 49, 0, 7, 7, 21], dtype=np.int32)
    out = bronze.zeros(6)
    lib.gather([bronze.tensor(table), bronze.tensor(index), out], 2.0, threads=6)
    np.testing.assert_array_equal(out.cpu().numpy(), table[index] * 2)


def test_a_buffer_bound_as_read_and_written_sees_the_kernels_own_stores():
    # On CUDA, read-only buffers are __restrict__ entry parameters, so a
    # kernel may load in[i] once, before out[i] is stored. A launch that binds
    # a written buffer over a read-only one runs the kernel built without.
    lib = compile("""
    struct Out { device float* out; };
    kernel void twice(device float* out [[buffer(0)]], device const float* in [[buffer(1)]],
                      constant float& k [[buffer(2)]], uint i [[thread_position_in_grid]]) {
      out[i] = in[i] + k;
      out[i] = in[i] * k;
    }
    kernel void twice_through(constant Out& o [[buffer(0)]], device const float* in [[buffer(1)]],
                              constant float& k [[buffer(2)]], uint i [[thread_position_in_grid]]) {
      o.out[i] = in[i] + k;
      o.out[i] = in[i] * k;
    }
    """)
    x = np.arange(300, dtype=np.float32)
    apart = bronze.empty(300)
    lib.twice(apart, x, 3.0)
    np.testing.assert_array_equal(apart.cpu().numpy(), x * 3)
    t = bronze.tensor(x)
    lib.twice(t, t, 3.0)  # in place
    np.testing.assert_array_equal(t.cpu().numpy(), (x + 3) * 3)
    t = bronze.tensor(x)
    lib.twice_through([t], t, 3.0, threads=300)  # in place through an argument buffer
    np.testing.assert_array_equal(t.cpu().numpy(), (x + 3) * 3)
    lib.twice(apart, x, 2.0)  # apart again, after the aliased build
    np.testing.assert_array_equal(apart.cpu().numpy(), x * 2)


def test_argument_buffer_errors_are_clear_and_the_runtime_stays_usable():
    lib = compile("""
    struct Pair { device const float* a; device float* b; };
    kernel void copy(constant Pair& p [[buffer(0)]], device float* w [[buffer(1)]], uint i [[thread_position_in_grid]]) {
      p.b[i] = p.a[i];
      w[i] = 1;
    }
    """)
    a, b, w = bronze.ones(4), bronze.zeros(4), bronze.zeros(4)
    with pytest.raises(ValueError, match=r"holds 2 device pointers as an argument buffer; got 3 tensors"):
        lib.copy([a, b, a], w)
    with pytest.raises(bronze.KernelArgumentError, match="writable device buffer"):
        lib.copy([a, b], [w])
    with pytest.raises(TypeError, match="argument buffer is a list of tensors"):
        lib.copy([a, "b"], w)
    with pytest.raises(ValueError, match=r"\[1\] is not contiguous"):
        lib.copy([a, bronze.ones(2, 2).t()], w)
    lib.copy((a, b), w)
    np.testing.assert_array_equal(b.cpu().numpy(), 1)


@cpu_only
def test_argument_buffer_of_numpy_row_views_zero_copy():
    # Each row of a NumPy array is a view at an offset, as unbind(0) gives in torch.
    lib = compile("""
    struct Rows { metal::array<device float*, 4> r; };
    kernel void scale_rows(constant Rows& rows, uint2 p [[thread_position_in_grid]]) { rows.r[p.y][p.x] *= p.y + 1; }
    """)
    m = np.ones((4, 5), dtype=np.float32)
    lib.scale_rows(list(m), threads=(5, 4))
    bronze.synchronize()  # the kernel writes NumPy's memory in place, asynchronously
    np.testing.assert_array_equal(m, np.arange(1, 5, dtype=np.float32)[:, None] * np.ones(5))


@cpu_only
def test_kernel_reads_numpy_and_torch_style_arrays_zero_copy():
    lib = bronze.compile_shader(SEED)
    n = np.zeros(10, dtype=np.float32)
    lib.full(n, 2.0)
    bronze.synchronize()
    assert (n == 2).all()


def test_compile_errors_point_into_the_users_source():
    src = "kernel void f(device float* o, uint i [[thread_position_in_grid]]) {\n  o[i] = not_declared;\n}\n"
    with pytest.raises(bronze.ShaderCompileError) as info:
        bronze.compile_shader(src)
    e = info.value
    assert isinstance(e, SyntaxError) and isinstance(e, RuntimeError)
    assert e.lineno == 2 and e.offset == 10
    assert "shader.metal:2:10" in str(e) and "not_declared" in str(e)
    assert "o[i] = not_declared;" in str(e)  # the user's line, not generated code
    with pytest.raises(bronze.ShaderCompileError, match="textures"):
        bronze.compile_shader("kernel void f(texture2d<float> t [[texture(0)]], uint i [[thread_position_in_grid]]) {}")
    with pytest.raises(bronze.ShaderCompileError, match=":1:"):
        bronze.compile_shader("kernel void f(device float* o) { /* never closed")
    with pytest.raises(TypeError):
        bronze.compile_shader(b"bytes are not source")
    # A compile error is never hidden by a cache; the runtime stays usable.
    with pytest.raises(bronze.ShaderCompileError):
        bronze.compile_shader(src)
    x = bronze.empty(3)
    bronze.compile_shader(SEED).full(x, 1.0)
    assert x.numpy().tolist() == [1, 1, 1]


def test_bad_calls_raise_before_running():
    lib = bronze.compile_shader(SEED)
    x = bronze.zeros(8)
    with pytest.raises(AttributeError) as info:
        lib.nope
    assert isinstance(info.value, RuntimeError) and "full" in str(info.value)
    assert not hasattr(lib, "nope")
    assert lib.full is lib.full  # found once, then an ordinary attribute (the launch hot path)
    assert dir(lib).count("full") == 1
    with pytest.raises(TypeError, match="takes 2 arguments"):
        lib.full(x)
    with pytest.raises(TypeError, match="float64"):  # torch.mps binds its bytes; bronze's validate=True refuses
        bronze.compile_shader(SEED, validate=True, device="cpu").full(bronze.zeros(8, dtype=bronze.float64, device="cpu"), 1.0)
    with pytest.raises(TypeError, match="buffer"):
        lib.full(1.0, 1.0)
    with pytest.raises(TypeError, match="number"):
        lib.full(x, "a")
    with pytest.raises(RuntimeError, match="buffer"):  # torch.mps raises RuntimeError there
        lib.full(1.0, 1.0)
    with pytest.raises(ValueError, match="limit"):
        lib.full(x, 1.0, group_size=2048)
    with pytest.raises(TypeError, match="keyword"):
        lib.full(x, 1.0, thread=8)
    with pytest.raises(ValueError):
        lib.full(x, 1.0, threads=(1, 2, 3, 4))
    lib.full(x, 5.0)
    assert x.numpy().tolist() == [5.0] * 8


def test_profiler_records_kernel_by_name(tmp_path):
    import json

    lib = bronze.compile_shader(SEED)
    x = bronze.empty(100)
    with bronze.profiler.profile(path=tmp_path / "k.json"):
        lib.full(x, 1.0)
    events = json.loads((tmp_path / "k.json").read_text())["traceEvents"]
    assert any(e["name"] == "full" and e.get("cat") == "shader" for e in events)


def test_capture_show_and_replay(tmp_path, monkeypatch, capsys):
    from bronze.__main__ import main

    monkeypatch.setenv("BRONZE_CAPTURE_ENABLED", "1")
    lib = bronze.compile_shader(SEED)
    x = bronze.empty(32)
    cap = tmp_path / "cap.jsonl"
    with bronze.profiler.metal_capture(cap):
        lib.full(x, 2.5)
        x + 1
    assert main(["capture", "show", str(cap)]) == 0
    out = capsys.readouterr().out
    assert "kernel full" in out and "grid (32, 1, 1)" in out and "0x00002040" in out  # 2.5f
    assert main(["capture", "replay", str(cap)]) == 0
    assert "replayed 1 kernel dispatches" in capsys.readouterr().out
    with bronze.profiler.metal_capture(cap):  # a second capture carries the library's source again
        lib.full(x, 3.5)
    assert main(["capture", "replay", str(cap)]) == 0
    assert "replayed 1 kernel dispatches" in capsys.readouterr().out


def test_capture_records_an_argument_buffers_tensors_not_their_addresses(tmp_path, monkeypatch, capsys):
    from bronze.__main__ import main

    monkeypatch.setenv("BRONZE_CAPTURE_ENABLED", "1")
    lib = bronze.compile_shader(HEADER + """
    struct Pair { device const float* a; device float* b; };
    kernel void copy(constant Pair& p, uint i [[thread_position_in_grid]]) { p.b[i] = p.a[i]; }
    """)
    a, b = bronze.ones(8), bronze.zeros(8)
    cap = tmp_path / "cap.jsonl"
    with bronze.profiler.metal_capture(cap):
        lib.copy([a, b], threads=8)
    assert main(["capture", "show", str(cap)]) == 0
    assert "([buffer#" in capsys.readouterr().out
    assert main(["capture", "replay", str(cap)]) == 0  # on fresh buffers of the recorded sizes
    assert "replayed 1 kernel dispatches from" in capsys.readouterr().out


def test_capture_of_a_process_that_dies_inside_it_is_readable(tmp_path, capsys):
    import os
    import subprocess
    import sys

    from bronze.__main__ import main

    cap = tmp_path / "crash.jsonl"
    code = ("import os, sys, bronze\n"
            "lib = bronze.compile_shader(sys.argv[2])\n"
            "x = bronze.empty(8)\n"
            "with bronze.profiler.metal_capture(sys.argv[1]):\n"
            "    lib.full(x, 1.5)\n"
            "    bronze.synchronize()\n"
            "    os._exit(3)  # no unwinding, no close: as a crash\n")
    r = subprocess.run([sys.executable, "-c", code, str(cap), SEED], timeout=120, capture_output=True, text=True,
                       env=dict(os.environ, BRONZE_CAPTURE_ENABLED="1"))
    assert r.returncode == 3, r.stderr
    assert main(["capture", "show", str(cap)]) == 0
    assert "kernel full" in capsys.readouterr().out
    with open(cap, "a") as f:
        f.write('{"seq":9,"kernel":"fu')  # died while writing a record
    assert main(["capture", "show", str(cap)]) == 0
    out, err = capsys.readouterr()
    assert "1 commands" in out and "last record is incomplete" in err
    with open(cap, "a") as f:
        f.write('\n{"seq":10}\n')
    assert main(["capture", "show", str(cap)]) == 2
    assert "crash.jsonl:4: not a capture record" in capsys.readouterr().err


def test_capture_reader_refuses_damaged_files_cleanly(tmp_path, monkeypatch, capsys):
    """Seeded mutations of a real capture: `capture show` lists it or exits
    with a message; no other exception."""
    import random

    from bronze.__main__ import main

    monkeypatch.setenv("BRONZE_CAPTURE_ENABLED", "1")
    lib = bronze.compile_shader(SEED)
    x = bronze.empty(4)
    good = tmp_path / "good.jsonl"
    with bronze.profiler.metal_capture(good):
        lib.full(x, 1.0)
        x + 1
    data = good.read_bytes()
    rng = random.Random(1234)
    damaged = tmp_path / "damaged.jsonl"
    outcomes = set()
    for _ in range(400):
        b = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(b))
            op = rng.randrange(4)
            if op == 0:
                b[i] = rng.randrange(256)
            elif op == 1:
                del b[i:i + rng.randint(1, 20)]
            elif op == 2:
                b[i:i] = rng.choice([b'"', b"{", b"}", b"[", b"]", b",", b"\n", b"-1", b"null", b"1e400", b"\xff"])
            else:
                j = rng.randrange(len(b))
                b[i:i] = b[j:j + rng.randint(1, 40)]
        damaged.write_bytes(bytes(b))
        outcomes.add(main(["capture", "show", str(damaged)]))
        capsys.readouterr()
    assert outcomes == {0, 2}  # some still list, some are refused (one line, exit 2)
    assert main(["capture", "show", str(tmp_path / "missing.jsonl")]) == 2
    assert "No such file" in capsys.readouterr().err


def test_load_metallib_round_trip(tmp_path):
    from bronze.__main__ import main

    src = tmp_path / "k.metal"
    src.write_text(SEED)
    out = tmp_path / "k.bronzelib"
    assert main(["compile", str(src), "-o", str(out)]) == 0
    for arg in (out, str(out), out.read_bytes(), bytearray(out.read_bytes())):
        for rebuild in (False, True):  # True: the carried source, built here
            lib = bronze.load_metallib(arg, rebuild=rebuild)
            x = bronze.empty(4)
            lib.full(x, 6.0)
            assert x.numpy().tolist() == [6.0] * 4
    with pytest.raises(TypeError):
        bronze.load_metallib(42)
    with pytest.raises(ValueError, match="not a valid .metallib"):
        bronze.load_metallib(b"MTLB" + bytes(60))
    with pytest.raises(ValueError, match="BRZL"):
        bronze.load_metallib(b"\x00garbage....")
    data = bytearray(out.read_bytes())
    with pytest.raises(ValueError, match="truncated"):
        bronze.load_metallib(bytes(data[: len(data) // 2]))
    data[40] ^= 1
    with pytest.raises(ValueError, match="checksum|truncated"):
        bronze.load_metallib(bytes(data))
    bad = tmp_path / "bad.metal"
    bad.write_text("kernel void f(device float* o) {\n  o[0] = nope;\n}\n")
    assert main(["compile", str(bad)]) == 1


@pytest.mark.parametrize("name", ["/dev/zero", "/dev/stdin", "/nonexistent.metal", "folder", "latin1.metal"])
def test_bronze_compile_reads_regular_utf8_files_only(name, tmp_path, capsys):
    # N49/N31: /dev/zero read forever, /dev/stdin wrote /dev/stdin.bronzelib,
    # the others were tracebacks.
    from bronze.__main__ import main

    (tmp_path / "folder").mkdir()
    (tmp_path / "latin1.metal").write_bytes(b"\xff kernel void f() {}")
    path = name if name.startswith("/") else str(tmp_path / name)
    assert main(["compile", path]) == 2
    assert capsys.readouterr().err.startswith("bronze compile: ")


def test_a_library_of_the_previous_format_builds_its_source_again():
    # Version 1's objects have the older layout table (two words a binding):
    # dropped, the source it carries built here.
    data = bytearray(bronze.compile_library(SEED))
    assert data[4:8] == (2).to_bytes(4, "little")
    data[4:8] = (1).to_bytes(4, "little")
    lib = bronze.load_metallib(bytes(data))
    x = bronze.empty(2)
    lib.full(x, 2.5)
    assert x.numpy().tolist() == [2.5, 2.5]
    data[4:8] = (3).to_bytes(4, "little")
    with pytest.raises(ValueError, match="version 3"):
        bronze.load_metallib(bytes(data))


@cpu_only
def test_library_for_another_host_rebuilds_from_source():
    data = bronze.compile_library(SEED)
    # Rename the object's target: this host no longer matches it.
    import bronze._C as C  # noqa: F401
    target = f"cpu-{__import__('platform').machine()}-linux".encode()
    other = data.replace(target, b"cpu-vax-linux" + b"_" * (len(target) - len(b"cpu-vax-linux")), 1)
    assert other != data
    lib = bronze.load_metallib(other)
    x = bronze.empty(2)
    lib.full(x, 1.5)
    assert x.numpy().tolist() == [1.5, 1.5]


def test_half_constants_convert_exactly_at_compile_time():
    # Constant-initialized halves take the constant-expression conversion
    # (by hand on CUDA, where run time uses the cvt instruction); MLX checks
    # half arithmetic in static_asserts.
    values = [0.1, 1 / 3, 1 + 2 ** -11, 1 + 3 * 2 ** -11, 65504.0, 65519.0, 65520.0, 70000.0, 2 ** -24,
              2 ** -25, 1.5 * 2 ** -25, 3 * 2 ** -26, 6.1e-5, 2 ** -14 - 2 ** -24, -0.0, -2.75, 1e-9]
    listed = ", ".join(f"half({v!r}f)" for v in values)
    lib = compile(f"""
    constant constexpr half table[] = {{{listed}}};
    static_assert(half(1.5h) * half(3.0h) == half(4.5h), "half arithmetic in a constant expression");
    static_assert(float(half(0.1f)) == 0.0999755859375f, "half to float in a constant expression");
    kernel void k(device float* out, uint i [[thread_position_in_grid]]) {{ out[i] = float(table[i]); }}""")
    out = bronze.empty(len(values))
    lib.k(out)
    with np.errstate(over="ignore"):  # 70000 and 65520 round to inf
        expected = np.array(values, dtype=np.float32).astype(np.float16).astype(np.float32)
    np.testing.assert_array_equal(out.numpy(), expected)
    assert np.signbit(out.numpy()[values.index(-0.0)])


def test_memory_scopes_fences_coherence_and_internal_traits():
    # MLX's fence kernels: scopes and orders, a system scope the library
    # defines from __METAL_MEMORY_SCOPE_SYSTEM__, coherent(system) buffers,
    # Metal's internal trait spellings; and a library's own erf, which
    # Metal lacks (a second one would make the call ambiguous).
    lib = compile("""
    namespace metal {
    constexpr constant metal::thread_scope thread_scope_system = static_cast<thread_scope>(__METAL_MEMORY_SCOPE_SYSTEM__);
    }
    template <typename T> constexpr constant bool is_word = _disjunction<is_same<T, int>, is_same<T, uint>>::value;
    static_assert(is_word<uint> && !is_word<float>, "internal traits");
    static_assert(conjunction_v<is_same<int, int>, is_same<uint, uint>> && negation_v<is_same<int, float>>, "traits");
    float erf(float x) { return x > 0 ? 1.0f : -1.0f; }
    constexpr int rows = make_uniform(4);
    [[kernel]] void publish(volatile coherent(system) device uint* stamp [[buffer(0)]], constant uint& value [[buffer(1)]],
                            device float* signs [[buffer(2)]], uint i [[thread_position_in_grid]]) {
      float local[rows] = {0};
      stamp[i] = value + i;
      metal::atomic_thread_fence(metal::mem_flags::mem_device, metal::memory_order_seq_cst, metal::thread_scope_system);
      metal::threadgroup_barrier(metal::mem_flags::mem_threadgroup);
      atomic_thread_fence(mem_flags::mem_threadgroup, memory_order_acq_rel, thread_scope_threadgroup);
      signs[i] = erf(float(i) - 1.5f) + local[i % rows];
    }""")
    stamp, signs = bronze.zeros(4, dtype=bronze.uint32), bronze.zeros(4)
    lib.publish(stamp, 5, signs)
    assert stamp.numpy().tolist() == [5, 6, 7, 8]
    assert signs.numpy().tolist() == [-1, -1, 1, 1]


def test_unsuffixed_literals_are_float_and_metal_constants_exist():
    # Metal has no double: 2.0 is a float, so brace-initializing floats from
    # it is no narrowing, and arithmetic rounds in float. INFINITY and NAN are
    # constant expressions (PyTorch's attention: constexpr auto x = -INFINITY).
    lib = compile("""
    struct pair { float a, b; };
    pair halve(float r, float s) { auto a = (r + s) / 2.0; auto b = 1.0e0 / 3.0; return {a, b}; }
    kernel void k(device float* out, uint i [[thread_position_in_grid]]) {
      pair p = halve(3.0, 4.0);
      constexpr auto neg_inf = -INFINITY;
      constexpr half qnan = NAN;
      const float c[] = {M_LN10_F, M_LOG2E_F, M_SQRT1_2_F, M_2_SQRTPI_F, float(M_PI_2_H), FLT_EPSILON, FLT_MIN,
                         MAXFLOAT, float(HALF_MIN), float(INT_MAX), float(UINT_MAX), p.a, p.b, float(MAXHALF),
                         neg_inf, qnan};
      out[i] = c[i];
    }""")
    out = bronze.empty(16)
    lib.k(out)
    f = np.float32
    expected = [np.log(10), np.log2(np.e), np.sqrt(0.5), 2 / np.sqrt(np.pi), np.float16(np.pi / 2),
                np.finfo(f).eps, np.finfo(f).tiny, np.finfo(f).max, np.finfo(np.float16).tiny, 2 ** 31 - 1,
                2 ** 32 - 1, 3.5, f(1) / f(3), 65504, -np.inf, np.nan]
    np.testing.assert_array_equal(out.numpy(), np.array(expected, dtype=np.float64).astype(f))


def test_metal_array():
    # metal::array as MLX's binary ops return it: an aggregate from braces.
    lib = compile("""
    template <typename T> metal::array<T, 2> divmod(T x, T y) { return {x / y, x % y}; }
    kernel void k(device int* q, device int* r, constant metal::array<int, 3>& d, uint i [[thread_position_in_grid]]) {
      metal::array<int, 2> v = divmod(int(i) + 10, d[i % d.size()]);
      q[i] = v[0];
      r[i] = v[1] + int(v.size()) * 100;
    }""")
    q, r = bronze.zeros(4, dtype=bronze.int32), bronze.zeros(4, dtype=bronze.int32)
    lib.k(q, r, [3, 4, 5])
    assert q.numpy().tolist() == [3, 2, 2, 4]
    assert r.numpy().tolist() == [201, 203, 202, 201]


def test_vector_braces_with_fewer_components_zero_the_rest():
    lib = compile("""
    kernel void k(device uint4* out, uint i [[thread_position_in_grid]]) {
      uint4 ks = {i + 1, i + 2, (i + 1) ^ (i + 2)};
      out[i] = ks;
    }""")
    out = bronze.zeros(8, dtype=bronze.uint32)
    lib.k(out, threads=2)
    assert out.numpy().tolist() == [1, 2, 3, 0, 2, 3, 1, 0]


def test_threadgroup_arrays_sized_through_local_aliases():
    # MLX's gemv and sort: the size names a kernel-local alias of a class
    # template and compares with ==.
    lib = compile("""
    template <typename T, int N> struct Tile { static constant constexpr int size = N; typedef T acc; };
    template <typename T, int N>
    kernel void k(device T* out, uint i [[thread_position_in_thread_group]]) {
      using tile = Tile<T, N>;
      typedef typename tile::acc acc_t;
      threadgroup acc_t shared[tile::size == 0 ? 1 : tile::size];
      shared[i] = acc_t(i * 2);
      threadgroup_barrier(mem_flags::mem_threadgroup);
      out[i] = shared[(i + 1) % tile::size];
    }
    template [[host_name("k8")]] kernel void k<float, 8>(device float*, uint);""".replace(
        "thread_position_in_thread_group", "thread_position_in_threadgroup"))
    assert lib.k8.static_thread_group_memory_length == 32
    out = bronze.zeros(8)
    lib.k8(out, threads=8, group_size=8)
    assert out.numpy().tolist() == [2, 4, 6, 8, 10, 12, 14, 0]


def test_vectors_in_constant_expressions():
    # PyTorch's Eye.metal: a constexpr function returning a vector.
    lib = compile("""
    template <typename T> constexpr T one() { return static_cast<T>(1); }
    template <> constexpr float2 one<float2>() { return float2(1.0, 0.0); }
    constexpr float4 splat = float4(2.5f);
    constexpr uint3 widened = uint3(int3(1, 2, 3));
    static_assert(one<float2>()[0] == 1.0f && one<float2>()[1] == 0.0f && splat[3] == 2.5f && widened[2] == 3u, "");
    kernel void k(device float2* out, uint i [[thread_position_in_grid]]) { out[i] = one<float2>() * splat.x; }""")
    out = bronze.zeros(4)
    lib.k(out, threads=2)
    assert out.numpy().tolist() == [2.5, 0, 2.5, 0]


def test_candle_style_language_corners():
    # Special members overloaded on `this`'s address space, a threadgroup
    # array parameter, Metal's internal _numeric_limits_impl and
    # __is_valid_simdgroup_type, a conditional whose last operand compares
    # with '>', a GNU range designator with a half literal, and half4 *= float
    # (ambiguous under NVRTC before, where half is a class).
    lib = compile("""
    template <typename T> struct indexed { uint i; T val; };
    template <typename T> struct _numeric_limits_impl<indexed<T>> {
      static constexpr indexed<T> lowest() { return indexed<T>{0, numeric_limits<T>::lowest()}; }
    };
    template <typename T> struct Acc {
      T m;
      constexpr Acc<T>() = default;
      constexpr Acc<T>() threadgroup = default;
    };
    struct Gen {
      float state;
      Gen() thread = default;
      Gen() threadgroup = default;
      Gen() device = default;
      Gen() constant = default;
    };
    template <typename T, uint N> struct block_sum {
      threadgroup T* shared;
      block_sum(threadgroup T shared[N]) { this->shared = shared; }
      T total() { T s = 0; for (uint k = 0; k < N; ++k) s += shared[k]; return s; }
    };
    constant constexpr bool simd_ok = __is_valid_simdgroup_type<bfloat>::value && __is_valid_simdgroup_type<float4>::value &&
                                      !__is_valid_simdgroup_type<bool>::value;
    kernel void corners(device const bfloat* x [[buffer(0)]], device float* out [[buffer(1)]],
                        constant bool& asc [[buffer(2)]], uint i [[thread_position_in_threadgroup]],
                        uint l [[thread_index_in_simdgroup]]) {
      threadgroup float shared[32];
      Gen g; g.state = 1.0f;
      Acc<float> a; a.m = 2.0f;
      shared[i] = float(x[i]);
      threadgroup_barrier(mem_flags::mem_threadgroup);
      block_sum<float, 32> b(shared);
      const bool before = (asc ? x[i] < x[31 - i] : x[i] > x[31 - i]);
      float fill[4] = { [0 ... 3] = 0.5h };
      half4 lo = half4(2.0h);
      const float ms = 0.5f;
      lo *= ms;  // a half vector's compound assignment takes a float
      lo += 1.0f;
      const indexed<float> low = numeric_limits<indexed<float>>::lowest();
      out[4 * i + 0] = b.total();
      out[4 * i + 1] = before ? 1.0f : 0.0f;
      out[4 * i + 2] = fill[i % 4] + g.state + a.m + float(lo.y);
      out[4 * i + 3] = simd_ok && low.val == -FLT_MAX ? 1.0f : 0.0f;
    }""")
    x = np.arange(32, dtype=np.float32) - 10  # exact in bfloat
    xb = bronze.tensor(x).to(dtype=bronze.bfloat16)
    for asc in (True, False):
        out = bronze.zeros(128)
        lib.corners(xb, out, asc, threads=32, group_size=32)
        got = out.cpu().numpy().reshape(32, 4)
        np.testing.assert_array_equal(got[:, 0], np.full(32, x.sum()))
        want = x < x[::-1] if asc else x > x[::-1]
        np.testing.assert_array_equal(got[:, 1], want.astype(np.float32))
        np.testing.assert_array_equal(got[:, 2], np.full(32, 5.5))
        np.testing.assert_array_equal(got[:, 3], np.ones(32))


def test_gpt_oss_and_paged_attention_style_corners():
    # as_type of a swizzle (the vector it reads, not the view's storage),
    # select with a scalar beside vectors, C compound literals (one with
    # designators, which NVRTC takes only as C++20), uintptr_t
    # pointer arithmetic, Metal 3.1's 64-bit atomic min and max, and a
    # library's own dot templates beside Metal's (Metal's vector dot is the
    # more specialized; Metal has no scalar one, so the library's is used).
    lib = compile("""
    struct pair_t { float lo; float hi; };
    template <typename T> inline float my_sum(T v) { return v; }
    template <> inline float my_sum(float4 v) { return v.x + v.y + v.z + v.w; }
    template <typename T> inline float dot(T a, T b) { return my_sum(a * b) + 100.0f; }
    template <typename A, typename T> inline float dot(T a, T b) { return 0.0f; }
    kernel void corners(device const uint4* bits [[buffer(0)]], device const float4* x [[buffer(1)]],
                        device float* out [[buffer(2)]], device metal::atomic_ulong* lohi [[buffer(3)]],
                        uint i [[thread_position_in_grid]]) {
      const uint4 b = bits[0];
      const float4 h = float4(as_type<half4>(b.zw));
      const float4 masked = metal::select(x[i], -INFINITY, x[i] < 0.0f);
      const uint4 idx = metal::select(uint4(i), 0xFFFFFFFFu, x[i] < 0.0f);
      const float4 lit = (float4) { h.x, h.y, 1.0f, 2.0f };
      const pair_t p = (pair_t) { lit.z, lit.w };
      const pair_t q = (pair_t) {
          .hi = max(lit.x, 0.5f),
          .lo = -1.0f,
      };
      device const float4* next = (device const float4*) ((uintptr_t) x + sizeof(float4));
      out[8 * i + 0] = h.x + h.w;
      out[8 * i + 1] = masked.x + masked.y;
      out[8 * i + 2] = float(idx.x == 0xFFFFFFFFu) + float(idx.y == 0xFFFFFFFFu);
      out[8 * i + 3] = lit.x + lit.y + p.lo + p.hi + q.lo + q.hi;
      out[8 * i + 4] = next[0].x;
      out[8 * i + 5] = dot(x[i], x[i]);
      out[8 * i + 6] = dot(x[i].x, 3.0f);
      out[8 * i + 7] = metal::dot(x[i], float4(1.0f));
      atomic_min_explicit(&lohi[0], ulong(i) << 40 | 7ul, memory_order_relaxed);
      atomic_max_explicit(&lohi[1], ulong(i) << 40 | 7ul, memory_order_relaxed);
    }""")
    halves = np.array([0.5, -2.0, 3.25, 8.0, 1.5, 0.25, -4.0, 6.0], dtype=np.float16)
    bits = bronze.tensor(halves.view(np.uint32))
    n = 64
    x = np.random.default_rng(3).standard_normal((n, 4)).astype(np.float32)
    out = bronze.zeros(8 * n)
    lohi = bronze.tensor(np.array([np.iinfo(np.uint64).max, 0], dtype=np.uint64))
    lib.corners(bits, bronze.tensor(x.reshape(-1)), out, lohi, threads=n)
    got = out.cpu().numpy().reshape(n, 8)
    h = halves[4:8].astype(np.float32)  # b.zw: the third and fourth words, halves 4..7
    np.testing.assert_array_equal(got[:, 0], np.full(n, h[0] + h[3]))
    masked = np.where(x < 0, -np.inf, x)
    np.testing.assert_array_equal(got[:, 1], masked[:, 0] + masked[:, 1])
    np.testing.assert_array_equal(got[:, 2], (x[:, 0] < 0).astype(np.float32) + (x[:, 1] < 0))
    np.testing.assert_array_equal(got[:, 3], np.full(n, h[0] + h[1] + 3.0 - 1.0 + max(h[0], 0.5)))
    np.testing.assert_array_equal(got[:, 4], np.full(n, x[1, 0]))
    np.testing.assert_allclose(got[:, 5], (x * x).sum(1), rtol=1e-5)    # Metal's dot for vectors, as on a Mac
    np.testing.assert_allclose(got[:, 6], x[:, 0] * 3 + 100, rtol=1e-6)  # the library's for scalars
    np.testing.assert_allclose(got[:, 7], x.sum(1), rtol=1e-5, atol=1e-6)  # Metal's, qualified
    assert lohi.cpu().numpy().tolist() == [7, (n - 1) << 40 | 7]
