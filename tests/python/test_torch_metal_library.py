"""bronze's own port of what PyTorch's TestMetalLibrary (test/test_mps.py)
checks of torch.mps.compile_shader: kernels called like functions, 1-D to
3-D grids, scalar and tensor arguments, arg_casts, errors, argument buffers,
and kernels built on torch's own Metal headers (<c10/metal/...>: random
numbers, simdgroup reductions, atomics, TORCH_REPORT_ERROR with
error_buf_idx=). Written for bronze, not copied; the tests torch runs only
on a Mac (Metal capture, Apple .metallib files, kernels read from a PyTorch
checkout) are not ported.

Runs on the default device (the CPU, or CUDA under BRONZE_DEVICE=cuda in
gpu-check). Tests that include <c10/metal/...> skip when torch is not
installed (its wheels ship those headers; bronze ships no PyTorch code)."""
import os
import re

import numpy as np
import pytest

import bronze

needs_torch = pytest.mark.skipif(not bronze._torch_include_dir(),
                                 reason="needs torch's Metal headers (pip install torch)")

# torch dtype -> (bronze dtype, Metal type), as torch's inductor names them.
METAL_TYPES = {
    "float32": "float",
    "float16": "half",
    "bfloat16": "bfloat",
    "int32": "int",
    "int64": "long",
}


def host(t):
    """A tensor's values as float64 NumPy (bfloat16 through float32)."""
    if t.dtype in (bronze.bfloat16,):
        t = t.to("float32")
    return t.numpy().astype(np.float64)


def test_arange_into_half():
    x = bronze.zeros(12, dtype="float16")
    lib = bronze.compile_shader("""
        kernel void arange(device half* x, uint idx [[thread_position_in_grid]]) {
          x[idx] = idx;
        }""")
    lib.arange(x)
    assert host(x).tolist() == list(range(12))


def test_grids_of_one_two_and_three_dimensions():
    n = 12
    x, y, z = bronze.empty(n), bronze.empty(n), bronze.empty(n)
    lib = bronze.compile_shader("""
        kernel void arange_x(device float* o, uint3 p [[thread_position_in_grid]]) { o[p.x + p.y + p.z] = p.x; }
        kernel void arange_y(device float* o, uint3 p [[thread_position_in_grid]]) { o[p.x + p.y + p.z] = p.y; }
        kernel void arange_z(device float* o, uint3 p [[thread_position_in_grid]]) { o[p.x + p.y + p.z] = p.z; }
        """)
    assert set(dir(lib)) == {"arange_x", "arange_y", "arange_z"}  # the kernels, and only them
    lib.arange_x(x)
    lib.arange_y(y, threads=(1, n))
    lib.arange_z(z, threads=(1, 1, n))
    expected = list(range(n))
    assert x.numpy().tolist() == expected
    assert y.numpy().tolist() == expected
    assert z.numpy().tolist() == expected


ARANGE_ARGS = """
    kernel void arange(device float* x, constant float& start, constant float& step,
                       uint idx [[thread_position_in_grid]]) {
      x[idx] = start + idx * step;
    }"""


@pytest.mark.parametrize("step", ["number", "float32 tensor", "float64 tensor"])
def test_scalar_arguments_from_numbers_and_zero_dim_tensors(step):
    # A 0-d tensor is a value of the parameter's type, as torch binds a CPU
    # scalar tensor (a float64 one narrowed to float).
    value = {"number": 0.5,
             "float32 tensor": bronze.tensor(0.5),
             "float64 tensor": bronze.tensor(0.5, dtype="float64")}[step]
    x = bronze.zeros(12)
    bronze.compile_shader(ARANGE_ARGS).arange(x, 3.14, value)
    np.testing.assert_allclose(x.numpy(), np.arange(3.14, 8.66, 0.5, dtype=np.float32), rtol=1e-6)


def test_arg_casts_narrow_values_to_half():
    x, y = bronze.zeros(12, dtype="float16"), bronze.zeros(12, dtype="float16")
    lib = bronze.compile_shader("""
        kernel void arange_all_half(device half* x, constant half2& start_step,
                                    uint idx [[thread_position_in_grid]]) {
          x[idx] = start_step.x + idx * start_step.y;
        }
        kernel void arange_half_float(device half* x, constant half& start, constant float& step,
                                      uint idx [[thread_position_in_grid]]) {
          x[idx] = start + idx * step;
        }""")
    lib.arange_all_half(x, [3.14, 0.5], arg_casts="fp16")
    lib.arange_half_float(y, 3.14, 0.5, arg_casts={1: "fp16"})
    expected = np.arange(3.14, 8.66, 0.5).astype(np.float16)
    np.testing.assert_allclose(host(x), expected, rtol=1e-3)
    assert host(x).tolist() == host(y).tolist()


