"""The CUDA backend's runtime on a real GPU (skipped without one: run
scripts/gpu-check on the GPU machine)."""

import gc

import numpy as np
import pytest

import bronze

pytestmark = pytest.mark.skipif(not bronze.is_available("cuda"), reason=bronze.cuda_status())
CUDA = "cuda:0"


def test_device_queries():
    assert bronze.device_count("cuda") >= 1
    p = bronze.get_device_properties(CUDA)
    assert p.total_memory > 2**30 and p.multi_processor_count > 0
    assert p.simd_width == 32 and p.max_threads_per_threadgroup == 1024
    assert not p.host_visible
    assert bronze.recommended_max_memory(CUDA) == p.recommended_max_memory
    assert "device" in bronze.cuda_status()


def test_round_trips_and_fills():
    a = np.arange(1000, dtype=np.float32)
    t = bronze.asarray(a).to(CUDA)
    assert str(t.device) == CUDA
    np.testing.assert_array_equal(t.numpy(), a)
    np.testing.assert_array_equal(t.cpu().numpy(), a)
    for dt, v in ((bronze.float32, 2.5), (bronze.float64, 1.0), (bronze.int64, 7), (bronze.float16, 3.0),
                  (bronze.uint8, 9), (bronze.int32, -4)):
        x = bronze.full((33,), v, dtype=dt, device=CUDA)
        assert x.numpy().tolist() == [v] * 33
    z = bronze.zeros(5, device=CUDA)
    c = z.clone()
    c.copy_(bronze.ones(5, device=CUDA))
    assert c.numpy().tolist() == [1.0] * 5 and z.numpy().tolist() == [0.0] * 5


def test_memory_figures_and_limit():
    gc.collect()
    bronze.empty_cache(CUDA)
    base = bronze.current_allocated_memory(CUDA)
    t = bronze.empty(1 << 20, device=CUDA)
    assert bronze.current_allocated_memory(CUDA) == base + (4 << 20)
    assert bronze.driver_allocated_memory(CUDA) >= 4 << 20
    del t
    assert bronze.current_allocated_memory(CUDA) == base
    bronze.empty_cache(CUDA)
    assert bronze.driver_allocated_memory(CUDA) == 0 or base > 0
    bronze.set_per_process_memory_fraction(2**30 / bronze.recommended_max_memory(CUDA), CUDA)
    try:
        with pytest.raises(bronze.OutOfMemoryError, match="cuda:0"):
            bronze.empty(1 << 29, device=CUDA)  # 2 GiB over a 1 GiB limit
        assert bronze.memory_stats(CUDA)["num_ooms"] >= 1
    finally:
        bronze.set_per_process_memory_fraction(0.0, CUDA)


def test_host_visible_memory_is_pinned_mapped_and_aliased():
    gc.collect()
    bronze.synchronize(CUDA)
    before, device_before = bronze.host_visible_memory_stats(CUDA), bronze.current_allocated_memory(CUDA)
    t = bronze.empty(1000, device=CUDA, host_visible=True)
    assert t.is_host_visible() and str(t.device) == CUDA
    assert not bronze.empty(4, device=CUDA).is_host_visible()
    hv = bronze.host_visible_memory_stats(CUDA)
    assert hv["allocated_bytes.current"] == before["allocated_bytes.current"] + 4096
    assert bronze.current_allocated_memory(CUDA) == device_before  # not device memory
    t.fill_(3.0)  # the GPU writes host memory
    alias = bronze.host_alias(t)  # waits for the fill, then views it in place
    assert alias.ctypes.data == t.data_ptr() and (alias == 3.0).all()
    alias[:10] = 7.0  # the host writes; the GPU reads it in place
    lib = bronze.compile_shader(SEED, device=CUDA)
    y = t + bronze.ones(1000, device=CUDA)
    assert y.numpy()[:11].tolist() == [8.0] * 10 + [4.0]
    lib.full(t, 1.5)  # a kernel argument in host-visible memory
    assert (bronze.host_alias(t) == 1.5).all()
    with pytest.raises(ValueError, match="host_visible=True"):
        bronze.host_alias(bronze.empty(4, device=CUDA))
    del t, alias
    gc.collect()
    assert bronze.host_visible_memory_stats(CUDA)["allocated_bytes.current"] == before["allocated_bytes.current"]
    bronze.empty_cache(CUDA)
    assert bronze.host_visible_memory_stats(CUDA)["reserved_bytes.current"] == 0


