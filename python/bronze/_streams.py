"""Stream context manager (as torch.cuda.stream)."""

import contextlib

from . import _C


@contextlib.contextmanager
def stream(s):
    """Makes s the current stream of its device inside the block."""
    if s is None:
        yield
        return
    if not isinstance(s, _C.Stream):
        raise TypeError(f"stream() needs a bronze.Stream, got {type(s).__name__}")
    previous = _C.current_stream(s.device)
    _C.set_stream(s)
    try:
        yield s
    finally:
        _C.set_stream(previous)
