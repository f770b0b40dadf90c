"""Short TypeErrors for the C++ entry points.

nanobind answers a call whose arguments match no signature with a dump of
every signature; bronze's callers get one line naming what was expected and
what came. Each entry point gets a thin wrapper that only rewrites that one
error (other TypeErrors, and every other exception, pass unchanged).
"""

import ast
import functools
import inspect
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


def _signature(f):
    """f's nanobind signature as an inspect.Signature (annotations as text),
    or None for an overloaded function: inspect.signature, help() and
    nanobind's stubgen read it from the wrapper."""
    sigs = getattr(f, "__nb_signature__", ())
    if len(sigs) != 1:
        return None
    text, _, defaults = sigs[0]
    # Defaults are placeholders \N (\=N: given as text) into the tuple.
    try:
        return _parse_signature(re.sub(r"\\=?(\d+)", r"_default_\1", text), defaults)
    except (SyntaxError, ValueError):  # not Python's syntax, or a default that is no literal
        return None


def _parse_signature(text, defaults):
    fn = ast.parse(text + ": ...").body[0]

    def default(node):
        if isinstance(node, ast.Name) and node.id.startswith("_default_"):
            return defaults[int(node.id[len("_default_"):])]
        return ast.literal_eval(node)

    a = fn.args
    P = inspect.Parameter
    params = []
    positional = [(x, P.POSITIONAL_ONLY) for x in a.posonlyargs] + [(x, P.POSITIONAL_OR_KEYWORD) for x in a.args]
    first_default = len(positional) - len(a.defaults)
    for i, (x, kind) in enumerate(positional):
        params.append(P(x.arg, kind, annotation=ast.unparse(x.annotation) if x.annotation else P.empty,
                        default=default(a.defaults[i - first_default]) if i >= first_default else P.empty))
    if a.vararg:
        params.append(P(a.vararg.arg, P.VAR_POSITIONAL,
                        annotation=ast.unparse(a.vararg.annotation) if a.vararg.annotation else P.empty))
    for x, d in zip(a.kwonlyargs, a.kw_defaults):
        params.append(P(x.arg, P.KEYWORD_ONLY, annotation=ast.unparse(x.annotation) if x.annotation else P.empty,
                        default=P.empty if d is None else default(d)))
    if a.kwarg:
        params.append(P(a.kwarg.arg, P.VAR_KEYWORD,
                        annotation=ast.unparse(a.kwarg.annotation) if a.kwarg.annotation else P.empty))
    return inspect.Signature(params, return_annotation=ast.unparse(fn.returns) if fn.returns else P.empty)


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
    signature = _signature(f)
    if signature is not None:
        call.__signature__ = signature
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


def method(cls, name=None):
    """Decorator: the function becomes cls's method `name` (its own name by
    default), named as the class's C++ methods are, so that nanobind's stubgen
    puts it into the class's stub."""
    def add(f):
        f.__name__ = name or f.__name__
        f.__qualname__ = f"{cls.__name__}.{f.__name__}"
        f.__module__ = cls.__module__
        setattr(cls, f.__name__, f)
        return f
    return add
