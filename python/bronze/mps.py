"""torch.mps's API on bronze: code written for torch.mps ports by one import,

    import bronze.mps as mps        # was: import torch.mps as mps
    mps.manual_seed(0)
    lib = mps.compile_shader(source)
    mps.synchronize()

Its functions act on the device "mps" names in bronze: its default
accelerator, the first CUDA device where there is one, else the CPU (said
once through `warnings`). `device="mps"` means the same device everywhere in
bronze. Libraries compiled here follow their tensors, as bronze's do.
"""

from __future__ import annotations

from . import _C, event, profiler  # noqa: F401  (torch.mps.event, torch.mps.profiler)
from ._C import manual_seed, seed  # noqa: F401  (every device's generator: bronze has one seed)
from . import compile_shader  # noqa: F401
from . import get_rng_state as _get_rng_state, set_per_process_memory_fraction as _set_fraction
from . import set_rng_state as _set_rng_state

__all__ = [
    "compile_shader", "current_allocated_memory", "device_count", "driver_allocated_memory", "empty_cache", "event",
    "get_rng_state", "is_available", "manual_seed", "profiler", "recommended_max_memory", "seed",
    "set_per_process_memory_fraction", "set_rng_state", "synchronize",
]


def _mps() -> _C.device:
    return _C.device("mps")


def is_available() -> bool:
    """True: bronze always has a device for "mps" (a GPU, else the CPU)."""
    return True


def device_count() -> int:
    """1, as torch.mps counts its one GPU."""
    return 1


def synchronize() -> None:
    """Waits for the work queued on the "mps" device, and raises what failed."""
    _C.synchronize(_mps())


def get_rng_state(device: _C.device | str = "mps") -> _C.Tensor:
    """The generator state of `device` ("mps" by default), as a uint8 tensor."""
    return _get_rng_state(device)


def set_rng_state(new_state: _C.Tensor, device: _C.device | str = "mps") -> None:
    """Sets the generator state of `device` ("mps" by default)."""
    _set_rng_state(new_state, device)


def empty_cache() -> None:
    """Frees the cached blocks of the "mps" device's allocator."""
    _C.empty_cache(_mps())


def set_per_process_memory_fraction(fraction: float) -> None:
    """Limits this process's allocations on the "mps" device to `fraction` of its recommended maximum."""
    _set_fraction(fraction, _mps())


def current_allocated_memory() -> int:
    """Bytes of tensors alive on the "mps" device."""
    return _C.current_allocated_memory(_mps())


def driver_allocated_memory() -> int:
    """Bytes the "mps" device's allocator holds, cached blocks included."""
    return _C.driver_allocated_memory(_mps())


def recommended_max_memory() -> int:
    """The most memory the "mps" device should be given."""
    return _C.recommended_max_memory(_mps())
