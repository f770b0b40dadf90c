"""bronze.metal_kernel: MLX's mx.fast.metal_kernel, its documented uses
(written here in their style): an elementwise exp, a strided variant, a
bilinear grid sample and its backward pass with atomic outputs."""

import numpy as np
import pytest

import bronze

EXP_BODY = """
    uint elem = thread_position_in_grid.x;
    T tmp = inp[elem];
    out[elem] = metal::exp(tmp);
"""


def test_an_elementwise_exp_from_a_body():
    k = bronze.metal_kernel(name="myexp", input_names=["inp"], output_names=["out"], source=EXP_BODY)
    a = np.linspace(-2, 2, 64, dtype=np.float32).reshape(4, 16)
    (out,) = k(inputs=[a], template=[("T", bronze.float32)], grid=(a.size, 1, 1), threadgroup=(32, 1, 1),
               output_shapes=[a.shape], output_dtypes=[bronze.float32])
    bronze.synchronize()
    assert out.shape == (4, 16)
    np.testing.assert_allclose(out.numpy(), np.exp(a), rtol=1e-5)


def test_outputs_written_in_place():
    # bronze's outputs= (not MLX's): the caller's arrays, written zero-copy.
    k = bronze.metal_kernel(name="myexp", input_names=["inp"], output_names=["out"], source=EXP_BODY)
    a = np.linspace(-2, 2, 64, dtype=np.float32)
    out = np.zeros(64, dtype=np.float32)
    (got,) = k(inputs=[a], template=[("T", bronze.float32)], grid=(64, 1, 1), threadgroup=(32, 1, 1), outputs=[out])
    bronze.synchronize()
    np.testing.assert_allclose(out, np.exp(a), rtol=1e-5)
    np.testing.assert_array_equal(got.numpy(), out)  # the result is a bronze view of the array given
    with pytest.raises(TypeError, match="not both"):
        k(inputs=[a], template=[("T", bronze.float32)], grid=(64, 1, 1), threadgroup=(32, 1, 1), outputs=[out],
          output_shapes=[(64,)])
    with pytest.raises(ValueError, match="contiguous"):
        k(inputs=[a], template=[("T", bronze.float32)], grid=(32, 1, 1), threadgroup=(32, 1, 1),
          outputs=[np.zeros(64, dtype=np.float32)[::2]])
    with pytest.raises(ValueError, match="1 outputs named"):
        k(inputs=[a], template=[("T", bronze.float32)], grid=(64, 1, 1), threadgroup=(32, 1, 1), outputs=[])


def test_half_inputs_and_the_generated_source(capsys):
    k = bronze.metal_kernel(name="myexp", input_names=["inp"], output_names=["out"], source=EXP_BODY)
    a = bronze.asarray(np.linspace(0, 1, 40, dtype=np.float16))
    (out,) = k(inputs=[a], template=[("T", bronze.float16)], grid=(40, 1, 1), threadgroup=(64, 1, 1),
               output_shapes=[(40,)], output_dtypes=[bronze.float16], verbose=True)
    bronze.synchronize()
    np.testing.assert_allclose(out.numpy().astype(np.float32), np.exp(a.numpy().astype(np.float32)), rtol=2e-3)
    printed = capsys.readouterr().out
    assert "const device float16_t* inp [[buffer(0)]]" in printed
    assert "device float16_t* out [[buffer(1)]]" in printed
    assert "uint3 thread_position_in_grid [[thread_position_in_grid]]" in printed
    assert 'host_name("custom_kernel_myexp_float16_t")' in printed


STRIDED_BODY = """
    uint elem = thread_position_in_grid.x;
    uint loc = elem_to_loc(elem, inp_shape, inp_strides, inp_ndim);
    T tmp = inp[loc];
    out[elem] = metal::exp(tmp);
"""


def test_a_strided_input_read_through_its_shape_and_strides(capsys):
    k = bronze.metal_kernel(name="myexp_strided", input_names=["inp"], output_names=["out"], source=STRIDED_BODY,
                            ensure_row_contiguous=False)
    base = np.arange(24, dtype=np.float32).reshape(4, 6) / 10
    a = bronze.asarray(base).t()  # (6, 4), not row-contiguous: its strides reach the kernel
    assert not a.is_contiguous()
    (out,) = k(inputs=[a], template=[("T", bronze.float32)], grid=(24, 1, 1), threadgroup=(8, 1, 1),
               output_shapes=[(6, 4)], output_dtypes=[bronze.float32], verbose=True)
    bronze.synchronize()
    np.testing.assert_allclose(out.numpy(), np.exp(base.T), rtol=1e-5)
    printed = capsys.readouterr().out
    assert "const constant int* inp_shape" in printed and "const constant int64_t* inp_strides" in printed
    assert "const constant int& inp_ndim" in printed


