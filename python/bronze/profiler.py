"""bronze.profiler, as torch.mps.profiler.

start/stop/profile record every queued operation; stop() writes a Chrome
trace (open it in ui.perfetto.dev). metal_capture records every command in
a block to a capture file (`bronze capture show FILE` lists it).
"""

from __future__ import annotations

import contextlib
import os
import typing

from . import _C, _arguments
from .errors import ProfilerError


def _path(p, what):
    """A file name as str: str, bytes or os.PathLike; never None (it would be
    the file "None") and never with a NUL (the name would end there)."""
    try:
        name = os.fsdecode(os.fspath(p))
    except TypeError:
        raise TypeError(f"{what} is a file name (str or os.PathLike), got {type(p).__name__}") from None
    if "\0" in name or not name:
        raise ValueError(f"{what}: {name!r} is not a file name")
    return _arguments.text(name, what)


def start(mode: str = "interval", wait_until_completed: bool = False) -> None:
    """Starts recording every queued operation for a trace.

    mode: "interval" (each operation's interval on the device timeline),
    "event" (its completion) or "interval,event". wait_until_completed:
    each operation waits for the one before it (exact intervals, slower).
    Raises ProfilerError for another mode or when it is running already.
    """
    if not isinstance(mode, str):
        raise ProfilerError(f"profiler mode must be a string, got {type(mode).__name__}")
    try:
        _C._profiler_start(_arguments.text(mode, "profiler mode"), bool(wait_until_completed))
    except (ValueError, RuntimeError) as e:
        raise ProfilerError(str(e)) from None


def stop(path: str | os.PathLike[str] | None = None) -> str:
    """Stops profiling, writes the trace and returns its path.

    path: where to write; default $BRONZE_TRACE_FILE, else bronze-trace-PID.json.
    A trace that cannot be written is kept (the error names the path): call
    stop(path=...) again to write it elsewhere; start() drops it. Raises
    ProfilerError when it is not running.
    """
    name = "" if path is None else _path(path, "profiler.stop(path)")
    try:  # one check, where it stops: another thread may stop it first
        return _C._profiler_stop(name)
    except ValueError as e:
        raise ProfilerError(str(e)) from None


def is_running() -> bool:
    """Whether the profiler is recording (between start() and stop())."""
    return _C._profiler_is_running()


@contextlib.contextmanager
def profile(mode: str = "interval", wait_until_completed: bool = False,
            path: str | os.PathLike[str] | None = None) -> typing.Iterator[dict[str, str | None]]:
    """Profiles the block as start() and stop() do; the trace is written even
    when the block raises, and the dict the block gets has its "path" after it."""
    start(mode, wait_until_completed)
    result: dict[str, str | None] = {"path": None}
    try:
        yield result
    finally:
        result["path"] = stop(path)


def is_metal_capture_enabled() -> bool:
    """True when BRONZE_CAPTURE_ENABLED=1 (or MTL_CAPTURE_ENABLED=1) is set."""
    return _C._capture_enabled()


def is_capturing_metal() -> bool:
    """Whether a metal_capture() block is recording."""
    return _C._capturing()


@contextlib.contextmanager
def metal_capture(fname: str | os.PathLike[str]) -> typing.Iterator[None]:
    """Captures every command queued inside the block to the file fname
    (`bronze capture show FILE` lists it, `bronze capture replay FILE` runs
    it again). Raises ValueError for a name that is no file name, and what
    opening the file raises."""
    _C._capture_start(_path(fname, "metal_capture(fname)"))
    try:
        yield
    finally:
        _C._capture_stop()
