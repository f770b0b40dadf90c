"""Stream context manager (as torch.cuda.stream)."""

from __future__ import annotations

import contextlib
import typing

from . import _C


@contextlib.contextmanager
def stream(s: _C.Stream | None) -> typing.Iterator[_C.Stream | None]:
    """Makes s the current stream of its device inside the block (as
    torch.cuda.stream), and the previous one again after it; None changes
    nothing. Raises TypeError for anything but a Stream or None."""
    if s is None:
        yield None
        return
    if not isinstance(s, _C.Stream):
        raise TypeError(f"stream() needs a bronze.Stream, got {type(s).__name__}")
    previous = _C.current_stream(s.device)
    _C.set_stream(s)
    try:
        yield s
    finally:
        _C.set_stream(previous)