def test_errors_are_torchs_exception_types():
    with pytest.raises(SyntaxError):
        bronze.compile_shader("Syntax error")
    x = bronze.zeros(3, dtype="float16")
    lib = bronze.compile_shader("kernel void full(device half* x) { x[0] = 1.0; }")
    with pytest.raises(RuntimeError):
        lib.non_existing(x)
    with pytest.raises(RuntimeError):  # no tensor where the buffer goes
        lib.full(12)
    limit = lib.full.max_threads_per_threadgroup
    with pytest.raises(ValueError):
        lib.full(x, group_size=limit + 5)
    with pytest.raises(ValueError):
        lib.full(x, threads=(3, limit), group_size=(3, limit))


def philox_normals(seed, n):
    """c10/metal/random.h's randn(seed, i) for i < n, in NumPy (written
    here from the algorithm: nine Philox rounds over the counter (0, 0,
    index), then Box-Muller of the first two words)."""
    mask = np.uint64(0xFFFFFFFF)
    index = np.arange(n, dtype=np.uint64)
    c = [np.zeros(n, np.uint64), np.zeros(n, np.uint64), index >> np.uint64(32), index & mask]
    k = [np.uint64(seed >> 32), np.uint64(seed & 0xFFFFFFFF)]
    for _ in range(9):
        p0, p1 = np.uint64(0xD2511F53) * c[0], np.uint64(0xCD9E8D57) * c[2]
        c = [(p1 & mask) ^ c[1] ^ k[0], p1 >> np.uint64(32), (p0 & mask) ^ c[3] ^ k[1], p0 >> np.uint64(32)]
        k = [(k[0] + np.uint64(0x9E3779B9)) & mask, (k[1] + np.uint64(0xBB67AE85)) & mask]
    u1, u2 = (1.0 - (w & np.uint64(0x7FFFFFFF)).astype(np.float64) * 4.6566127342e-10 for w in c[:2])
    return np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)


@needs_torch
def test_c10_random_normals_from_a_seed_tensor():
    # constant long2& given an int64 tensor: its bytes are the value; the
    # normals are the header's algorithm's, value for value.
    header = open(os.path.join(bronze._torch_include_dir(), "c10", "metal", "random.h")).read()
    body = re.search(r"multiple_rounds\([^)]*\)\s*\{(.*?)\n\}", header, re.S)
    if body and "return" not in body.group(1):
        pytest.skip("this torch's c10/metal/random.h: philox4::multiple_rounds falls off its end without a return "
                    "(undefined behaviour: what randn gives depends on the compiler, a Mac's included)")
    lib = bronze.compile_shader("""
        #include <c10/metal/random.h>
        kernel void randn(device float* out, constant long2& seed_offset,
                          uint idx [[thread_position_in_grid]]) {
          out[idx] = c10::metal::randn(seed_offset.x, seed_offset.y + idx);
        }""")
    out = bronze.empty(100_000)
    lib.randn(out, bronze.tensor([42, 0], dtype="int64"))
    np.testing.assert_allclose(out.numpy(), philox_normals(42, 100_000), rtol=1e-3, atol=1e-3)


@needs_torch
def test_c10_special_math_header_compiles():
    assert bronze.compile_shader("#include <c10/metal/special_math.h>") is not None


def reduction_input(dtype, n=28, seed=0):
    """n values every dtype holds exactly (multiples of 1/8 in [-9, 9] for
    floats), so each sum below is exact and compared with ==."""
    rng = np.random.default_rng(seed)
    if dtype.startswith("int"):
        return rng.integers(-9, 10, n).astype(np.float64)
    return rng.integers(-72, 73, n) / 8.0


def rounded(value, dtype):
    """value as the dtype stores it (bfloat16: round to nearest even)."""
    if dtype == "bfloat16":
        return host(bronze.tensor([value], dtype="float32").to("bfloat16"))[0]
    return float(np.array([value]).astype({"float32": np.float32, "float16": np.float16,
                                           "int32": np.int32, "int64": np.int64}[dtype])[0])