def test_streams_and_timing_events():
    s = bronze.Stream(CUDA)
    a, b = bronze.Event(enable_timing=True), bronze.Event(enable_timing=True)
    a.record(s)
    with bronze.stream(s):
        x = bronze.full((1 << 24,), 1.5, device=CUDA)
    b.record(s)
    b.synchronize()
    assert a.elapsed_time(b) >= 0
    s.synchronize()
    assert s.query()
    bronze.synchronize(CUDA)
    assert float(x.numpy()[-1]) == 1.5


def test_torch_interop_zero_copy():
    torch = pytest.importorskip("torch")
    tt = torch.arange(8, dtype=torch.float32, device="cuda")
    b = bronze.from_dlpack(tt)
    assert str(b.device) == CUDA and b.data_ptr() == tt.data_ptr()
    np.testing.assert_array_equal(b.numpy(), np.arange(8, dtype=np.float32))
    back = torch.from_dlpack(bronze.full((4,), 2.0, device=CUDA))
    assert back.is_cuda and back.tolist() == [2.0] * 4
    cai = bronze.full((3,), 1.0, device=CUDA).__cuda_array_interface__
    assert cai["typestr"] == "<f4" and cai["shape"] == (3,)


def test_arithmetic_conversion_and_strides_match_cpu():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    b = np.linspace(1, 2, 4, dtype=np.float32)
    ta, tb = bronze.tensor(a).to(CUDA), bronze.tensor(b).to(CUDA)
    np.testing.assert_allclose((ta + tb).numpy(), a + b)
    np.testing.assert_allclose((ta / tb).numpy(), a / b, rtol=1e-6)
    np.testing.assert_allclose((10 - ta).numpy(), 10 - a)
    np.testing.assert_allclose((2 * ta * ta).numpy(), 2 * a * a)
    np.testing.assert_array_equal(ta.T.contiguous().numpy(), a.T)  # strided copy
    np.testing.assert_array_equal(ta.to(bronze.int32).numpy(), a.astype(np.int32))  # conversion
    h = ta.to(bronze.float16)
    np.testing.assert_array_equal(h.numpy(), a.astype(np.float16))  # the CPU's rounding
    assert bronze.arange(5, device=CUDA).numpy().tolist() == [0, 1, 2, 3, 4]
    i = bronze.tensor(np.array([1, 2, 3], dtype=np.int32)).to(CUDA)
    assert (i / 2).numpy().tolist() == [0.5, 1.0, 1.5]
    assert (i + 1).dtype == bronze.int32


@pytest.mark.parametrize("dtype", [bronze.float32, bronze.float64, bronze.float16, bronze.bfloat16])
def test_philox_streams_are_bit_identical_to_cpu(dtype):
    # Not multiples of the block size. An iteration of a warp of the normal
    # kernel takes 1024 floats (512 doubles), 128 (64) a chain: for floats the
    # last one ends in its sixth, fifth or last chain.
    for n in (100003, 99903, 100328):
        for make in (lambda d: bronze.rand(n, dtype=dtype, device=d),
                     lambda d: bronze.empty(n, dtype=dtype, device=d).uniform_(-3.0, 5.0),
                     lambda d: bronze.randint(-7, 1000, (n,), dtype=bronze.int64, device=d),
                     lambda d: bronze.randn(n, dtype=dtype, device=d),
                     lambda d: bronze.empty(n, dtype=dtype, device=d).normal_(0.5, 2.0)):
            bronze.manual_seed(1234)
            cpu = make("cpu").to(bronze.float64).numpy()
            bronze.manual_seed(1234)
            gpu = make(CUDA).to(bronze.float64).numpy()
            np.testing.assert_array_equal(gpu, cpu)
            np.testing.assert_array_equal(np.signbit(gpu), np.signbit(cpu))  # == takes -0 for +0
    bronze.manual_seed(5)
    assert bronze.get_rng_state(CUDA).numpy().tolist() == bronze.get_rng_state("cpu").numpy().tolist()


