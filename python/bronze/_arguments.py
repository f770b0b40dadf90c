"""Short TypeErrors for the C++ entry points.

nanobind answers a call whose arguments match no signature with a dump of
every signature; bronze's callers get one line naming what was expected and
what came. Each entry point gets a thin wrapper that only rewrites that one
error (other TypeErrors, and every other exception, pass unchanged).
"""

import functools
import re

_DUMP = "incompatible function arguments"


def _clean(text):
    return text.replace("bronze._C.", "bronze.").replace("collections.abc.", "")


def _short(name, message, method):
    lines = message.split("\n")
    expected = []
    for line in lines:
        if re.match(r"^\s+\d+\.", line):  # "    1. f(self, x: int) -> None"
            params = line[line.find("(") + 1: line.rfind(")")]
            if method:
                params = re.sub(r"^self(, )?", "", params)
            expected.append(f"({_clean(params)})")
    got = next((line.split(":", 1)[1].strip() for line in lines if line.startswith("Invoked with types")), "")
    got = [t for t in _clean(got).split(", ") if t]
    if method:
        got = got[1:]
    return f"{name}() takes {' or '.join(expected) or 'other arguments'}; got ({', '.join(got)})"


def text(value, what):
    """value, a str the C++ core can take (it has a UTF-8 form), else a
    TypeError or ValueError naming `what`."""
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, got {type(value).__name__}")
    if not value.isascii():  # O(1): the common case costs nothing
        try:
            value.encode()
        except UnicodeEncodeError as e:
            raise ValueError(f"{what} is not valid text: it holds a lone surrogate {value[e.start]!r} at index "
                             f"{e.start}, which has no UTF-8 form") from None
    return value


def _wrap(f, name, method=False):
    @functools.wraps(f)
    def call(*args, **kwargs):
        try:
            return f(*args, **kwargs)
        except TypeError as e:
            if _DUMP not in str(e):
                raise
            # A str nanobind could not convert had the right type: said so.
            for where, v in [*enumerate(args[1:] if method else args, 1), *kwargs.items()]:
                if isinstance(v, str):
                    text(v, f"{name}(): argument {where}" if isinstance(where, int) else f"{name}(): {where}")
            raise TypeError(_short(name, str(e), method)) from None
    return call


def shorten(namespace, names):
    """Wraps the C++ functions among namespace[name] (a module's globals())."""
    for n in names:
        if type(namespace[n]).__name__ == "nb_func":
            namespace[n] = _wrap(namespace[n], n)


def shorten_methods(cls, skip=()):
    """Wraps the C++ methods of cls (constructor included, operators not:
    they answer NotImplemented instead)."""
    for n, f in list(vars(cls).items()):
        if type(f).__name__ != "nb_method" or n in skip:
            continue
        if n.startswith("__") and n != "__init__":
            continue
        shown = cls.__name__ if n == "__init__" else f"{cls.__name__}.{n}"
        setattr(cls, n, _wrap(f, shown, method=True))
