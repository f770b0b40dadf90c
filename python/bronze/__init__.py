"""bronze: the torch.mps API on NVIDIA GPUs and any CPU.

Code written against torch.mps ports by changing the import::

    import bronze as mps
    mps.manual_seed(0)
    lib = mps.compile_shader(source)

Devices are "cpu" (always present) and "cuda:N". Work is queued on streams
and runs asynchronously; synchronize() waits for it.
"""

from __future__ import annotations

import builtins as _builtins
import math as _math
import os as _os
import typing as _typing

from . import _interpreter  # noqa: F401  (first: refuses a subinterpreter before the C++ core loads)
from . import errors
from ._C import (  # noqa: F401  (re-exported API)
    DeviceProperties,
    cache_info,
    Event,
    Kernel,
    Library,
    Stream,
    Tensor,
    current_allocated_memory,
    current_device,
    cuda_status,
    current_stream,
    default_stream,
    device,
    device_count,
    devices,
    driver_allocated_memory,
    dtype,
    empty_cache,
    get_device_properties,
    get_per_process_memory_fraction,
    host_visible_memory_stats,
    initial_seed,
    is_available,
    kernel_time_limit,
    memory_stats,
    mm,
    recommended_max_memory,
    reset_peak_memory_stats,
    seed,
    set_device,
    set_kernel_time_limit,
    set_stream,
    synchronize,
)
from . import _C
from . import _cuda_paths  # noqa: F401  (pip's NVIDIA wheels, where NVRTC and cuBLAS may be)
from . import _log  # noqa: F401  (bronze's log records to logging.getLogger("bronze"))
from ._tensor import (  # noqa: F401
    arange,
    as_dtype,
    asarray,
    empty,
    from_dlpack,
    full,
    host_alias,
    ones,
    rand,
    randint,
    randn,
    tensor,
    zeros,
)
from .errors import (  # noqa: F401
    BronzeError,
    DeviceError,
    KernelArgumentError,
    KernelNotFoundError,
    NotSupportedError,
    OutOfMemoryError,
    ProfilerError,
    ShaderCompileError,
    ShaderNotSupportedError,
)
from . import event, profiler  # noqa: F401
from ._streams import stream  # noqa: F401
from ._metal_kernel import metal_kernel  # noqa: F401

bool = dtype.bool  # noqa: A001  (torch names its dtypes this way too)
uint8 = dtype.uint8
int8 = dtype.int8
int16 = dtype.int16
int32 = dtype.int32
int64 = dtype.int64
uint16 = dtype.uint16
uint32 = dtype.uint32
uint64 = dtype.uint64
float16 = dtype.float16
half = dtype.float16
bfloat16 = dtype.bfloat16
float32 = dtype.float32
float64 = dtype.float64

_host_alias_storage = host_alias

from . import _arguments  # noqa: E402

_arguments.shorten(globals(), [n for n in list(globals()) if not n.startswith("_")])
for _cls in (Tensor, Stream, Event, device, Library):
    # Their constructors say themselves what they take (a last overload
    # refuses other arguments in one line).
    _arguments.shorten_methods(_cls, skip=("__init__",))

from ._tensor import DeviceLike as _DeviceLike  # noqa: E402
from ._kernel_doc import KernelDoc as _KernelDoc  # noqa: E402

Kernel.__doc__ = _KernelDoc(Kernel.__doc__)  # type: ignore[assignment]  # help(lib.k): that kernel's
_Paths = _typing.Union[str, "_os.PathLike[str]", _typing.Iterable[_typing.Union[str, "_os.PathLike[str]"]]]

__version__ = "0.1.0"

