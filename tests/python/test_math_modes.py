"""Metal's math modes (MTLCompileOptions.mathMode): fast by default, precise::
and fast:: fixed in every mode, accuracy within Metal's bounds for each.

Run on the CPU here and in CI, and on the GPU by scripts/gpu-check with
BRONZE_DEVICE=cuda, where fast means CUDA's fast intrinsics, flush to zero and
approximate division and square root.
"""

import numpy as np
import pytest

import bronze

HEADER = "#include <metal_stdlib>\nusing namespace metal;\n"
ON_CUDA = bronze.current_device().type == "cuda"

# One function per output column; `ns` is "", "precise::" or "fast::".
FUNCS = ("exp", "exp2", "log", "log2", "sin", "cos", "sqrt", "rsqrt", "divide", "pow")


def math_kernel(ns):
    calls = {
        "divide": f"{ns}divide(a, b)",
        "pow": f"{ns}pow(abs(a), b)",
    }
    body = "\n".join(
        f"  y[i * {len(FUNCS)} + {k}] = {calls.get(f, f'{ns}{f}(a)')};" for k, f in enumerate(FUNCS))
    return HEADER + f"""
kernel void math(device const float* x [[buffer(0)]], device const float* d [[buffer(1)]],
                 device float* y [[buffer(2)]], uint i [[thread_position_in_grid]]) {{
  float a = x[i], b = d[i];
{body}
}}
"""


def run(ns="", math_mode="fast", x=None, d=None):
    lib = bronze.compile_shader(math_kernel(ns), math_mode=math_mode)
    y = bronze.zeros(len(x) * len(FUNCS))
    lib.math(bronze.tensor(x), bronze.tensor(d), y, threads=len(x))
    return {f: col for f, col in zip(FUNCS, y.cpu().numpy().reshape(-1, len(FUNCS)).T)}


def reference(x, d):
    a, b = x.astype(np.float64), d.astype(np.float64)
    return {"exp": np.exp(a), "exp2": np.exp2(a), "log": np.log(a), "log2": np.log2(a), "sin": np.sin(a),
            "cos": np.cos(a), "sqrt": np.sqrt(a), "rsqrt": 1 / np.sqrt(a), "divide": a / b,
            "pow": np.abs(a) ** b}


def ulps(got, want):
    """Error in units of the last place of the float32 nearest `want`."""
    w = want.astype(np.float32)
    ulp = np.spacing(np.abs(w)).astype(np.float64)
    return np.abs(got.astype(np.float64) - want) / ulp


# Inputs in the ranges Metal's accuracy table speaks of: positive (log,
# sqrt), within [-pi, pi] for fast sin/cos, results far from denormals.
X = np.linspace(0.03125, 3.0, 4093, dtype=np.float32)
D = np.linspace(-2.0, 2.0, 4093, dtype=np.float32)
D[np.abs(D) < 0.01] = 0.5


def check_precise(got, want):
    for f in ("exp", "exp2", "log", "log2", "sin", "cos"):
        assert ulps(got[f], want[f]).max() <= 4, f
    for f in ("sqrt", "divide"):  # correctly rounded
        np.testing.assert_array_equal(got[f], want[f].astype(np.float32), err_msg=f)
    assert ulps(got["rsqrt"], want["rsqrt"]).max() <= 2
    assert ulps(got["pow"], want["pow"]).max() <= 16


def check_fast(got, want):
    # Metal's fast table: exp and exp2 within 3 + floor(|2x|) ulp; log and
    # log2 within 2^-21 absolute on [0.5, 2], else a few ulp; sin and cos
    # within 2^-13 absolute on [-pi, pi]; x / y within 2.5 ulp.
    for f in ("exp", "exp2"):
        assert (ulps(got[f], want[f]) <= 3 + np.floor(np.abs(2 * X))).all(), f
    mid = (X >= 0.5) & (X <= 2)
    for f in ("log", "log2"):
        assert np.abs(got[f][mid] - want[f][mid]).max() <= 2.0 ** -21, f
        assert ulps(got[f][~mid], want[f][~mid]).max() <= 4, f
    for f in ("sin", "cos"):
        assert np.abs(got[f] - want[f]).max() <= 2.0 ** -13, f
    assert ulps(got["divide"], want["divide"]).max() <= 2.5
    assert ulps(got["sqrt"], want["sqrt"]).max() <= 3
    assert ulps(got["rsqrt"], want["rsqrt"]).max() <= 2
    np.testing.assert_allclose(got["pow"], want["pow"], rtol=2e-5)


