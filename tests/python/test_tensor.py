import numpy as np
import pytest

import bronze


def test_creation_and_dtypes():
    assert bronze.zeros(2, 3).shape == (2, 3)
    assert bronze.ones((4,), dtype=bronze.int32).numpy().tolist() == [1, 1, 1, 1]
    assert bronze.full((2,), 7).dtype == bronze.int64
    assert bronze.full((2,), 7.5).dtype == bronze.float32
    assert bronze.arange(5).numpy().tolist() == [0, 1, 2, 3, 4]
    assert bronze.arange(0, 1, 0.25).numpy().tolist() == [0, 0.25, 0.5, 0.75]
    assert bronze.empty(3, dtype="float16").dtype == bronze.float16
    assert bronze.empty(3, dtype=np.float64).dtype == bronze.float64
    for d in (bronze.bool, bronze.uint8, bronze.int8, bronze.int16, bronze.int64, bronze.float16, bronze.float64):
        assert bronze.ones(3, dtype=d).numpy().astype(np.float64).tolist() == [1, 1, 1]
    with pytest.raises(TypeError):
        bronze.empty(3, dtype="complex64")
    with pytest.raises(TypeError):
        bronze.zeros("three")
    with pytest.raises(ValueError):
        bronze.empty(-1)


def test_arithmetic_matches_numpy():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    b = np.linspace(1, 2, 4, dtype=np.float32)
    ta, tb = bronze.tensor(a), bronze.tensor(b)
    np.testing.assert_allclose((ta + tb).numpy(), a + b)
    np.testing.assert_allclose((ta - 1).numpy(), a - 1)
    np.testing.assert_allclose((2 * ta).numpy(), 2 * a)
    np.testing.assert_allclose((ta / tb).numpy(), a / b, rtol=1e-6)
    np.testing.assert_allclose((1 / tb).numpy(), 1 / b, rtol=1e-6)
    np.testing.assert_allclose((10 - ta).numpy(), 10 - a)
    np.testing.assert_allclose((-ta).numpy(), -a)
    i = bronze.tensor(np.array([1, 2, 3], dtype=np.int32))
    assert (i / 2).dtype == bronze.float32
    assert (i + 1).dtype == bronze.int32
    with pytest.raises(ValueError):
        ta + bronze.ones(3)
    with pytest.raises(TypeError):
        ta + "x"


def test_matmul_against_numpy():
    bronze.manual_seed(0)
    a, b = bronze.randn(33, 17), bronze.randn(17, 9)
    np.testing.assert_allclose((a @ b).numpy(), a.numpy() @ b.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(a.T.mm(a).numpy(), a.numpy().T @ a.numpy(), rtol=1e-4, atol=1e-4)
    h = a.half()
    np.testing.assert_allclose((h @ b.half()).numpy(), a.numpy() @ b.numpy(), rtol=0.05, atol=0.05)
    with pytest.raises(ValueError):
        a @ a
    with pytest.raises(TypeError):
        bronze.ones(2, 2, dtype=bronze.int32) @ bronze.ones(2, 2, dtype=bronze.int32)


def test_numpy_interop_zero_copy():
    n = np.zeros((2, 3), dtype=np.float32)
    t = bronze.asarray(n)
    t.fill_(4.0)
    bronze.synchronize()
    assert (n == 4).all()  # same memory
    view = np.asarray(t)  # __array_interface__
    assert view.ctypes.data == n.ctypes.data
    alias = bronze.host_alias(t)
    alias[0, 0] = 9
    assert t.numpy()[0, 0] == 9
    assert bronze._host_alias_storage is bronze.host_alias
    assert t.is_host_visible() and bronze.empty(3, host_visible=True).is_host_visible()
    assert bronze.host_visible_memory_stats("cpu") == bronze.memory_stats("cpu")  # one pool on the CPU
    ro = np.arange(4, dtype=np.float32)
    ro.setflags(write=False)
    c = bronze.asarray(ro)  # read-only arrays are copied, never written
    c.fill_(1.0)
    assert ro.tolist() == [0, 1, 2, 3]
    assert bronze.tensor(n).data_ptr() != n.ctypes.data  # tensor() copies


def test_dlpack_round_trip():
    t = bronze.arange(6, dtype=bronze.float32).reshape([2, 3])
    n = np.from_dlpack(t)
    assert n.tolist() == [[0, 1, 2], [3, 4, 5]]
    assert t.__dlpack_device__() == (1, 0)
    back = bronze.from_dlpack(n)
    assert back.data_ptr() == t.data_ptr()
    strided = np.arange(12, dtype=np.float64).reshape(3, 4)[:, ::2]
    s = bronze.asarray(strided)
    assert s.stride() == (4, 2)
    assert (s.stride(0), s.stride(-1), s.size(0), s.size(-1)) == (4, 2, 3, 2)  # torch's size(dim)/stride(dim)
    np.testing.assert_array_equal(s.numpy(), strided)
    with pytest.raises(TypeError):
        bronze.from_dlpack([1, 2])


def test_lists_and_conversion():
    t = bronze.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert t.dtype == bronze.float32  # Python floats -> float32, as torch
    assert t.tolist() == [[1, 2], [3, 4]]
    assert t.to(bronze.int64).dtype == bronze.int64
    assert t.to("cpu") is not None
    assert bronze.tensor([1, 2]).dtype == bronze.int64
    assert bronze.tensor([True, False]).dtype == bronze.bool
    assert bronze.tensor([3.5]).item() == 3.5
    with pytest.raises(ValueError):
        t.item()
    with pytest.raises(TypeError):
        bronze.tensor([object()])
    with pytest.raises(TypeError):
        bronze.tensor([1.0]).to(bronze.bfloat16).numpy()
    assert "bronze.Tensor" in repr(t)


def test_random_ops():
    bronze.manual_seed(7)
    u = bronze.rand(10000).numpy()
    assert 0 <= u.min() and u.max() < 1
    assert abs(u.mean() - 0.5) < 0.02
    r = bronze.randint(3, 9, (5000,)).numpy()
    assert r.min() == 3 and r.max() == 8
    to = bronze.empty(5000, dtype=bronze.int32).random_(4).numpy()  # torch's random_(to): [0, to)
    assert to.min() == 0 and to.max() == 3
    n = bronze.empty(50000, dtype=bronze.float64).normal_(2.0, 3.0).numpy()
    assert abs(n.mean() - 2) < 0.05 and abs(n.std() - 3) < 0.05
    b = bronze.randn(1000, dtype=bronze.bfloat16)
    assert b.dtype == bronze.bfloat16
    with pytest.raises(TypeError):
        bronze.empty(3, dtype=bronze.int32).uniform_()


def test_integer_arange_is_exact_past_double_precision():
    assert bronze.arange(2**53, 2**53 + 4).numpy().tolist() == [2**53 + k for k in range(4)]
    assert bronze.arange(2**62, 2**63 - 1, 2**61).numpy().tolist() == [2**62, 2**62 + 2**61]
    assert bronze.arange(10, 0, -3).numpy().tolist() == [10, 7, 4, 1]
    assert bronze.arange(-5, 5, 4, dtype=bronze.int8).numpy().tolist() == [-5, -1, 3]
    assert bronze.arange(np.int64(3)).numpy().tolist() == [0, 1, 2]
    assert bronze.arange(0, 1, 0.25).numpy().tolist() == [0.0, 0.25, 0.5, 0.75]