# The public API (what `from bronze import *` takes; type checkers read re-exports from it).
__all__ = [
    "BronzeError", "DeviceError", "DeviceProperties", "Event", "Kernel", "KernelArgumentError",
    "KernelNotFoundError", "Library", "NotSupportedError", "OutOfMemoryError", "ProfilerError",
    "ShaderCompileError", "ShaderNotSupportedError", "Stream", "Tensor", "arange", "as_dtype", "asarray",
    "bfloat16", "bool", "cache_info", "compile_library", "compile_shader", "cuda_status",
    "current_allocated_memory", "current_device", "current_stream", "default_stream", "device", "device_count",
    "devices", "driver_allocated_memory", "dtype", "empty", "empty_cache", "errors", "event", "find_kernels",
    "float16", "float32", "float64", "from_dlpack", "full", "get_device_properties",
    "get_per_process_memory_fraction", "get_rng_state", "half", "host_alias", "host_visible_memory_stats",
    "initial_seed", "int16", "int32", "int64", "int8", "is_available", "kernel_time_limit", "load_metallib",
    "manual_seed", "memory_stats", "metal_kernel", "mm", "mps", "ones", "profiler", "rand", "randint", "randn",
    "recommended_max_memory", "reset_peak_memory_stats", "seed", "set_device", "set_kernel_time_limit",
    "set_per_process_memory_fraction", "set_rng_state", "set_stream", "stream", "synchronize", "tensor", "uint16",
    "uint32", "uint64", "uint8", "zeros",
]


def set_per_process_memory_fraction(fraction: float, device: _DeviceLike = None) -> None:
    """Limits this process's memory on the device to fraction * recommended_max_memory().

    As torch.mps: fraction must be a float (TypeError otherwise) in [0, 2]
    (ValueError otherwise); 0 removes the limit. An allocation over the limit
    first returns cached blocks to the driver, then raises OutOfMemoryError.
    """
    if not isinstance(fraction, float):
        raise TypeError(f"Invalid type for fraction argument, must be `float`, got {type(fraction).__name__}")
    _C._set_per_process_memory_fraction(fraction, device)


def manual_seed(seed: _typing.SupportsInt | str) -> None:
    """Seeds every device's generator.

    As torch.manual_seed: takes whatever int() takes; a negative seed wraps
    to 64 bits; a seed outside [-2**63, 2**64) is a ValueError.
    """
    try:
        seed = int(seed)
    except (TypeError, ValueError) as e:
        raise TypeError(f"manual_seed takes an integer seed, got {seed!r}") from e
    if not -(2**63) <= seed < 2**64:
        raise ValueError(f"seed must be in [-2**63, 2**64), got {seed}")
    _C.manual_seed(seed % 2**64)


_TORCH_INCLUDE = None


def _torch_include_dir():
    """An installed torch's include folder (found without importing torch), or ""."""
    global _TORCH_INCLUDE
    if _TORCH_INCLUDE is None:
        import importlib.util

        _TORCH_INCLUDE = ""
        try:
            spec = importlib.util.find_spec("torch")
        except (ImportError, ValueError):
            spec = None
        if spec is not None and spec.origin:
            inc = _os.path.join(_os.path.dirname(spec.origin), "include")
            if _os.path.isdir(_os.path.join(inc, "c10", "metal")):
                _TORCH_INCLUDE = inc
    return _TORCH_INCLUDE


def _dirs(include_dirs):
    if isinstance(include_dirs, (str, _os.PathLike)):
        include_dirs = [include_dirs]
    dirs = []
    for d in include_dirs:
        if not isinstance(d, (str, _os.PathLike)):
            raise TypeError(f"include_dirs holds folder paths, got {type(d).__name__}")
        dirs.append(_arguments.text(_os.fspath(d), "an include_dirs folder"))
    return dirs


def _str_pairs(mapping, what):
    if mapping is None:
        return []
    if not isinstance(mapping, dict):
        raise TypeError(f"{what} must be a dict of str to str, got {type(mapping).__name__}")
    out = []
    for k, v in mapping.items():
        if not isinstance(k, str) or not isinstance(v, (str, int, float)) or isinstance(v, _builtins.bool):
            raise TypeError(f"{what} maps str to str, got {k!r}: {v!r}")
        out.append((_arguments.text(k, f"a name in {what}"), _arguments.text(str(v), f"{what}[{k!r}]")))
    return out


