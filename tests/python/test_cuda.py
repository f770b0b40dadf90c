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
    n = 100003  # not a multiple of the block size
    for make in (lambda d: bronze.rand(n, dtype=dtype, device=d),
                 lambda d: bronze.empty(n, dtype=dtype, device=d).uniform_(-3.0, 5.0),
                 lambda d: bronze.randint(-7, 1000, (n,), dtype=bronze.int64, device=d),
                 lambda d: bronze.randn(n, dtype=dtype, device=d)):
        bronze.manual_seed(1234)
        cpu = make("cpu").to(bronze.float64).numpy()
        bronze.manual_seed(1234)
        gpu = make(CUDA).to(bronze.float64).numpy()
        if dtype == bronze.float64:
            # Box-Muller's log/cos may differ in the last place between libms.
            np.testing.assert_allclose(gpu, cpu, rtol=1e-14, atol=1e-14)
        else:
            np.testing.assert_array_equal(gpu, cpu)
    bronze.manual_seed(5)
    assert bronze.get_rng_state(CUDA).numpy().tolist() == bronze.get_rng_state("cpu").numpy().tolist()


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


def test_not_yet_implemented_ops_are_clear_errors():
    x = bronze.ones(4, 4, device=CUDA)
    for call in (lambda: bronze.compile_shader("kernel void f(device float* o) {}", device=CUDA),):
        with pytest.raises(bronze.NotSupportedError):
            call()
    assert x.numpy().tolist() == [[1.0] * 4] * 4  # still usable