def test_fill_of_strided_views_writes_only_their_elements():
    torch = pytest.importorskip("torch")
    for tdtype, value in ((torch.uint8, 7), (torch.float16, 1.5), (torch.int32, -3), (torch.float64, 1.0)):
        base = torch.zeros(4, 6, dtype=tdtype, device="cuda")
        bronze.from_dlpack(base[:, ::2]).fill_(value)
        bronze.synchronize(CUDA)
        want = torch.zeros(4, 6, dtype=tdtype)
        want[:, ::2] = value
        assert torch.equal(base.cpu(), want), tdtype
    t = bronze.zeros((3, 5), dtype=bronze.float64, device=CUDA).t()
    assert not t.is_contiguous()
    assert (t.fill_(2.5).numpy() == 2.5).all()


def test_vectorized_kernels_handle_misaligned_and_ragged_views():
    """Random and elementwise kernels use 128-bit accesses when they can; a
    view one element into a torch buffer, of a ragged length, takes the
    element-wise path and must give the same numbers."""
    torch = pytest.importorskip("torch")
    n = 1001
    for dtype, tdtype in ((bronze.float32, torch.float32), (bronze.float16, torch.float16),
                          (bronze.int64, torch.int64)):
        shifted = bronze.from_dlpack(torch.zeros(n + 1, dtype=tdtype, device="cuda")[1:])
        assert shifted.data_ptr() % 16 != 0
        aligned = bronze.empty(n, dtype=dtype, device=CUDA)
        fill = (lambda t: t.random_(-5, 2**40)) if dtype == bronze.int64 else (lambda t: t.normal_(1.0, 2.0))
        bronze.manual_seed(77)
        fill(shifted)
        bronze.manual_seed(77)
        fill(aligned)
        ref = aligned.numpy()
        np.testing.assert_array_equal(shifted.numpy(), ref)
        np.testing.assert_array_equal((shifted + aligned).numpy(), ref + ref)
        np.testing.assert_array_equal((shifted * 3).numpy(), ref * np.array(3, dtype=ref.dtype))
    wide = bronze.randint(0, 2**40, (n,), dtype=bronze.int64, device=CUDA).numpy()
    assert wide.max() > 2**32 and wide.min() >= 0
    ones = bronze.ones((1 << 20) + 3, dtype=bronze.float64, device=CUDA).numpy()  # 8-byte pattern fill
    assert ones.min() == 1.0 and ones.max() == 1.0


@pytest.mark.parametrize("dtype,tol", [(bronze.float32, 1e-4), (bronze.float64, 1e-10), (bronze.float16, 2e-2),
                                       (bronze.bfloat16, 5e-2)])
def test_mm_through_cublas(dtype, tol):
    bronze.manual_seed(0)
    a, b = bronze.randn(65, 33, dtype=dtype), bronze.randn(33, 17, dtype=dtype)
    ref = (a.to(bronze.float64) @ b.to(bronze.float64)).numpy()
    got = (a.to(CUDA) @ b.to(CUDA)).to(bronze.float64).numpy()
    np.testing.assert_allclose(got, ref, rtol=tol, atol=tol * 4)
    at = a.to(CUDA).T  # a transposed operand goes to cuBLAS as is
    np.testing.assert_allclose((at @ a.to(CUDA)).to(bronze.float64).numpy(),
                               a.to(bronze.float64).numpy().T @ a.to(bronze.float64).numpy(), rtol=tol * 4, atol=tol * 40)


SEED = "kernel void full(device float* out, constant float& val, uint idx [[thread_position_in_grid]]) { out[idx] = val; }"


