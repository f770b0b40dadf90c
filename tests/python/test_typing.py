"""The typed API: bronze ships _C.pyi and py.typed (PEP 561), a user's script
type-checks with mypy --strict and a wrongly typed call is reported; every
public name has a docstring; help(lib.k) gives that kernel's parameters and
how a call binds them."""

import __future__
import inspect
import os
import pydoc
import subprocess
import sys
import textwrap
import types

import numpy as np
import pytest

import bronze
import bronze.mps

PACKAGE = os.path.dirname(bronze.__file__)

USER_SCRIPT = '''
import numpy as np

import bronze
import bronze.mps as mps
from bronze import profiler
from bronze.event import Event

SOURCE = """
kernel void axpy(device float* y, const device float* x, constant float& a,
                 uint i [[thread_position_in_grid]]) {
    y[i] += a * x[i];
}
"""


def main(trace: str) -> float:
    lib: bronze.Library = bronze.compile_shader(SOURCE, defines={"UNUSED": 1}, validate=True)
    axpy: bronze.Kernel = lib.axpy
    assert "axpy" in lib and axpy.params[0]["name"] == "y" and axpy.__doc__ is not None
    x = bronze.arange(16, dtype=bronze.float32)
    y: bronze.Tensor = bronze.zeros(16)
    s = bronze.Stream()
    start, end = Event(enable_timing=True), bronze.Event(enable_timing=True)
    with bronze.stream(s):
        start.record()
        axpy(y, x, 2.0, threads=16, group_size=(4,), stream=s)
        end.record()
    bronze.synchronize()
    ms: float = start.elapsed_time(end)
    with profiler.profile("interval", path=trace) as p:
        lib.axpy(y, np.ones(16, dtype=np.float32), 1.0)
    assert p["path"] == trace
    z = (y + 1) * 2.0 - x / 3
    first: int | float | bool = z.to("cpu").float().reshape(4, 4).t().contiguous().numpy()[0, 0].item()
    m = bronze.mm(x.reshape(4, 4), x.reshape(4, 4).t())
    mps.manual_seed(0)
    r = bronze.rand(2, 3, device="mps")
    mps.synchronize()
    used: int = mps.current_allocated_memory() + bronze.memory_stats()["allocated_bytes.current"]
    dev: bronze.device = bronze.current_device()
    assert used > 0 and dev.type in ("cpu", "cuda")
    return ms + float(first) + float(m.numpy().sum()) + r.numel() + len(z.tolist())


print(main(__import__("sys").argv[1]))
'''

WRONG_CALLS = '''
import bronze

lib = bronze.compile_shader("kernel void f(device float* y) {}")
lib.f(bronze.zeros(4), stream=5)
bronze.Event(enable_timing=1)
bronze.zeros(4).fill_("one")
bronze.compile_shader(b"kernel void g() {}")
'''


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.path.dirname(PACKAGE), env.get("PYTHONPATH", "")])
    return env


def _mypy(tmp_path, *args):
    pytest.importorskip("mypy")
    r = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "mypy-cache"), *args],
                       cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=600)
    return r.returncode, r.stdout + r.stderr


def test_the_package_ships_its_stub_and_the_typed_marker():
    stub = os.path.join(PACKAGE, "_C.pyi")
    assert os.path.isfile(os.path.join(PACKAGE, "py.typed"))
    text = open(stub).read()
    # Methods the Python layer adds to the C++ classes are in their stub too.
    for line in ("class Kernel:", "def __getattr__(self, name: str, /) -> Kernel", "def specialize(self: Library",
                 "def to(self: Tensor", "def set_stream(stream: Stream) -> None"):
        assert line in text


