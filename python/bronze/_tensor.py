"""Tensor creation and conversion helpers (argument handling only; the work
is done in C++)."""

from __future__ import annotations

import builtins
import typing

import numpy as _np

from . import _C
from ._arguments import method
from ._C import Tensor, dtype
from ._C import empty  # noqa: F401  (bound in C++: the allocation hot path)

if typing.TYPE_CHECKING:
    # Methods added to Tensor name the types as `bronze.X`: the stub of the
    # class (made from them) has properties called dtype and device.
    import bronze
    import numpy.typing as npt

# What tensor-making functions take as a dtype, a device and a shape.
DTypeLike = typing.Union[dtype, str, typing.Any]  # also NumPy and torch dtypes
DeviceLike = typing.Union["_C.device", str, None]

_NUMPY_TO_DTYPE = {
    _np.dtype("bool"): dtype.bool,
    _np.dtype("uint8"): dtype.uint8,
    _np.dtype("int8"): dtype.int8,
    _np.dtype("int16"): dtype.int16,
    _np.dtype("int32"): dtype.int32,
    _np.dtype("int64"): dtype.int64,
    _np.dtype("uint16"): dtype.uint16,
    _np.dtype("uint32"): dtype.uint32,
    _np.dtype("uint64"): dtype.uint64,
    _np.dtype("float16"): dtype.float16,
    _np.dtype("float32"): dtype.float32,
    _np.dtype("float64"): dtype.float64,
}
_NAMES = {d.name: d for d in _NUMPY_TO_DTYPE.values()}
_NAMES.update(bfloat16=dtype.bfloat16, half=dtype.float16, float=dtype.float32, double=dtype.float64,
              int=dtype.int32, long=dtype.int64)


def as_dtype(d: DTypeLike) -> dtype:
    """A bronze dtype from a bronze dtype, a name ("float32", "half", "int"),
    a NumPy dtype or a torch dtype. Raises TypeError for any other."""
    if isinstance(d, dtype):
        return d
    if isinstance(d, str):
        name = d
    else:
        name = str(d).replace("torch.", "")
        try:
            return _NUMPY_TO_DTYPE[_np.dtype(d)]
        except (TypeError, KeyError):
            pass
    if name in _NAMES:
        return _NAMES[name]
    raise TypeError(f"unsupported dtype {d!r}")


