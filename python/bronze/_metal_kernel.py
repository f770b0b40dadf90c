"""MLX's mx.fast.metal_kernel on bronze: a kernel from the body of a Metal function.

MLX generates the kernel function's signature from the call: its inputs,
outputs, template arguments and the thread attributes the body names. This
module generates it the same way, compiles it with compile_shader (one
library per distinct signature, memoized there) and launches it with
Metal's dispatchThreads semantics (`grid` counts threads).
"""

from __future__ import annotations

import builtins
import re
import typing

import numpy as np

from . import _C
from ._tensor import as_dtype, asarray, empty, full, tensor

# Metal's names for bronze dtypes, as MLX spells them in generated signatures.
_METAL_TYPES = {
    "bool": "bool", "uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t", "uint16": "uint16_t",
    "int32": "int32_t", "uint32": "uint32_t", "int64": "int64_t", "uint64": "uint64_t",
    "float16": "float16_t", "bfloat16": "bfloat16_t", "float32": "float",
}

# The thread attributes a body may name, with their parameter types.
_ATTRIBUTES = {
    "thread_position_in_grid": "uint3", "threads_per_grid": "uint3",
    "thread_position_in_threadgroup": "uint3", "threads_per_threadgroup": "uint3",
    "threadgroup_position_in_grid": "uint3", "threadgroups_per_grid": "uint3",
    "dispatch_threads_per_threadgroup": "uint3",
    "thread_index_in_threadgroup": "uint", "thread_index_in_simdgroup": "uint",
    "simdgroup_index_in_threadgroup": "uint", "threads_per_simdgroup": "uint",
    "simdgroups_per_threadgroup": "uint", "thread_execution_width": "uint",
    "thread_index_in_quadgroup": "uint", "quadgroup_index_in_threadgroup": "uint",
    "quadgroups_per_threadgroup": "uint",
}

# What MLX's own headers give a body: its type names and the index helper
# for strided inputs (written here; the arithmetic is the row-major one).
_PRELUDE = """#include <metal_stdlib>
using namespace metal;
typedef half float16_t;
typedef bfloat bfloat16_t;
template <typename IdxT = int64_t>
inline IdxT elem_to_loc(uint elem, constant const int* shape, constant const int64_t* strides, int ndim) {
  IdxT loc = 0;
  for (int i = ndim - 1; i >= 0 && elem > 0; --i) {
    loc += IdxT(elem % uint(shape[i])) * IdxT(strides[i]);
    elem /= uint(shape[i]);
  }
  return loc;
}
"""


def _metal_type(d, what):
    d = as_dtype(d)
    if d.name not in _METAL_TYPES:
        raise TypeError(f"{what}: Metal has no {d.name} (use float32)")
    return _METAL_TYPES[d.name]


def _uses(source, name):
    return re.search(r"\b" + re.escape(name) + r"\b", source) is not None


def _template_value(name, value):
    """A template argument as (parameter declaration, argument text)."""
    if isinstance(value, builtins.bool):
        return f"bool {name}", "true" if value else "false"
    if isinstance(value, (int, np.integer)):
        return f"int {name}", str(int(value))
    try:
        return f"typename {name}", _metal_type(value, f"template argument {name!r}")
    except TypeError as e:
        raise TypeError(f"template argument {name!r} must be a dtype, an int or a bool, got {value!r}") from e


def _dims(value, what):
    try:
        dims = tuple(int(v) for v in value)
    except TypeError as e:
        raise TypeError(f"{what} must be a tuple of 3 ints, got {value!r}") from e
    if len(dims) != 3 or any(v < 1 for v in dims):
        raise ValueError(f"{what} must be 3 positive ints, got {value!r}")
    return dims