def test_metal_kernel_on_cuda_with_torch_tensors_zero_copy():
    torch = pytest.importorskip("torch")
    lib = bronze.compile_shader(SEED, device=CUDA)
    assert lib.device.type == "cuda"
    assert lib.full.max_threads_per_threadgroup >= 256 and lib.full.thread_execution_width == 32
    t = torch.zeros(1000, device="cuda")
    lib.full(t, 2.5)  # a torch CUDA tensor, written in place
    bronze.synchronize(CUDA)
    assert torch.all(t == 2.5).item()
    x = bronze.empty(1 << 20, device=CUDA)
    lib.full(x, -1.0)
    assert (x.numpy() == -1.0).all()
    with pytest.raises(ValueError, match="on cpu:0"):
        lib.full(bronze.empty(4), 1.0)  # a CPU tensor for a CUDA library


def test_cuda_cpp_source():
    lib = bronze.compile_shader("""
    struct Affine { float scale; float shift; };
    extern "C" __global__ void affine(float* y, const float* x, Affine p, unsigned n) {
      unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
      if (i < n) y[i] = p.scale * x[i] + p.shift;
    }
    __global__ void twice(double* y, int n) {  // not extern "C": found through its lowered name
      int i = blockIdx.x * blockDim.x + threadIdx.x;
      if (i < n) y[i] *= 2;
    }""", language="cuda", device=CUDA)
    assert set(lib.kernel_names) == {"affine", "twice"}
    x = bronze.tensor(np.arange(1000, dtype=np.float32), device=CUDA)
    y = bronze.empty(1000, device=CUDA)
    lib.affine(y, x, np.array([2.0, 1.0], np.float32).tobytes(), 1000)
    np.testing.assert_array_equal(y.numpy(), 2 * np.arange(1000, dtype=np.float32) + 1)
    d = bronze.ones(37, dtype=bronze.float64, device=CUDA)
    lib.twice(d, 37, group_size=32)
    assert d.numpy().tolist() == [2.0] * 37
    with pytest.raises(ValueError, match="8 bytes"):
        lib.affine(y, x, b"1234", 1000)
    with pytest.raises(bronze.ShaderCompileError, match=r"kernel.cu:2:"):
        bronze.compile_shader('extern "C" __global__ void k(float* y) {\n  y[0] = nope;\n}', language="cuda", device=CUDA)
    with pytest.raises(bronze.NotSupportedError, match="CUDA device"):
        bronze.compile_shader('extern "C" __global__ void k(float* y) {}', language="cuda", device="cpu")


def test_metal_compile_errors_on_cuda_point_into_the_users_source():
    src = "kernel void f(device float* o, uint i [[thread_position_in_grid]]) {\n  o[i] = not_declared;\n}\n"
    with pytest.raises(bronze.ShaderCompileError) as info:
        bronze.compile_shader(src, device=CUDA)
    assert info.value.lineno == 2 and info.value.offset == 10
    assert "o[i] = not_declared;" in str(info.value)


def _nvcc(tmp_path, flag, suffix):
    import shutil
    import subprocess

    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    src = tmp_path / "k.cu"
    src.write_text('extern "C" __global__ void scale(float* y, float a, int n) {\n'
                   '  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] *= a; }\n')
    out = tmp_path / ("k" + suffix)
    try:
        subprocess.run([nvcc, flag, "-arch=sm_90", str(src), "-o", str(out)], check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError) as e:
        pytest.skip(f"nvcc cannot build a {suffix} here: {e}")
    return out


@pytest.mark.parametrize("flag,suffix", [("-ptx", ".ptx"), ("-cubin", ".cubin"), ("-fatbin", ".fatbin")])
def test_raw_modules_load(tmp_path, flag, suffix):
    path = _nvcc(tmp_path, flag, suffix)
    sig = None if suffix == ".ptx" else "__global__ void scale(float* y, float a, int n);"
    if sig:
        with pytest.raises(ValueError, match="signatures"):
            bronze.load_metallib(path, device=CUDA)
    lib = bronze.load_metallib(path, device=CUDA, signatures=sig)
    y = bronze.ones(100, device=CUDA)
    lib.scale(y, 3.0, 100)
    assert y.numpy().tolist() == [3.0] * 100


def test_bronzelib_with_a_cubin_loads_without_compiling(tmp_path):
    data = bronze.compile_library(SEED, archs=["sm_90"])
    info = bronze.cache_info()
    lib = bronze.load_metallib(data, device=CUDA)
    assert bronze.cache_info()["misses"] == info["misses"]  # the embedded cubin, not NVRTC
    x = bronze.empty(64, device=CUDA)
    lib.full(x, 4.0)
    assert x.numpy().tolist() == [4.0] * 64


