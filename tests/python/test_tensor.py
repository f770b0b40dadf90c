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


# ---- issue #34 (bad inputs 2026-12) ----

def test_uint64_fills_are_exact_to_2_64_minus_1():  # N08
    assert bronze.full(3, 2**63, dtype=bronze.uint64).numpy().tolist() == [2**63] * 3
    assert bronze.zeros(2, dtype=bronze.uint64).fill_(2**63 + 5).numpy().tolist() == [2**63 + 5] * 2
    assert bronze.full(2, 2**64 - 1, dtype=bronze.uint64).numpy().tolist() == [2**64 - 1] * 2
    assert bronze.full(2, 2**63 - 1, dtype=bronze.int64).numpy().tolist() == [2**63 - 1] * 2
    assert bronze.full(2, -2**63, dtype=bronze.int64).numpy().tolist() == [-2**63] * 2
    assert bronze.full(1, 2**31 - 1, dtype=bronze.int32).item() == 2**31 - 1
    assert bronze.zeros(1, dtype=bronze.uint64).fill_(float(2**63)).item() == 2**63
    for value, d in ((2**64, bronze.uint64), (2**63, bronze.int64), (2**31, bronze.int32), (-1, bronze.uint64)):
        with pytest.raises(ValueError):
            bronze.full(2, value, dtype=d)


def test_item_returns_the_dtypes_python_type():  # N09
    v = bronze.tensor([2**62 + 1]).item()
    assert type(v) is int and v == 2**62 + 1
    assert type(bronze.ones(1, dtype=bronze.int32).item()) is int
    assert bronze.full(1, 2**64 - 1, dtype=bronze.uint64).item() == 2**64 - 1
    assert bronze.full(1, -5, dtype=bronze.int8).item() == -5
    assert bronze.ones(1, dtype=bronze.bool).item() is True
    assert bronze.zeros(1, dtype=bronze.bool).item() is False
    assert type(bronze.ones(1, dtype=bronze.float16).item()) is float
    assert bronze.full(1, 0.5, dtype=bronze.bfloat16).item() == 0.5


def test_overlapping_copy_is_refused_or_exact():  # N16
    x = bronze.arange(4).reshape(2, 2)
    with pytest.raises(ValueError, match="single memory location"):
        x.copy_(x.t())
    assert x.numpy().tolist() == [[0, 1], [2, 3]]
    x.copy_(x)  # the same elements: a no-op, as torch
    assert x.numpy().tolist() == [[0, 1], [2, 3]]
    x.copy_(x.t().clone())
    assert x.numpy().tolist() == [[0, 2], [1, 3]]
    a = np.arange(4, dtype=np.int64)  # two imports of one memory overlap too
    with pytest.raises(ValueError, match="single memory location"):
        bronze.asarray(a).reshape(2, 2).copy_(bronze.asarray(a).reshape(2, 2).t())
    # A source torch cannot judge (a stride-0 view of the destination): through a temporary.
    src = bronze.asarray(np.lib.stride_tricks.as_strided(a[1:], (3,), (0,)))
    dst = bronze.asarray(a[1:])
    dst.copy_(src)
    bronze.synchronize()  # the copy is queued; `a` is read directly
    assert a.tolist() == [0, 1, 1, 1]


def test_half_precision_uniforms_stay_below_one():  # N17
    bronze.manual_seed(0)
    h = bronze.rand(1 << 20, dtype=bronze.float16).numpy()
    assert h.max() < 1.0 and h.min() >= 0.0 and (h == 1.0).sum() == 0
    b = bronze.rand(1 << 20, dtype=bronze.bfloat16).to(bronze.float32).numpy()
    assert b.max() < 1.0 and b.min() >= 0.0
    assert abs(float(h.mean()) - 0.5) < 0.01 and abs(float(b.mean()) - 0.5) < 0.01
    for d in (bronze.float16, bronze.bfloat16, bronze.float32, bronze.float64):  # [from, to) for any range
        u = bronze.empty(1 << 18, dtype=d).uniform_(1.0, 2.0).to(bronze.float64).numpy()
        assert u.min() >= 1.0 and u.max() < 2.0, d
    assert bronze.empty(4).uniform_(3.0, 3.0).numpy().tolist() == [3.0] * 4


def test_a_dlpack_capsule_imports_once():  # N18
    cap = np.arange(6, dtype=np.float32).__dlpack__()

    class P:
        def __dlpack__(self, **kw):
            return cap

    a = bronze.from_dlpack(P())
    with pytest.raises(ValueError, match="already imported"):
        bronze.from_dlpack(P())
    import gc
    gc.collect()
    assert a.numpy().tolist() == [0, 1, 2, 3, 4, 5]  # the tensor owns the capsule's memory