class MetalKernel:
    """A Metal kernel from a body, called as MLX's metal_kernel objects are."""

    def __init__(self, name: str, input_names: typing.Sequence[str], output_names: typing.Sequence[str], source: str,
                 header: str = "", ensure_row_contiguous: bool = True, atomic_outputs: bool = False) -> None:
        """See metal_kernel()."""
        for what, v in (("name", name), ("source", source), ("header", header)):
            if not isinstance(v, str):
                raise TypeError(f"metal_kernel: {what} must be a str, got {type(v).__name__}")
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise ValueError(f"metal_kernel: name must be an identifier, got {name!r}")
        self.name = name
        self.input_names = [str(n) for n in input_names]
        self.output_names = [str(n) for n in output_names]
        names = self.input_names + self.output_names
        for n in names:
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", n):
                raise ValueError(f"metal_kernel: parameter names must be identifiers, got {n!r}")
        if len(set(names)) != len(names):
            raise ValueError(f"metal_kernel: a parameter name is given twice in {names}")
        self.source = source
        self.header = header
        self.ensure_row_contiguous = builtins.bool(ensure_row_contiguous)
        self.atomic_outputs = builtins.bool(atomic_outputs)

    def _generate(self, inputs, output_dtypes, template):
        """The library's source, its host name, and what each input binds."""
        fn = "custom_kernel_" + self.name
        params, binds = [], []  # binds per input: (name, scalar?, shape?, strides?, ndim?)
        for name, t in zip(self.input_names, inputs):
            T = _metal_type(t.dtype, f"input {name!r}")
            scalar = t.ndim == 0
            params.append(f"const constant {T}& {name}" if scalar else f"const device {T}* {name}")
            extra = [_uses(self.source, name + s) for s in ("_shape", "_strides", "_ndim")]
            if extra[0]:
                params.append(f"const constant int* {name}_shape")
            if extra[1]:
                params.append(f"const constant int64_t* {name}_strides")
            if extra[2]:
                params.append(f"const constant int& {name}_ndim")
            binds.append((scalar, *extra))
        for name, d in zip(self.output_names, output_dtypes):
            T = _metal_type(d, f"output {name!r}")
            params.append(f"device atomic<{T}>* {name}" if self.atomic_outputs else f"device {T}* {name}")
        params = [f"{p} [[buffer({i})]]" for i, p in enumerate(params)]
        params += [f"{ty} {a} [[{a}]]" for a, ty in _ATTRIBUTES.items() if _uses(self.source, a)]
        decls, args = zip(*[_template_value(n, v) for n, v in template]) if template else ((), ())
        host = fn + "".join("_" + re.sub(r"\W", "_", a) for a in args)
        text = _PRELUDE + self.header + "\n"
        if decls:
            text += f"template <{', '.join(decls)}>\n"
        text += f"[[kernel]] void {fn}(\n    " + ",\n    ".join(params) + ") {\n"
        text += self.source + "\n}\n"
        if decls:
            inst = f"{fn}<{', '.join(args)}>"
            text += f'template [[host_name("{host}")]] [[kernel]] decltype({inst}) {inst};\n'
        return text, host, binds

    def __call__(self, *, inputs: typing.Sequence[typing.Any],
                 output_shapes: typing.Sequence[typing.Sequence[int]] | None = None,
                 output_dtypes: typing.Sequence[typing.Any] | None = None, grid: typing.Sequence[int],
                 threadgroup: typing.Sequence[int],
                 template: typing.Sequence[tuple[str, typing.Any]] | None = None, init_value: float | None = None,
                 verbose: bool = False, stream: _C.Stream | None = None,
                 device: _C.device | str | None = None,
                 outputs: typing.Sequence[typing.Any] | None = None) -> list[_C.Tensor]:
        """Runs the kernel on `device` (the current device by default) and returns
        the outputs: grid counts threads (3 ints, as dispatchThreads),
        threadgroup the threads of a group; inputs on another device are copied
        there. Raises ValueError for counts that do not match the names,
        TypeError for a dtype Metal has not, ShaderCompileError at the
        generated source's lines.

        outputs= (bronze's, not MLX's): arrays the kernel writes in place, one
        per output name, instead of output_shapes and output_dtypes (a torch
        custom op's outputs); the kernel runs on their device.
        """
        if isinstance(inputs, (str, bytes)) or not hasattr(inputs, "__len__"):
            raise TypeError("inputs must be a list of arrays")
        if len(inputs) != len(self.input_names):
            raise ValueError(f"{self.name}: {len(self.input_names)} inputs named, {len(inputs)} given")
        given = None
        if outputs is not None:
            if output_shapes is not None or output_dtypes is not None:
                raise TypeError(f"{self.name}: give outputs= or output_shapes= and output_dtypes=, not both")
            given = [asarray(o) for o in outputs]  # zero-copy views of the caller's arrays
            if any(not o.is_contiguous() for o in given):
                raise ValueError(f"{self.name}: outputs= must be contiguous arrays")
            output_shapes, output_dtypes = [o.shape for o in given], [o.dtype for o in given]
        if (output_shapes is None or output_dtypes is None or len(output_shapes) != len(self.output_names)
                or len(output_dtypes) != len(self.output_names)):
            raise ValueError(f"{self.name}: {len(self.output_names)} outputs named; output_shapes and output_dtypes "
                             f"(or outputs=) must give one each")
        template = list(template or [])
        grid, threadgroup = _dims(grid, "grid"), _dims(threadgroup, "threadgroup")
        # On the current device, as MLX's default stream (or the outputs' given):
        # inputs elsewhere are copied there.
        dev = (given[0].device if device is None and given else _C.current_device() if device is None
               else device if isinstance(device, _C.device) else _C.device(str(device)))  # a name, or a torch.device
        if given is not None and any(o.device != dev for o in given):
            raise ValueError(f"{self.name}: outputs= must all be on {dev}")
        ts = []
        for x in inputs:
            t = asarray(x)
            if t.device != dev:
                t = t.to(dev)
            if self.ensure_row_contiguous and not t.is_contiguous():
                t = t.contiguous()
            ts.append(t)
        text, host, binds = self._generate(ts, output_dtypes, template)
        if verbose:
            print(text)
        # Errors name lines of the generated source (as MLX's do), with the
        # line's text; verbose=True prints it whole.
        from . import compile_shader  # the package's, defined after this module is imported

        lib = compile_shader(text, device=dev, filename=f"custom_kernel_{self.name}.metal")
        args: list[typing.Any] = []
        for t, (scalar, shape, strides, ndim) in zip(ts, binds):
            args.append(t if t.is_contiguous() else t._span())
            if shape:  # `constant int*` buffers: tensors where the kernel runs
                args.append(tensor(np.asarray(t.shape or (1,), dtype=np.int32), device=dev))
            if strides:
                args.append(tensor(np.asarray(t.stride() or (1,), dtype=np.int64), device=dev))
            if ndim:
                args.append(np.int32(t.ndim))
        if given is not None:
            outs = given
            if init_value is not None:
                for o in outs:
                    o.fill_(init_value)
        else:
            outs = []
            for shape, d in zip(output_shapes, output_dtypes):
                shape = tuple(int(s) for s in shape)
                outs.append(full(shape, init_value, dtype=as_dtype(d), device=dev) if init_value is not None
                            else empty(shape, dtype=as_dtype(d), device=dev))
        getattr(lib, host)(*args, *outs, threads=grid, group_size=threadgroup, stream=stream)
        return outs