def test_a_user_script_type_checks_strictly_and_runs(tmp_path):
    (tmp_path / "user.py").write_text(USER_SCRIPT)
    rc, out = _mypy(tmp_path, "--strict", "user.py")
    assert rc == 0, out
    r = subprocess.run([sys.executable, "user.py", str(tmp_path / "trace.json")], cwd=tmp_path, env=_env(),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert os.path.isfile(tmp_path / "trace.json")


def test_wrongly_typed_calls_are_reported(tmp_path):
    (tmp_path / "wrong.py").write_text(WRONG_CALLS)
    rc, out = _mypy(tmp_path, "wrong.py")
    assert rc == 1, out
    assert 'Argument "stream" to "__call__" of "Kernel" has incompatible type "int"' in out
    assert 'No overload variant of "Event" matches argument type "int"' in out
    assert 'Argument 1 to "fill_" of "Tensor" has incompatible type "str"' in out
    assert 'Argument 1 to "compile_shader" has incompatible type "bytes"; expected "str"' in out
    assert "Found 4 errors" in out


def test_the_package_type_checks_against_its_stub(tmp_path):
    # Its own calls into bronze._C (private ones included) match the stub.
    rc, out = _mypy(tmp_path, "-p", "bronze")
    assert rc == 0, out


def _nb_doc(f):
    """The prose of a nanobind function's overloads (its __doc__ starts with
    the generated signatures, so it is never empty)."""
    return "".join(s[1] or "" for s in f.__nb_signature__)


def _doc(obj):
    obj = getattr(obj, "__wrapped__", obj)  # bronze._arguments' wrappers
    if isinstance(obj, property) or type(obj).__name__ == "nb_property":
        getter = obj.fget
        return _nb_doc(getter) if hasattr(getter, "__nb_signature__") else getter.__doc__
    if hasattr(obj, "__nb_signature__") and not isinstance(obj, type):
        return _nb_doc(obj)
    return obj.__doc__  # a class's is its own (never inherited)


def _undocumented(name, obj, seen):
    if id(obj) in seen:
        return []
    seen.add(id(obj))
    missing = [] if (_doc(obj) or "").strip() else [name]
    if isinstance(obj, types.ModuleType):
        public = getattr(obj, "__all__", [n for n in vars(obj) if not n.startswith("_")])
        for n in public:
            member = getattr(obj, n)
            ours = getattr(member, "__name__" if isinstance(member, types.ModuleType) else "__module__", "")
            if (isinstance(member, (type, types.ModuleType)) or callable(member)) and ours.startswith("bronze"):
                missing += _undocumented(f"{name}.{n}", member, seen)
    elif isinstance(obj, type) and obj.__module__.startswith("bronze"):
        for n, member in vars(obj).items():
            if (n.startswith("_") and n not in ("__init__", "__call__")) or (
                    n == "__init__" and not hasattr(member, "__nb_signature__")):
                continue
            if callable(member) or isinstance(member, property) or type(member).__name__ == "nb_property":
                missing += _undocumented(f"{name}.{n}", member, seen)
    return missing


def test_every_public_function_and_class_has_a_docstring():
    seen = set()
    missing = []
    for module in (bronze, bronze.mps, bronze.profiler, bronze.event, bronze.errors):
        missing += _undocumented(module.__name__, module, seen)
    assert not missing, "no docstring: " + ", ".join(missing)


def test_the_docstring_walk_finds_an_undocumented_function():
    def undocumented():
        pass

    undocumented.__module__ = "bronze.example"
    module = types.ModuleType("m", "A module.")
    module.f = undocumented
    module.g = bronze.synchronize
    assert _undocumented("m", module, set()) == ["m.f"]


def test_all_names_the_public_api():
    public = {n for n in dir(bronze) if not n.startswith("_") and getattr(bronze, n) is not __future__.annotations}
    assert set(bronze.__all__) == public
    assert set(bronze.mps.__all__) <= set(dir(bronze.mps))


def test_wrapped_methods_keep_their_signatures():
    sig = inspect.signature(bronze.Tensor.size)
    assert list(sig.parameters) == ["self", "dim"] and sig.parameters["dim"].default is None
    assert inspect.signature(bronze.synchronize).parameters["device"].annotation == "bronze._C.device | str | None"


KERNELS = """
struct Params { float scale; int n; };
kernel void scale(device float* out [[buffer(0)]], const device half* in [[buffer(2)]],
                  constant Params& p [[buffer(1)]], threadgroup float* tile [[threadgroup(0)]],
                  uint i [[thread_position_in_grid]], uint2 g [[threadgroup_position_in_grid]]) {
    out[i] = float(in[i]) * p.scale;
}
"""


def test_a_kernels_doc_gives_its_parameters_and_the_call_contract():
    lib = bronze.compile_shader(KERNELS)
    doc = lib.scale.__doc__
    lines = doc.splitlines()
    assert lines[0] == "Kernel 'scale': scale(out, p, in)"  # arguments in slot order
    rows = {line.split()[1]: line for line in lines if line.startswith("  ") and len(line.split()) > 2
            and line.split()[0] in ("0", "1", "2", "-")}
    assert rows["out"].split()[:3] == ["0", "out", "[[buffer(0)]]"] and "buffer, float* (read and written)" in rows["out"]
    assert rows["p"].split()[:3] == ["1", "p", "[[buffer(1)]]"] and "value, Params (8 bytes)" in rows["p"]
    assert rows["in"].split()[:3] == ["2", "in", "[[buffer(2)]]"] and "buffer, half* (read)" in rows["in"]
    assert "[[threadgroup(0)]]" in rows["tile"] and "threadgroup buffer, float*" in rows["tile"]
    assert "[[thread_position_in_grid]]" in rows["i"] and "thread-position attribute, uint" in rows["i"]
    assert "thread-position attribute, uint2" in rows["g"]
    for keyword in ("threads:", "group_size:", "threadgroup_memory:", "stream:", "arg_casts:", "error_buf_idx:",
                    "validate=True"):
        assert keyword in doc
    # help() shows the kernel's own doc; the class keeps its docstring.
    assert "Kernel 'scale': scale(out, p, in)" in pydoc.render_doc(lib.scale, renderer=pydoc.plaintext)
    assert bronze.Kernel.__doc__.startswith("A compiled compute kernel")
    assert "Kernel 'scale'" not in pydoc.render_doc(bronze.Kernel, renderer=pydoc.plaintext)


def test_a_lazily_built_kernels_doc_builds_it():
    # More than 8 kernels: each is built on first use; the doc is made from
    # the build's reflection (as Kernel.params is), so reading it builds.
    src = "".join(f"kernel void k{i}(device float* y, uint t [[thread_position_in_grid]]) {{ y[t] = {i}; }}\n"
                  for i in range(9))
    lib = bronze.compile_shader(src)
    assert not lib.k3.is_built and not lib.k4.is_built
    assert lib.k3.__doc__.startswith("Kernel 'k3': k3(y)")
    assert lib.k3.is_built and not lib.k4.is_built


def test_metal_kernel_runs_on_a_device_object():
    # Found by the type check: device= took only names.
    k = bronze.metal_kernel("copy", ["a"], ["b"], "b[thread_position_in_grid.x] = a[thread_position_in_grid.x];")
    (out,) = k(inputs=[np.arange(4, dtype=np.float32)], output_shapes=[(4,)], output_dtypes=[bronze.float32],
               grid=(4, 1, 1), threadgroup=(4, 1, 1), device=bronze.device("cpu"))
    assert out.tolist() == [0.0, 1.0, 2.0, 3.0]