def test_more_than_64_dimensions_are_refused():  # N20
    assert bronze.zeros(*[1] * 64).numpy().shape == (1,) * 64
    with pytest.raises(ValueError, match="at most 64 dimensions"):
        bronze.zeros(*[1] * 65)
    with pytest.raises(ValueError, match="at most 64 dimensions"):
        bronze.empty(*[1] * 100000)
    with pytest.raises(ValueError, match="at most 64 dimensions"):
        bronze.ones(1).reshape(*[1] * 200)


def test_random_ranges_are_checked_against_the_dtype():  # N26
    with pytest.raises(ValueError, match="to - 1 is out of bounds for int32"):
        bronze.zeros(3, dtype=bronze.int32).random_(0, 2**40)
    with pytest.raises(ValueError, match="from is out of bounds for uint8"):
        bronze.randint(-5, 0, (5,), dtype=bronze.uint8)
    with pytest.raises(ValueError, match="out of bounds for float16"):
        bronze.randint(0, 2**30, (5,), dtype=bronze.float16)
    with pytest.raises(ValueError, match="out of bounds for float16"):
        bronze.zeros(3, dtype=bronze.float16).random_(0, 2**20)
    with pytest.raises(ValueError, match="out of bounds for float32"):
        bronze.zeros(3).uniform_(-float("inf"), float("inf"))
    with pytest.raises(ValueError, match="to is out of bounds for float16"):
        bronze.zeros(3, dtype=bronze.float16).uniform_(0, 1e6)
    with pytest.raises(ValueError, match="to - from"):
        bronze.zeros(3, dtype=bronze.float16).uniform_(-60000, 60000)
    assert set(bronze.randint(0, 256, (4096,), dtype=bronze.uint8).numpy().tolist()) <= set(range(256))
    assert bronze.randint(-128, 128, (64,), dtype=bronze.int8).numpy().min() >= -128
    assert bronze.zeros(64, dtype=bronze.float16).random_(0, 2049).numpy().max() <= 2048
    assert bronze.randint(0, 2, (64,), dtype=bronze.bool).dtype == bronze.bool


def test_mm_refuses_sizes_the_blas_cannot_take():  # N34
    # Stride-0 views: sizes past 2^31 - 1 with one float of memory behind them.
    one = np.zeros(1, np.float32)
    a = bronze.asarray(np.lib.stride_tricks.as_strided(one, (1, 2**31 + 1), (4, 0)))
    b = bronze.asarray(np.lib.stride_tricks.as_strided(one, (2**31 + 1, 1), (0, 4)))
    with pytest.raises(ValueError, match="over 2\\^31 - 1"):
        bronze.mm(a, b)
    c = bronze.asarray(np.lib.stride_tricks.as_strided(one, (2**32 + 2, 1), (0, 4)))
    with pytest.raises(ValueError, match="over 2\\^31 - 1"):
        bronze.mm(c, bronze.ones(1, 1))  # 2^32 + 2 would have wrapped to 2
    assert (bronze.ones(2, 3) @ bronze.ones(3, 2)).numpy().tolist() == [[3, 3], [3, 3]]


def test_python_ints_in_arithmetic_are_exact_or_refused():  # N42
    x = bronze.ones(3, dtype=bronze.int32)
    with pytest.raises(ValueError, match="does not fit int32"):
        x += 2**40
    with pytest.raises(ValueError, match="does not fit int32"):
        x *= 2**31
    with pytest.raises(TypeError, match="cannot be cast to the int32 tensor in place"):
        x += 1.5
    assert x.numpy().tolist() == [1, 1, 1]
    x += 2
    assert x.numpy().tolist() == [3, 3, 3]
    with pytest.raises(ValueError, match="out of the int64 range"):
        bronze.ones(3, dtype=bronze.int64) + 2**70
    with pytest.raises(ValueError, match="out of the int64 range"):
        2**70 * bronze.ones(3)
    with pytest.raises(ValueError, match="out of the int64 and uint64 ranges"):
        bronze.zeros(2).fill_(2**70)
    y = bronze.full(1, 2**62, dtype=bronze.int64) + (2**62 - 1)  # exact, not through a double
    assert y.dtype == bronze.int64 and y.item() == 2**63 - 1
    f = bronze.ones(2)
    f += 2**40
    assert f.dtype == bronze.float32 and f.numpy().tolist() == [float(np.float32(2**40 + 1))] * 2
    assert bronze.ones(2).__add__("a") is NotImplemented


def test_bool_of_a_tensor():  # N46
    assert bool(bronze.ones(1)) is True and bool(bronze.zeros(1)) is False
    assert bool(bronze.ones((), dtype=bronze.int32)) is True
    with pytest.raises(RuntimeError, match="more than one value is ambiguous"):
        bool(bronze.ones(2))
    with pytest.raises(RuntimeError, match="no values is ambiguous"):
        bool(bronze.ones(0))
    t = bronze.ones(2)
    assert (t == t) is True and (t == bronze.ones(2)) is False  # identity, as documented (docs/bad-inputs.md)