def _shape(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    for s in size:
        if not isinstance(s, int) or isinstance(s, builtins.bool):
            raise TypeError(f"shape entries must be ints, got {type(s).__name__}")
    return list(size)


def _finish(t, dtype_, device):
    if dtype_ is not None:
        t = t.to(dtype=dtype_)
    if device is not None:
        t = t.to(device)
    return t


def _is_device(a):
    return isinstance(a, _C.device) or (isinstance(a, str) and a.split(":")[0] in ("cpu", "cuda"))


@method(Tensor)
def to(self: Tensor, *args: bronze.device | bronze.dtype | str, dtype: bronze.dtype | str | None = None,
       device: bronze.device | str | None = None) -> Tensor:
    """t.to(device), t.to(dtype) or t.to(device, dtype) (positionally or by
    keyword): the tensor converted or copied there, or self when nothing
    changes. Raises TypeError for an unknown dtype, ValueError for an unknown
    device."""
    for a in args:
        if _is_device(a):
            device = a  # type: ignore[assignment]  # _is_device(a) says it is one
        else:
            dtype = a  # type: ignore[assignment]
    t = self
    if dtype is not None:
        t = t._to_dtype(as_dtype(dtype))
    if device is not None:
        t = t._to_device(device)
    return t


@method(Tensor)
def cpu(self: Tensor) -> Tensor:
    """The tensor on the CPU (self when it is there already)."""
    return self.to("cpu")


@method(Tensor)
def tolist(self: Tensor) -> typing.Any:
    """The elements as (nested) Python lists of numbers; waits for the tensor's producers."""
    return self.numpy().tolist()


# The conversions below come after every method whose stub names the type
# float (in the class's stub, `float` is then this method).
@method(Tensor, "float")
def _float(self: Tensor) -> Tensor:
    """The tensor as float32."""
    return self.to(dtype=dtype.float32)


@method(Tensor)
def half(self: Tensor) -> Tensor:
    """The tensor as float16."""
    return self.to(dtype=dtype.float16)


@method(Tensor)
def double(self: Tensor) -> Tensor:
    """The tensor as float64."""
    return self.to(dtype=dtype.float64)


@method(Tensor)
def mm(self: Tensor, other: Tensor) -> Tensor:
    """The matrix product self @ other (bronze.mm)."""
    return _C.mm(self, other)


@method(Tensor)
def __dlpack__(self: Tensor, *, stream: typing.Any = None, max_version: tuple[int, int] | None = None,
               dl_device: typing.Any = None, copy: bool | None = None) -> typing.Any:
    """A DLPack capsule over the tensor's memory (zero copy), after its producers finished."""
    kwargs = {}
    if max_version is not None:
        kwargs["max_version"] = max_version
    return self._dlpack_array().__dlpack__(**kwargs)


@method(Tensor)
def __dlpack_device__(self: Tensor) -> tuple[int, int]:
    """The tensor's (DLPack device type, device index)."""
    return self._dlpack_array().__dlpack_device__()


def full(size: int | typing.Sequence[int], fill_value: float, *, dtype: DTypeLike | None = None,
         device: DeviceLike = None) -> Tensor:
    """A tensor of that shape with every element fill_value: bool, int64 or
    float32 by the value's type unless dtype says, on the current device
    unless device says. Raises TypeError for a value that is no number."""
    if dtype is None:
        dtype = "bool" if isinstance(fill_value, builtins.bool) else "int64" if isinstance(fill_value, int) else "float32"
    d = as_dtype(dtype)
    value = int(fill_value) if isinstance(fill_value, (int, builtins.bool)) else float(fill_value)
    return _C._full(_shape((size,) if isinstance(size, int) else (tuple(size),)), value, d, device)


def zeros(*size: int | typing.Sequence[int], dtype: DTypeLike | None = None, device: DeviceLike = None) -> Tensor:
    """A tensor of zeros of that shape (ints, or one tuple): float32 unless dtype says."""
    return full(_shape(size), 0, dtype=dtype or "float32", device=device)


def ones(*size: int | typing.Sequence[int], dtype: DTypeLike | None = None, device: DeviceLike = None) -> Tensor:
    """A tensor of ones of that shape (ints, or one tuple): float32 unless dtype says."""
    return full(_shape(size), 1, dtype=dtype or "float32", device=device)


def arange(start: float, end: float | None = None, step: float = 1, *, dtype: DTypeLike | None = None,
           device: DeviceLike = None) -> Tensor:
    """The numbers start, start + step, ... up to end (excluded), as torch.arange:
    arange(n) counts 0 to n - 1; int64 for ints, else float32, unless dtype says."""
    if end is None:
        start, end = 0, start
    if dtype is None:
        dtype = "int64" if all(isinstance(v, int) for v in (start, end, step)) else "float32"
    return _C._arange(start, end, step, as_dtype(dtype), device)


def rand(*size: int | typing.Sequence[int], dtype: DTypeLike | None = None, device: DeviceLike = None) -> Tensor:
    """Uniform numbers in [0, 1) from the device's generator (float32 unless dtype says)."""
    return _C._rand(_shape(size), as_dtype(dtype or "float32"), device)


def randn(*size: int | typing.Sequence[int], dtype: DTypeLike | None = None, device: DeviceLike = None) -> Tensor:
    """Standard normal numbers from the device's generator (float32 unless dtype says)."""
    return _C._randn(_shape(size), as_dtype(dtype or "float32"), device)


def randint(low: int, high: int | None = None, size: typing.Sequence[int] = (), *, dtype: DTypeLike | None = None,
            device: DeviceLike = None) -> Tensor:
    """Integers in [low, high) (or [0, low) without high) of shape size, int64 unless dtype says."""
    if high is None:
        low, high = 0, low
    return _C._randint(low, high, _shape((tuple(size),)), as_dtype(dtype or "int64"), device)


def asarray(obj: typing.Any, *, dtype: DTypeLike | None = None, device: DeviceLike = None) -> Tensor:
    """A tensor over obj's memory when possible (zero copy), else a copy.

    obj: a bronze tensor, anything with __dlpack__ or the buffer protocol
    (NumPy, PyTorch, CuPy, JAX arrays), or nested lists/scalars (copied;
    Python floats become float32 as in torch).
    """
    if isinstance(obj, Tensor):
        return _finish(obj, as_dtype(dtype) if dtype is not None else None, device)
    if not (hasattr(obj, "__dlpack__") or hasattr(obj, "__array_interface__") or isinstance(obj, memoryview)):
        arr = _np.asarray(obj)
        if arr.dtype == _np.float64 and dtype is None:
            arr = arr.astype(_np.float32)
        if arr.dtype not in _NUMPY_TO_DTYPE:
            raise TypeError(f"cannot make a tensor from elements of type {arr.dtype}")
        obj = arr
    t = _C._from_array(obj)
    return _finish(t, as_dtype(dtype) if dtype is not None else None, device)


def tensor(data: typing.Any, *, dtype: DTypeLike | None = None, device: DeviceLike = None) -> Tensor:
    """A new tensor holding a copy of data (as torch.tensor), on the current device by default."""
    shared = isinstance(data, (Tensor, memoryview)) or hasattr(data, "__dlpack__") or hasattr(data, "__array_interface__")
    t = asarray(data, dtype=dtype, device=_C.current_device() if device is None else device)
    return t.clone() if shared else t


def from_dlpack(obj: typing.Any) -> Tensor:
    """Zero-copy import of a DLPack producer (anything with __dlpack__)."""
    if not hasattr(obj, "__dlpack__"):
        raise TypeError(f"from_dlpack needs an object with __dlpack__, got {type(obj).__name__}")
    return _C._from_array(obj)


def host_alias(t: Tensor) -> npt.NDArray[typing.Any]:
    """A NumPy array over the tensor's memory (zero copy) after its producers finished.

    Valid for host-visible memory: every CPU tensor, and CUDA tensors made
    with ``empty(..., host_visible=True)`` (pinned host memory mapped into the
    GPU). Waits for the tensor's device first; writes through the alias are
    seen by later device work.
    """
    if not isinstance(t, Tensor):
        raise TypeError(f"host_alias needs a bronze.Tensor, got {type(t).__name__}")
    if not t.is_host_visible():
        raise ValueError(f"this {t.device} tensor is in device memory, not host-visible: allocate it with "
                         "empty(..., host_visible=True), or copy with .cpu()")
    return _np.asarray(t)


@method(Tensor)
def __bool__(self: Tensor) -> bool:
    """bool(t) of a one-element tensor is its value's; more or fewer elements are ambiguous (torch)."""
    n = self.numel()
    if n != 1:
        raise RuntimeError(f"Boolean value of Tensor with {'no values' if n == 0 else 'more than one value'} is ambiguous")
    return builtins.bool(self.item())