@pytest.mark.parametrize("math_mode", ["safe", "relaxed", "fast"])
def test_each_mode_within_metals_accuracy_bounds(math_mode):
    got, want = run("", math_mode, X, D), reference(X, D)
    (check_precise if math_mode == "safe" else check_fast)(got, want)


@pytest.mark.parametrize("math_mode", ["relaxed", "fast"])
def test_precise_functions_stay_precise_in_fast_units(math_mode):
    safe = run("", "safe", X, D)
    got = run("precise::", math_mode, X, D)
    for f in FUNCS:
        np.testing.assert_array_equal(got[f], safe[f], err_msg=f)
    check_fast(run("fast::", "safe", X, D), reference(X, D))


def test_fast_is_the_default():
    src = HEADER + """
    kernel void k(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                  uint i [[thread_position_in_grid]]) {
      y[2 * i] = x[i] + 0.0f;  // -0 + 0 is +0 unless signed zeros may be ignored
      y[2 * i + 1] = exp(x[i]);
    }
    """
    x = np.linspace(-4, 4, 255, dtype=np.float32)
    x[0] = -0.0

    def outputs(**kw):
        y = bronze.zeros(2 * len(x))
        bronze.compile_shader(src, **kw).k(bronze.tensor(x), y, threads=len(x))
        return y.cpu().numpy().reshape(-1, 2)

    default, fast, safe = outputs(), outputs(math_mode="fast"), outputs(math_mode="safe")
    np.testing.assert_array_equal(default.view(np.uint32), fast.view(np.uint32))
    assert not np.signbit(safe[0, 0])
    if ON_CUDA:  # fast exp is __expf, not expf
        assert (default[:, 1] != safe[:, 1]).any()
    else:  # the host compiler folds x + 0.0f to x
        assert np.signbit(default[0, 0])


@pytest.mark.parametrize("math_mode", ["safe", "relaxed", "fast"])
def test_infinities_and_nans_are_honoured_in_every_mode(math_mode):
    # Real fast-mode kernels rely on them: softmax's -INFINITY identity, NaN checks.
    lib = bronze.compile_shader(HEADER + """
    kernel void k(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                  uint i [[thread_position_in_grid]]) {
      float m = -INFINITY;
      for (int j = 0; j < 4; ++j) m = max(m, x[j]);
      y[4 * i + 0] = m;
      y[4 * i + 1] = isnan(x[i]) ? 1.0f : 0.0f;
      y[4 * i + 2] = isinf(x[i] / 0.0f) ? 1.0f : 0.0f;
      y[4 * i + 3] = exp(-INFINITY);
    }
    """, math_mode=math_mode)
    x = np.array([1.0, np.nan, -2.0, 3.0], dtype=np.float32)
    y = bronze.zeros(16)
    lib.k(bronze.tensor(x), y, threads=4)
    got = y.cpu().numpy().reshape(4, 4)
    assert (got[:, 0] == 3.0).all()
    np.testing.assert_array_equal(got[:, 1], [0, 1, 0, 0])
    np.testing.assert_array_equal(got[:, 2], [1, 0, 1, 1])
    np.testing.assert_array_equal(got[:, 3], 0)


def test_a_precompiled_library_keeps_its_math_mode():
    src = HEADER + """
    kernel void k(device const float* x, device float* y, uint i [[thread_position_in_grid]]) { y[i] = x[i] + 0.0f; }
    """
    x = bronze.tensor(np.array([-0.0], dtype=np.float32))
    for mode in ("safe", "fast"):
        lib = bronze.load_metallib(bronze.compile_library(src, math_mode=mode))
        y = bronze.zeros(1)
        lib.k(x, y, threads=1)
        direct = bronze.zeros(1)
        bronze.compile_shader(src, math_mode=mode).k(x, direct, threads=1)
        assert np.signbit(y.cpu().numpy()[0]) == np.signbit(direct.cpu().numpy()[0])


def test_bad_math_modes_are_refused_clearly():
    with pytest.raises(ValueError, match="'safe', 'relaxed' or 'fast'"):
        bronze.compile_shader(math_kernel(""), math_mode="precise")
    with pytest.raises(TypeError, match="math_mode"):
        bronze.compile_shader(math_kernel(""), math_mode=None)
    with pytest.raises(ValueError, match="'safe', 'relaxed' or 'fast'"):
        bronze.compile_library(math_kernel(""), math_mode="Fast")