def reduction_lib(mtype):
    return bronze.compile_shader(f"""
        #include <c10/metal/reduction_utils.h>
        kernel void do_sum(device {mtype}* out, constant {mtype}* inp,
                           uint idx [[thread_position_in_grid]]) {{
          out[idx] = c10::metal::simd_sum(inp[idx]);
        }}
        kernel void do_max(device {mtype}* out0, device int* out1, constant {mtype}* inp,
                           uint idx [[thread_position_in_grid]]) {{
          auto rc = c10::metal::simd_argmax(inp[idx]);
          out0[idx] = rc.first;
          out1[idx] = rc.second;
        }}""")


@needs_torch
@pytest.mark.parametrize("dtype", list(METAL_TYPES))
def test_c10_simd_sum_and_argmax(dtype):
    lib = reduction_lib(METAL_TYPES[dtype])
    values = reduction_input(dtype)
    x = bronze.tensor(values.tolist(), dtype="float64").to(dtype)
    y, z0 = bronze.empty(28, dtype=dtype), bronze.empty(28, dtype=dtype)
    z1 = bronze.empty(28, dtype="int32")
    lib.do_sum(y, x)
    lib.do_max(z0, z1, x)
    # Every lane of the (partial) simdgroup gets the whole sum; bfloat is
    # summed in float and rounded once, as Apple's c10 header does.
    assert host(y).tolist() == [rounded(values.sum(), dtype)] * 28
    assert host(z0).tolist() == [values.max()] * 28
    assert z1.numpy().tolist() == [int(values.argmax())] * 28


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_c10_simd_argmax_propagates_nan(dtype):
    lib = reduction_lib(METAL_TYPES[dtype])
    values = reduction_input(dtype)
    values[25] = np.nan
    x = bronze.tensor(values.tolist(), dtype="float64").to(dtype)
    z0, z1 = bronze.empty(28, dtype=dtype), bronze.empty(28, dtype="int32")
    lib.do_max(z0, z1, x)
    assert np.isnan(host(z0)).all()
    assert z1.numpy().tolist() == [25] * 28


COMPLEX_LIB = """
    #include <c10/metal/reduction_utils.h>
    kernel void do_sum(device float2* out, constant float2* inp, uint idx [[thread_position_in_grid]]) {
      out[idx] = c10::metal::simd_sum(inp[idx]);
    }
    kernel void do_prod(device float2* out, constant float2* inp, uint idx [[thread_position_in_grid]]) {
      out[idx] = c10::metal::simd_prod(inp[idx]);
    }"""


def complex_tensor(values):
    """complex64 values as interleaved float32 (bronze has no complex dtype)."""
    c = np.asarray(values, dtype=np.complex64)
    return bronze.tensor(c.view(np.float32).tolist(), dtype="float32")


def complex_values(t):
    return t.numpy().view(np.complex64)


@needs_torch
def test_c10_complex_simd_sum_and_prod():
    lib = bronze.compile_shader(COMPLEX_LIB)
    rng = np.random.default_rng(1)
    values = (rng.integers(-16, 17, 28) + 1j * rng.integers(-16, 17, 28)) / 4.0
    x = complex_tensor(values)
    y = bronze.empty(56)
    lib.do_sum(y, x, threads=28)
    assert complex_values(y).tolist() == [complex(values.sum())] * 28

    p = np.ones(32, dtype=np.complex64)
    p[:4] = [1 + 2j, 3 - 1j, -1 + 1j, 2]
    x = complex_tensor(p)
    y = bronze.empty(64)
    lib.do_prod(y, x, threads=32, group_size=32)
    header = open(os.path.join(bronze._torch_include_dir(), "c10", "metal", "reduction_utils.h")).read()
    if "simd_prod(float2" in header:
        # A complex shuffle-down reduction: lane 0 holds the whole product.
        assert complex_values(y)[0] == complex(np.prod(p.astype(np.complex128)))
    else:
        # Older torch (2.11): the generic simd_prod, Metal's simd_product of
        # each component, as a Mac computes it with that header.
        want = np.prod(p.real) + 1j * np.prod(p.imag)
        assert complex_values(y)[0] == complex(want)


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "float16", "int32", "bfloat16"])
def test_c10_atomic_add(dtype):
    # AtomicType<half>::type is an atomic_uint over pairs of halves: a half
    # tensor binds to it by its bytes, as torch.mps binds it.
    mtype = METAL_TYPES[dtype]
    lib = bronze.compile_shader(f"""
        #include <c10/metal/atomic.h>
        using namespace c10::metal;
        kernel void atomic_add(device AtomicType<{mtype}>::type* out, constant {mtype}* inc,
                               uint idx [[thread_position_in_grid]]) {{
          AtomicType<{mtype}>::atomic_add(out, idx & 1 ? 3 : 4, inc[idx]);
        }}""")
    x = bronze.arange(16).to(dtype)
    y = bronze.arange(16).to(dtype)
    with pytest.warns(RuntimeWarning) if dtype in ("float16", "bfloat16") else _no_warning():
        lib.atomic_add(x, y)
    got = host(x)
    assert got[3] == 3 + sum(range(1, 16, 2))  # 67
    assert got[4] == 4 + sum(range(0, 16, 2))  # 60