def compile_shader(source: str, language: str = "metal", device: _DeviceLike = None,
                   filename: str | _os.PathLike[str] = "shader.metal", validate: _builtins.bool = False,
                   include_dirs: _Paths = (), headers: _typing.Mapping[str, str] | None = None,
                   defines: _typing.Mapping[str, str | int | float] | None = None,
                   constants: _typing.Mapping[str | int, _builtins.bool | int | float] | None = None,
                   math_mode: str = "fast") -> Library:
    """Compiles Metal (or, on CUDA, CUDA C++) source; kernels are the library's attributes.

    The source runs through a C preprocessor first, with Metal 3.2's predefined
    macros: `#include "x.h"` looks beside the including file, then in `headers`
    (a dict of name to text), then in include_dirs; `#include <c10/metal/...>`
    finds an installed torch's Metal headers, as torch.mps does. `defines` are
    macros as MTLCompileOptions.preprocessorMacros sets them. `constants` gives
    function constants their values (`{"has_mask": True, 3: 0.5}`, by name or
    index, as MTLFunctionConstantValues): a parameter guarded by a false or
    undefined constant takes no argument. `math_mode` is MTLCompileOptions.mathMode,
    fast by default as in Metal: "fast" (metal::exp is fast::exp, approximate
    division and square root, reassociation), "relaxed" (no reassociation) or
    "safe" (IEEE, precise:: functions); precise:: and fast:: functions keep
    their meaning in every mode. Without a device the library runs where its
    tensors are (built for another device on first use there). validate=True
    bounds-checks every buffer access of its kernels (an access out of range
    raises DeviceError at the next synchronize, naming kernel, parameter and
    index) and refuses a tensor whose dtype is not its buffer's.

    A source of more than 8 kernels is checked whole here and each kernel is
    built on its first use (lib.warmup() builds them all). help(lib.name)
    gives a kernel's parameters and how a call binds them.

    Raises ShaderCompileError (a SyntaxError) with the line and column in
    your source for a shader that does not compile (ShaderNotSupportedError
    for a part of Metal bronze does not emulate), TypeError and ValueError
    for arguments of the wrong type or value.
    """
    return _compile(source, language, device, filename, validate, include_dirs, headers, defines, False, constants,
                    math_mode)


def find_kernels(source: str, filename: str | _os.PathLike[str] = "shader.metal", include_dirs: _Paths = (),
                 headers: _typing.Mapping[str, str] | None = None,
                 defines: _typing.Mapping[str, str | int | float] | None = None) -> list[str]:
    """The names of the kernels a Metal source defines, as compile_shader would
    find them, without building anything (for checking what a file offers).
    Raises ShaderCompileError where the preprocessor or parser cannot read it."""
    return _compile(source, "metal", None, filename, False, include_dirs, headers, defines, True)


def _constant_values(constants):
    if constants is None:
        return []
    if not isinstance(constants, dict):
        raise TypeError(f"constants must be a dict of name or index to value, got {type(constants).__name__}")
    out = []
    for k, v in constants.items():
        if isinstance(k, _builtins.bool) or not isinstance(k, (str, int)):
            raise TypeError(f"constants are keyed by name (str) or index (int), got {k!r}")
        if isinstance(k, str):
            _arguments.text(k, "a constant's name")
        if isinstance(v, _builtins.bool):
            text = "true" if v else "false"
        elif isinstance(v, int):
            text = str(v)
        elif isinstance(v, float):  # as a C++ float expression; NaN and infinities by Metal's macros
            text = repr(v) if _math.isfinite(v) else "NAN" if v != v else "INFINITY" if v > 0 else "(-INFINITY)"
        else:
            raise TypeError(f"constant {k!r}: a bool, int or float, got {type(v).__name__}")
        out.append((str(k), text))
    return out