def metal_kernel(name: str, input_names: typing.Sequence[str], output_names: typing.Sequence[str], source: str,
                 header: str = "", ensure_row_contiguous: bool = True, atomic_outputs: bool = False) -> MetalKernel:
    """A kernel from the body of a Metal function, as MLX's mx.fast.metal_kernel.

    The signature is generated from the call: each input is a `const device T*`
    (a 0-d input a `const constant T&`), with `name_shape`, `name_strides` and
    `name_ndim` where the body uses them; each output a `device T*` (`device
    atomic<T>*` with atomic_outputs); the thread attributes the body names
    (thread_position_in_grid, ...) become parameters; `template` pairs become
    template parameters (a dtype a typename, an int an int, a bool a bool).
    MLX's float16_t, bfloat16_t and elem_to_loc are defined. Call it with
    inputs=, output_shapes=, output_dtypes=, grid= (threads, as
    dispatchThreads), threadgroup=, and optionally template=, init_value=,
    verbose= (prints the generated source), stream=; it returns the outputs
    (bronze's outputs= takes arrays to write in place instead of
    output_shapes and output_dtypes).
    Inputs may be bronze tensors or NumPy, PyTorch, CuPy arrays.
    """
    return MetalKernel(name, input_names, output_names, source, header, ensure_row_contiguous, atomic_outputs)