def test_kernel_fault_names_the_kernel_at_synchronize():
    import subprocess
    import sys

    # A faulting kernel poisons the CUDA context: run it in a process of its own.
    code = """
import bronze
lib = bronze.compile_shader('kernel void wild(device float* o, uint i [[thread_position_in_grid]]) { device float* bad = (device float*)0x10; bad[i] = o[i]; }', device='cuda:0')
x = bronze.empty(64, device='cuda:0')
lib.wild(x, threads=64)
try:
    bronze.synchronize('cuda:0')
except bronze.DeviceError as e:
    print('FAULT', e)
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "FAULT" in r.stdout and "'wild'" in r.stdout, r.stdout + r.stderr


def test_validate_is_a_cpu_feature_on_cuda():
    with pytest.raises(bronze.NotSupportedError, match="CPU backend"):
        bronze.compile_shader(SEED, device=CUDA, validate=True)


def test_profiler_intervals_come_from_the_gpu_timeline(tmp_path):
    import json

    lib = bronze.compile_shader(SEED, device=CUDA)
    x = bronze.empty(1 << 24, device=CUDA)
    with bronze.profiler.profile(path=tmp_path / "t.json"):
        lib.full(x, 1.0)
        x.fill_(2.0)
        y = x + x
    events = [e for e in json.loads((tmp_path / "t.json").read_text())["traceEvents"] if e.get("ph") == "X"]
    kernel = [e for e in events if e["name"] == "full" and e.get("cat") == "shader"]
    assert kernel and kernel[0]["dur"] > 0
    names = [e["name"] for e in events]
    assert names.index("full") < names.index("fill") < names.index("add")  # GPU order, the CPU's op names
    assert y.numpy()[0] == 4.0


@pytest.mark.skipif(bronze.device_count("cuda") < 2, reason="needs two GPUs (the nvidia-h200-x2 machine)")
def test_two_devices_have_their_own_allocator_generator_and_streams():
    d0, d1 = "cuda:0", "cuda:1"
    gc.collect()
    base0 = bronze.current_allocated_memory(d0)
    x = bronze.full((1 << 20,), 2.0, device=d1)
    assert str(x.device) == d1
    assert bronze.current_allocated_memory(d0) == base0 and bronze.current_allocated_memory(d1) >= 4 << 20
    s = bronze.Stream(d1)
    with bronze.stream(s):
        y = x * 3
    s.synchronize()
    assert y.to(d0).numpy()[0] == 6.0  # across devices
    bronze.manual_seed(3)
    a = bronze.randn(1000, device=d0).numpy()
    bronze.manual_seed(3)
    bronze.rand(10, device=d1)  # advances cuda:1's generator only
    assert (bronze.randn(1000, device=d0).numpy() == a).all()
    bronze.manual_seed(3)
    assert (bronze.randn(1000, device=d1).numpy() == a).all()
    lib = bronze.compile_shader(SEED, device=d1)
    lib.full(x, 1.0)
    assert float(x.numpy()[-1]) == 1.0
    torch = pytest.importorskip("torch")
    assert str(bronze.from_dlpack(torch.ones(3, device="cuda:1")).device) == d1


def test_a_grid_just_under_2_to_the_32_runs_every_thread_once():
    # The last group of 2^32 - 100 threads starts inside the grid and ends
    # past 2^32: its threads past the end must not wrap to positions 0..155.
    lib = bronze.compile_shader("""
    kernel void tail(device atomic_uint* n, uint i [[thread_position_in_grid]]) {
        if (i < 256u || i >= 4294967296u - 356u) atomic_fetch_add_explicit(n, 1u, memory_order_relaxed);
    }""", device=CUDA)
    n = bronze.zeros(1, dtype=bronze.uint32, device=CUDA)
    lib.tail(n, threads=2**32 - 100, group_size=256)
    assert n.cpu().numpy().tolist() == [256 + 256]