def _source_arguments(caller, source, filename, math_mode):
    """The arguments every compile takes, checked (a type or text the C++ core
    cannot take is an error naming it); returns the file name as str."""
    if not isinstance(source, str):
        raise TypeError(f"{caller} needs the source as str, got {type(source).__name__}")
    _arguments.text(source, "the source")
    if not isinstance(math_mode, str):
        raise TypeError(f"math_mode must be 'safe', 'relaxed' or 'fast', got {type(math_mode).__name__}")
    _arguments.text(math_mode, "math_mode")
    name = filename if type(filename) is str else _os.fspath(filename) if isinstance(filename, _os.PathLike) else None
    if not isinstance(name, str):
        raise TypeError(f"filename must be a str or os.PathLike, got {type(filename).__name__}")
    return _arguments.text(name, "filename")


def _compile(source, language, device, filename, validate, include_dirs, headers, defines, find_only,
             constants=None, math_mode="fast"):
    filename = _source_arguments("compile_shader", source, filename, math_mode)
    if not isinstance(language, str):
        raise TypeError(f"language must be 'metal' or 'cuda', got {type(language).__name__}")
    _arguments.text(language, "language")
    if not isinstance(validate, _builtins.bool):
        raise TypeError(f"validate must be True or False, got {type(validate).__name__}")
    plain = not include_dirs and headers is None and defines is None and constants is None  # the hot path
    return _C._compile_shader(source, language, device, filename, validate, [] if plain else _dirs(include_dirs),
                              [] if plain else _str_pairs(headers, "headers"),
                              [] if plain else _str_pairs(defines, "defines"),
                              _torch_include_dir() if language == "metal" else "", find_only,
                              [] if plain else _constant_values(constants), math_mode)


def load_metallib(source: bytes | bytearray | memoryview | str | _os.PathLike[str], device: _DeviceLike = None,
                  signatures: str | None = None, rebuild: _builtins.bool = False) -> Library:
    """Loads a precompiled kernel library: bytes/bytearray, or a path (str/PathLike).

    Reads bronze's .bronzelib format (`bronze compile FILE.metal -o FILE.bronzelib`),
    Apple's .metallib files (CPU: each kernel lowered from its AIR through LLVM on
    first use; lib.specialize gives function constants) and, on a CUDA device, raw
    cubin, PTX and fatbin modules. signatures: CUDA C++ declarations of the module's
    kernels ("__global__ void k(float* y, float a);"), needed for cubin/fatbin; PTX's
    own .entry lines serve otherwise.

    A .bronzelib's compiled objects are native code that runs in this process:
    load only libraries you trust, or pass rebuild=True to ignore them and
    build the Metal source the library carries (as compile_shader would).
    """
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
    elif isinstance(source, (str, _os.PathLike)):
        with open(source, "rb") as f:
            data = f.read()
    else:
        raise TypeError(f"load_metallib needs bytes, bytearray, str or os.PathLike, got {type(source).__name__}")
    if signatures is not None and not isinstance(signatures, str):
        raise TypeError(f"signatures must be a str of CUDA declarations, got {type(signatures).__name__}")
    if signatures is not None:
        _arguments.text(signatures, "signatures")
    if not isinstance(rebuild, _builtins.bool):
        raise TypeError(f"rebuild must be True or False, got {type(rebuild).__name__}")
    return _C._load_metallib(data, device, signatures or "", rebuild)