class _no_warning:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_argument_buffer_of_64_tensors():
    lib = bronze.compile_shader("""
        constant constexpr auto nbuffers = 64;
        struct Inputs {
          metal::array<device float *, nbuffers> args;
        };
        kernel void sum_all(device float* output, constant Inputs& inputs, uint idx [[thread_position_in_grid]]) {
          auto rc = inputs.args[0][idx];
          for (auto i = 1; i < nbuffers; ++i) rc += inputs.args[i][idx];
          output[idx] = rc;
        }""")
    rng = np.random.default_rng(2)
    rows = (rng.integers(0, 64, (64, 32)) / 64.0).astype(np.float32)
    inputs = [bronze.tensor(r.tolist()) for r in rows]
    output = bronze.empty(32)
    lib.sum_all(output, inputs)
    np.testing.assert_array_equal(output.numpy(), rows.sum(axis=0, dtype=np.float32))


def test_lambda_expressions_metal_3_2():
    lib = bronze.compile_shader("""
        kernel void lambda_test(device float* x, uint idx [[thread_position_in_grid]]) {
          auto f = [](float val) { return val * 2.0; };
          x[idx] = f(x[idx]);
        }""")
    x = bronze.tensor([1.0, 2.0, 3.0, 4.0])
    lib.lambda_test(x)
    assert x.numpy().tolist() == [2.0, 4.0, 6.0, 8.0]


ERROR_LIB = """
    #include <c10/metal/error.h>
    kernel void check_bounds(device float* x, constant int& limit,
                             device c10::metal::ErrorMessages* error_buf,
                             uint idx [[thread_position_in_grid]]) {
      if (idx >= limit) {
        TORCH_REPORT_ERROR(error_buf, "Index ", idx, " exceeds limit ", limit);
        x[idx] = -1.0;
      } else {
        x[idx] = idx;
      }
    }"""


@needs_torch
def test_error_buffer_raises_the_kernels_message_at_synchronize():
    lib = bronze.compile_shader(ERROR_LIB)
    x = bronze.zeros(10)
    lib.check_bounds(x, 10, error_buf_idx=2)  # the stream's error buffer is bound at slot 2
    bronze.synchronize()
    assert x.numpy().tolist() == list(range(10))

    y = bronze.zeros(10)
    lib.check_bounds(y, 5, error_buf_idx=2)
    with pytest.raises(RuntimeError, match=r"Index \d+ exceeds limit 5"):
        bronze.synchronize()
    assert y.numpy().tolist() == [0, 1, 2, 3, 4] + [-1] * 5
    # Reported once: the record is cleared when it is raised.
    lib.check_bounds(y, 10, error_buf_idx=2)
    bronze.synchronize()


@needs_torch
def test_error_buffer_index_must_name_a_buffer_parameter():
    lib = bronze.compile_shader(ERROR_LIB)
    x = bronze.zeros(10)
    with pytest.raises(ValueError, match="error_buf_idx"):
        lib.check_bounds(x, 10, error_buf_idx=1)  # `constant int& limit`
    with pytest.raises(ValueError, match="error_buf_idx"):
        lib.check_bounds(x, 10, error_buf_idx=7)  # no such slot
    with pytest.raises(TypeError):
        lib.check_bounds(x, 10, error_buf_idx="2")


@needs_torch
def test_c10_safe_mod():
    lib = bronze.compile_shader("""
        #include <c10/metal/utils.h>
        kernel void func(device int* out, uint idx [[thread_position_in_grid]]) {
          out[idx] = c10::metal::safe_mod((idx / 65536), 6);
        }""")
    out = bronze.empty(128, dtype="int32")
    lib.func(out)
    assert out.numpy().tolist() == [0] * 128
