"""Imported before the C++ core: bronze loads in the main interpreter only.

The core holds one state per process (nanobind's type registry, as NumPy
holds its own): executed again in a subinterpreter it replaced the main
interpreter's registry, and every later call there failed (N21). Python
3.12+ refuses such an extension in a subinterpreter itself; 3.11 is told
here, before bronze._C loads.
"""

try:
    import _xxsubinterpreters as _interpreters  # type: ignore[import-not-found]  # CPython's own, untyped
except ImportError:  # no subinterpreters, or a Python that checks them itself
    _interpreters = None

if _interpreters is not None and _interpreters.get_current() != _interpreters.get_main():
    raise ImportError("bronze runs in the main interpreter only (its C++ core and NumPy keep one state per process)")