def test_row_contiguous_inputs_are_copied_first():
    k = bronze.metal_kernel(name="copy_rows", input_names=["inp"], output_names=["out"],
                            source="uint i = thread_position_in_grid.x; out[i] = inp[i];")
    base = np.arange(12, dtype=np.float32).reshape(3, 4)
    (out,) = k(inputs=[bronze.asarray(base).t()], grid=(12, 1, 1), threadgroup=(4, 1, 1),
               output_shapes=[(4, 3)], output_dtypes=[bronze.float32])
    bronze.synchronize()
    np.testing.assert_array_equal(out.numpy(), base.T)


# Bilinear sampling of x (N, H, W, C) at grid (N, gH, gW, 2) in [-1, 1]:
# the forward reads four neighbours; the backward scatters the output's
# gradient to them with atomic adds (several grid points share a pixel).
SAMPLE_POSITION = """
    uint elem = thread_position_in_grid.x;
    int H = x_shape[1], W = x_shape[2], C = x_shape[3];
    int gH = grid_shape[1], gW = grid_shape[2];
    int c = elem % C;
    int w = (elem / C) % gW;
    int h = (elem / (C * gW)) % gH;
    int n = elem / (C * gW * gH);
    int g = ((n * gH + h) * gW + w) * 2;
    float ix = ((grid[g] + 1) * W - 1) / 2;
    float iy = ((grid[g + 1] + 1) * H - 1) / 2;
    int x0 = floor(ix), y0 = floor(iy);
    float wx = ix - x0, wy = iy - y0;
"""
SAMPLE_FWD = SAMPLE_POSITION + """
    float acc = 0;
    for (int dy = 0; dy < 2; ++dy)
      for (int dx = 0; dx < 2; ++dx) {
        int yy = y0 + dy, xx = x0 + dx;
        if (yy >= 0 && yy < H && xx >= 0 && xx < W)
          acc += (dy ? wy : 1 - wy) * (dx ? wx : 1 - wx) * x[((n * H + yy) * W + xx) * C + c];
      }
    out[elem] = acc;
"""

SAMPLE_BWD = SAMPLE_POSITION + """
    for (int dy = 0; dy < 2; ++dy)
      for (int dx = 0; dx < 2; ++dx) {
        int yy = y0 + dy, xx = x0 + dx;
        if (yy >= 0 && yy < H && xx >= 0 && xx < W)
          atomic_fetch_add_explicit(&x_grad[((n * H + yy) * W + xx) * C + c],
                                    (dy ? wy : 1 - wy) * (dx ? wx : 1 - wx) * cotangent[elem],
                                    memory_order_relaxed);
      }
"""


def _bilinear_weights(x_shape, grid):
    """(n, gy, gx) -> [(y, x, weight)] in NumPy, the reference."""
    N, H, W, _ = x_shape
    out = {}
    for n in range(N):
        for h in range(grid.shape[1]):
            for w in range(grid.shape[2]):
                ix = ((grid[n, h, w, 0] + 1) * W - 1) / 2
                iy = ((grid[n, h, w, 1] + 1) * H - 1) / 2
                x0, y0 = int(np.floor(ix)), int(np.floor(iy))
                wx, wy = ix - x0, iy - y0
                out[n, h, w] = [(y0 + dy, x0 + dx, (wy if dy else 1 - wy) * (wx if dx else 1 - wx))
                                for dy in (0, 1) for dx in (0, 1)
                                if 0 <= y0 + dy < H and 0 <= x0 + dx < W]
    return out


