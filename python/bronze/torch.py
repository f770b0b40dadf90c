"""PyTorch custom operators whose work is bronze kernels (import bronze.torch).

custom_op registers a torch.library operator, so eager calls, autograd and
torch.compile (fullgraph, no graph break) see one opaque op, as
torch.library.custom_op and triton_op give:

    @bronze.torch.custom_op("mylib::scale", mutates_args=(),
                            outputs=lambda x, factor: torch.empty_like(x))
    def scale(x: torch.Tensor, factor: float, *, out):
        lib.scale(out, x, factor)

The function's positional parameters, annotated, are the op's inputs; its
keyword-only parameters are the op's outputs, which `outputs` allocates from
the inputs and the op returns. That one function of the inputs is also the
op's fake implementation (torch.compile and torch.export run it on fake
tensors), so the shapes and dtypes traced are the ones the kernels fill.

Kernels launched in the function's body run on PyTorch's current stream for
CUDA tensors (bronze's current stream of that device is set to it while the
body runs), ordered with torch's own work without a synchronize. PyTorch's CPU
ops are synchronous, so on the CPU the op waits for bronze's current CPU
stream before it returns: outputs are complete when torch reads them.
"""

import inspect

import torch  # type: ignore[import-not-found,unused-ignore]  # optional: a mypy run without torch

from . import _C
from ._streams import stream as _stream

__all__ = ["custom_op"]

# bronze streams wrapping PyTorch's CUDA streams, one per (device, handle), so a
# stream's id (which bronze's allocator keys on) stays the same across calls.
# PyTorch's streams (its pools and default streams) live for the process.
_torch_streams: dict[tuple[int, int], _C.Stream] = {}


def _bronze_stream(device):
    """bronze's stream for PyTorch's current stream on a CUDA device."""
    index = device.index if device.index is not None else torch.cuda.current_device()
    handle = torch.cuda.current_stream(index).cuda_stream
    s = _torch_streams.get((index, handle))
    if s is None:
        s = _torch_streams.setdefault((index, handle), _C._external_stream(handle, _C.device(f"cuda:{index}")))
    return s


def _first_device(values):
    for v in values:
        if isinstance(v, torch.Tensor):
            return v.device
        if isinstance(v, (list, tuple)):
            d = _first_device(v)
            if d is not None:
                return d
    return None


def _detached(v):
    if isinstance(v, torch.Tensor):
        return v.detach()
    if isinstance(v, (list, tuple)):
        return type(v)(_detached(t) for t in v)
    return v


def _run(name, body, outs, args):
    """Runs body() where its kernels are ordered with PyTorch's work on the op's device."""
    device = _first_device(outs) or _first_device(args)
    if device is None:
        raise TypeError(f"{name}: an op on bronze kernels needs a tensor among its inputs or outputs")
    if device.type == "cuda":
        # torch exports a tensor (DLPack) only with its device current
        with torch.cuda.device(device), _stream(_bronze_stream(device)):
            body()
    elif device.type == "cpu":
        s = _C.current_stream(_C.device("cpu"))
        try:
            body()
        finally:
            s.synchronize()  # torch reads the outputs as soon as the op returns (and a kernel's fault is this op's error)
    else:
        raise ValueError(f"{name}: tensors on {device}; bronze kernels run on CPU and CUDA tensors")


def custom_op(name, fn=None, /, *, mutates_args, outputs=None, backward=None, setup_context=None,
              device_types=None):
    """A torch.library custom op from a function that launches bronze kernels.

    name is "namespace::op". The function's positional parameters, with type
    annotations as torch.library.custom_op needs, are the op's inputs (its
    schema is inferred from them); its keyword-only parameters receive the
    op's outputs. outputs(*inputs) returns them, empty (a tensor, or a tuple
    of one per keyword-only parameter, in order: torch.empty_like(x),
    x.new_empty(shape, dtype=...)); the same function is the op's fake
    implementation, so give shapes and dtypes as functions of the inputs. The
    op returns the outputs (a tensor, a tuple, or None for an op that only
    mutates its mutates_args). backward and setup_context, when given, are
    registered with register_autograd (as torch.library's); the returned
    CustomOpDef also takes register_autograd, register_kernel and the rest
    later. Works as a decorator or called with fn.
    """
    if not isinstance(name, str):
        raise TypeError(f"custom_op: name must be a str like 'mylib::op', got {type(name).__name__}")
    if setup_context is not None and backward is None:
        raise TypeError(f"{name}: setup_context is given without a backward")
    _C._quiet_leaks()  # torch never drops a registered op: what its function holds outlives the interpreter

    def register(fn):
        if not callable(fn):
            raise TypeError(f"{name}: custom_op needs a function, got {type(fn).__name__}")
        # Evaluated now: string annotations (from __future__ import annotations)
        # name the function's own globals, which torch's schema inference
        # would not see on the wrapper.
        sig = inspect.signature(fn, eval_str=True)
        params = list(sig.parameters.values())
        out_names = [p.name for p in params if p.kind is p.KEYWORD_ONLY]
        inputs = [p for p in params if p.kind is not p.KEYWORD_ONLY]
        if out_names and outputs is None:
            raise TypeError(f"{name}: keyword-only parameters {out_names} are outputs; give outputs= to allocate them")
        if outputs is not None and not out_names:
            raise TypeError(f"{name}: outputs= is given, but the function has no keyword-only parameter to receive them")
        n = len(out_names)

        def allocate(args, kwargs):
            spec = outputs(*args, **kwargs)
            outs = (spec,) if isinstance(spec, torch.Tensor) else tuple(spec) if isinstance(spec, (tuple, list)) else None
            if outs is None or len(outs) != n or not all(isinstance(t, torch.Tensor) for t in outs):
                raise TypeError(f"{name}: outputs() must return {n} tensor{'s' if n > 1 else ''} "
                                f"(for {', '.join(out_names)}), got {spec!r}")
            return outs

        def result(outs):
            return None if n == 0 else outs[0] if n == 1 else outs

        def impl(*args, **kwargs):
            # Below autograd (register_autograd's forward) inputs still require
            # grad, which DLPack refuses to export: the kernels see them detached.
            args = tuple(_detached(a) for a in args)
            outs = allocate(args, kwargs) if n else ()
            _run(name, lambda: fn(*args, **kwargs, **dict(zip(out_names, outs))), outs, args)
            return result(outs)

        def fake(*args, **kwargs):
            return result(allocate(args, kwargs) if n else ())

        ret = None if n == 0 else torch.Tensor if n == 1 else tuple.__class_getitem__((torch.Tensor,) * n)
        impl.__signature__ = sig.replace(parameters=inputs, return_annotation=ret)
        impl.__name__, impl.__qualname__, impl.__doc__ = fn.__name__, fn.__qualname__, fn.__doc__
        impl.__module__ = fn.__module__
        op = torch.library.custom_op(name, impl, mutates_args=mutates_args, device_types=device_types)
        op.register_fake(fake)
        if backward is not None:
            op.register_autograd(backward, setup_context=setup_context)
        return op

    return register if fn is None else register(fn)