def compile_library(source: str, filename: str | _os.PathLike[str] = "shader.metal", device: _DeviceLike = None,
                    archs: str | int | _typing.Iterable[str | int] = (), include_dirs: _Paths = (),
                    headers: _typing.Mapping[str, str] | None = None,
                    defines: _typing.Mapping[str, str | int | float] | None = None,
                    constants: _typing.Mapping[str | int, _builtins.bool | int | float] | None = None,
                    math_mode: str = "fast") -> bytes:
    """Compiles Metal source ahead of time into .bronzelib bytes (for load_metallib).

    The library holds the preprocessed source (its includes resolved, so it
    loads anywhere), this host's CPU object and, for each GPU architecture in
    archs ("sm_90" or 90, or a list of them), a cubin, plus PTX for the oldest (needs NVRTC, not a
    GPU). include_dirs, headers, defines, constants and math_mode as for
    compile_shader; the library keeps its math mode. Raises
    ShaderCompileError as compile_shader does, ValueError for an
    architecture that is not "sm_NN" or NN.
    """
    name = _source_arguments("compile_library", source, filename, math_mode)
    if isinstance(archs, (str, int)):  # one architecture
        archs = [archs]
    return _C._compile_library(source, name, device, [_arch_number(a) for a in archs],
                               _dirs(include_dirs), _str_pairs(headers, "headers"), _str_pairs(defines, "defines"),
                               _torch_include_dir(), _constant_values(constants), math_mode)


def _arch_number(arch):
    if isinstance(arch, int) and not isinstance(arch, _builtins.bool) and arch > 0:
        return arch
    if isinstance(arch, str) and arch.startswith(("sm_", "compute_")) and arch.split("_", 1)[1].isdigit():
        return int(arch.split("_", 1)[1])
    raise ValueError(f"a GPU architecture is 'sm_90' or 90, got {arch!r}")


def get_rng_state(device: _DeviceLike = None) -> Tensor:
    """The generator state of the device (the current device by default) as a
    uint8 CPU tensor of 44 bytes (seed and offset), for set_rng_state()."""
    import numpy as np

    raw = _C._get_rng_state(device)
    return asarray(np.frombuffer(raw, dtype=np.uint8).copy(), device="cpu")


def set_rng_state(new_state: Tensor, device: _DeviceLike = None) -> None:
    """Restores a state returned by get_rng_state() on the device (the current
    device by default). Raises TypeError unless it is a uint8 bronze.Tensor,
    ValueError for one that is no generator state."""
    if not isinstance(new_state, Tensor):
        raise TypeError(f"RNG state must be a bronze.Tensor, got {type(new_state).__name__}")
    if new_state.dtype != uint8:
        raise TypeError(f"RNG state must be a uint8 tensor, got {new_state.dtype}")
    _C._set_rng_state(new_state.numpy().tobytes(), device)


@_arguments.method(Tensor, "__repr__")
def _tensor_repr(self: Tensor) -> str:
    """The elements (read as numpy() reads them), the device and the dtype."""
    try:
        body = repr(self.to(float32).numpy() if self.dtype == bfloat16 else self.numpy())
    except Exception as e:  # a failing device must not break repr()
        body = f"<unreadable: {e}>"
    return f"bronze.Tensor({body}, device='{self.device}', dtype={self.dtype})"


if _typing.TYPE_CHECKING:
    # Methods added to the C++ classes name types so that the classes' stub
    # (made from them, where `bool` is not this module's) reads them too.
    import builtins
    import typing


@_arguments.method(Library, "specialize")
def _specialize(self: Library, name: str,
                constants: typing.Mapping[str | int, builtins.bool | int | float] | None) -> Kernel:
    """The kernel `name` with these function constant values over the library's
    own (`{"has_mask": True, 3: 0.5}`, as compile_shader's constants=), as
    MTLLibrary's newFunctionWithName:constantValues: gives it; each kernel
    and set is built once per library, that kernel alone. A parameter guarded
    by a false constant takes no argument in that kernel. Raises
    KernelNotFoundError for a name that is no kernel of the library,
    ShaderCompileError where the build fails."""
    if not isinstance(name, str):
        raise TypeError(f"specialize needs the kernel's name as str, got {type(name).__name__}")
    return self._specialize(_arguments.text(name, "the kernel's name"), _constant_values(constants))


from . import mps  # noqa: F401,E402  (torch.mps's names, last: it takes compile_shader and the others from here)