def test_a_grid_sample_and_its_backward_with_atomic_outputs():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 5, 6, 3)).astype(np.float32)
    grid = rng.uniform(-1.1, 1.1, (2, 4, 4, 2)).astype(np.float32)
    out_shape = (2, 4, 4, 3)
    fwd = bronze.metal_kernel(name="grid_sample", input_names=["x", "grid"], output_names=["out"], source=SAMPLE_FWD)
    (out,) = fwd(inputs=[x, grid], grid=(int(np.prod(out_shape)), 1, 1), threadgroup=(64, 1, 1),
                 output_shapes=[out_shape], output_dtypes=[bronze.float32])
    cot = rng.standard_normal(out_shape).astype(np.float32)
    bwd = bronze.metal_kernel(name="grid_sample_grad", input_names=["x", "grid", "cotangent"],
                              output_names=["x_grad"], source=SAMPLE_BWD, atomic_outputs=True)
    (x_grad,) = bwd(inputs=[x, grid, cot], grid=(int(np.prod(out_shape)), 1, 1), threadgroup=(64, 1, 1),
                    output_shapes=[x.shape], output_dtypes=[bronze.float32], init_value=0)
    bronze.synchronize()
    want, want_grad = np.zeros(out_shape, np.float32), np.zeros_like(x)
    for (n, h, w), taps in _bilinear_weights(x.shape, grid).items():
        for y, xx, wt in taps:
            want[n, h, w] += wt * x[n, y, xx]
            want_grad[n, y, xx] += wt * cot[n, h, w]
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(x_grad.numpy(), want_grad, rtol=1e-4, atol=1e-5)


def test_template_ints_and_bools_and_a_scalar_input():
    k = bronze.metal_kernel(name="scaled", input_names=["inp", "k"], output_names=["out"],
                            source="uint i = thread_position_in_grid.x;\n"
                                   "out[i] = (NEG ? -1 : 1) * inp[i] * k + N;")
    a = np.arange(8, dtype=np.float32)
    (out,) = k(inputs=[a, np.array(3.0, dtype=np.float32)], template=[("N", 5), ("NEG", True)],
               grid=(8, 1, 1), threadgroup=(8, 1, 1), output_shapes=[(8,)], output_dtypes=[bronze.float32])
    bronze.synchronize()
    np.testing.assert_array_equal(out.numpy(), -a * 3 + 5)


def test_init_value_fills_the_outputs_first():
    k = bronze.metal_kernel(name="half_written", input_names=[], output_names=["out"],
                            source="uint i = thread_position_in_grid.x; if (i % 2 == 0) out[i] = 1;")
    (out,) = k(inputs=[], grid=(6, 1, 1), threadgroup=(6, 1, 1), output_shapes=[(6,)],
               output_dtypes=[bronze.int32], init_value=-7)
    bronze.synchronize()
    assert out.numpy().tolist() == [1, -7, 1, -7, 1, -7]


def _generated(kernel, line):
    """The 0-based line of the generated source that holds `line`."""
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(bronze.ShaderCompileError):
        kernel(inputs=[np.zeros(4, np.float32)], grid=(4, 1, 1), threadgroup=(4, 1, 1), output_shapes=[(4,)],
               output_dtypes=[bronze.float32], verbose=True)
    return out.getvalue().splitlines().index(line)


def test_errors_name_the_generated_line_and_bad_calls_are_refused():
    k = bronze.metal_kernel(name="broken", input_names=["inp"], output_names=["out"],
                            source="uint i = thread_position_in_grid.x;\nout[i] = nope;")
    with pytest.raises(bronze.ShaderCompileError) as e:
        k(inputs=[np.zeros(4, np.float32)], grid=(4, 1, 1), threadgroup=(4, 1, 1), output_shapes=[(4,)],
          output_dtypes=[bronze.float32])
    # At the generated source's line (as MLX reports), with its text.
    assert "custom_kernel_broken.metal" in str(e.value) and "out[i] = nope;" in str(e.value)
    assert e.value.lineno == 1 + _generated(k, "out[i] = nope;")
    ok = bronze.metal_kernel(name="ok", input_names=["inp"], output_names=["out"], source=EXP_BODY)
    with pytest.raises(ValueError, match="1 inputs named, 2 given"):
        ok(inputs=[np.zeros(4), np.zeros(4)], grid=(4, 1, 1), threadgroup=(4, 1, 1), output_shapes=[(4,)],
           output_dtypes=[bronze.float32], template=[("T", bronze.float32)])
    with pytest.raises(ValueError, match="grid must be 3 positive ints"):
        ok(inputs=[np.zeros(4, np.float32)], grid=(4, 0, 1), threadgroup=(4, 1, 1), output_shapes=[(4,)],
           output_dtypes=[bronze.float32], template=[("T", bronze.float32)])
    with pytest.raises(TypeError, match="Metal has no float64"):
        ok(inputs=[np.zeros(4, np.float32)], grid=(4, 1, 1), threadgroup=(4, 1, 1), output_shapes=[(4,)],
           output_dtypes=[np.float64], template=[("T", bronze.float32)])
    with pytest.raises(ValueError, match="identifier"):
        bronze.metal_kernel(name="a b", input_names=[], output_names=[], source="")
