"""Apple .metallib files read through LLVM (src/air): the container, each
function's reflection from its AIR metadata, `bronze metallib-info`.
The libraries are made here (air_library.py): AIR written in the style of
Apple's compiler's output, assembled by the libLLVM bronze loads."""

import json
import os
import struct
import subprocess
import sys

import numpy as np
import pytest

import bronze
from bronze import _C, _metallib

import air_library as air

pytestmark = pytest.mark.skipif(air.LLVM is None, reason="no libLLVM 17 or newer (apt-get install libllvm19)")


@pytest.fixture(scope="module")
def library():
    return air.pack([("axpby_float", air.assemble(air.AXPBY)), ("row_sum_float", air.assemble(air.ROW_SUM))])


def by_name(info):
    return {f["name"]: f for f in info["functions"]}


def test_the_container_and_each_kernels_reflection(library):
    info = _metallib.read_info(library)
    assert info["version"] == "2.7" and info["platform"] == "macOS 14.0"
    fns = by_name(info)
    assert list(fns) == ["axpby_float", "row_sum_float"]
    axpby = fns["axpby_float"]
    assert (axpby["type"], axpby["air_version"], axpby["metal_version"]) == ("kernel", "2.6", "3.1")
    assert [(p["name"], p["kind"], p["type"]) for p in axpby["params"]] == [
        ("x", "buffer", "float"), ("y", "buffer", "float"), ("ab", "scalar", "float2"),
        ("i", "attribute", "uint")]
    x, y, ab, i = axpby["params"]
    assert (x["read_only"], y["read_only"], ab["read_only"]) == (True, False, True)
    assert (x["by_value"], ab["by_value"], ab["size"], ab["address_space"]) == (False, True, 8, 2)
    assert i["attribute"] == "thread_position_in_grid"
    assert not axpby["cooperative"] and axpby["intrinsics"] == {} and axpby["threadgroup_bytes"] == 0
    assert _metallib.signature(axpby) == (
        "kernel void axpby_float(device const float* x [[buffer(0)]], device float* y [[buffer(1)]], "
        "constant float2& ab [[buffer(2)]], uint i [[thread_position_in_grid]])")


def test_bindings_follow_buffer_indices_and_function_constants_are_read(library):
    rows = by_name(_metallib.read_info(library))["row_sum_float"]
    # Declared out, in, bias at [[buffer(1)]], [[buffer(0)]], [[buffer(2)]]:
    # a call binds them in index order, as Metal's encoder does.
    out, inp, bias = rows["params"][:3]
    assert (inp["binding"], out["binding"], bias["binding"]) == (0, 1, 2)
    assert bias["function_constant"] == "has_bias" and "function_constant" not in out
    assert rows["function_constants"] == [{"name": "has_bias", "type": "bool", "index": 7, "required": True}]
    assert rows["intrinsics"] == {"air.simd_sum.f32": 1, "air.wg.barrier": 1}
    assert rows["cooperative"] and rows["threadgroup_bytes"] == 128
    assert [p["attribute"] for p in rows["params"][3:]] == [
        "thread_position_in_threadgroup", "thread_index_in_simdgroup", "simdgroup_index_in_threadgroup",
        "threadgroup_position_in_grid"]
    assert rows["params"][6]["type"] == "uint3"


def test_a_fat_file_is_read_through_its_metal_slice(library):
    fat = air.fat(b"\xcf\xfa\xed\xfe" + bytes(60), library)  # a non-Metal slice first
    assert by_name(_metallib.read_info(fat)).keys() == {"axpby_float", "row_sum_float"}
    assert [f["name"] for f in _metallib.read_info(fat, ["row_sum_float"])["functions"]] == ["row_sum_float"]


def test_a_subset_holds_only_the_named_kernels(library):
    # What real-kernels --subset writes: the named functions' bitcode as it was.
    part = _metallib.subset(library, ["row_sum_float"])
    assert [f["name"] for f in _metallib.read_info(part)["functions"]] == ["row_sum_float"]
    assert _C._metallib_bitcode(part, ["row_sum_float"]) == _C._metallib_bitcode(library, ["row_sum_float"])
    with pytest.raises(ValueError, match="no function named nothing_here"):
        _metallib.subset(library, ["row_sum_float", "nothing_here"])


@pytest.mark.parametrize("cut, match", [
    (lambda d: d[:20], "the file size at byte 16 runs past the end"),
    (lambda d: d[: len(d) - 100], "truncated"),
    (lambda d: d[:24] + (1 << 40).to_bytes(8, "little") + d[32:], "the function count at byte 1099511627776"),
    (lambda d: d[:88] + (10 ** 6).to_bytes(4, "little") + d[92:], "cannot fit its function list"),
    (lambda d: air.fat(b"\xcf\xfa\xed\xfe" + bytes(60)), "no Metal library"),
])
def test_a_malformed_container_is_a_clear_error(library, cut, match):
    with pytest.raises(ValueError, match=match):
        _metallib.read_info(cut(library))


def test_bitcode_llvm_rejects_is_that_functions_error_and_the_rest_is_read(library):
    data = bytearray(library)
    wrapper = data.index(b"\xde\xc0\x17\x0b")  # the first module's: cut its bitcode short
    size = int.from_bytes(data[wrapper + 12:wrapper + 16], "little")
    data[wrapper + 12:wrapper + 16] = (size // 2 & ~3).to_bytes(4, "little")
    fns = by_name(_metallib.read_info(bytes(data)))
    assert "LLVM cannot read its bitcode" in fns["axpby_float"]["error"]
    assert "error" not in fns["row_sum_float"]


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "bronze", *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ})


def test_metallib_info_reports_the_library_and_its_intrinsics(library, tmp_path):
    path = tmp_path / "kernels.metallib"
    path.write_bytes(library)
    r = run_cli("metallib-info", str(path))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith(f"{path}: Metal library 2.7 for macOS 14.0, 2 functions (2 kernels), AIR 2.6, Metal 3.1")
    assert lines[1:] == ["CPU: 2 of 2 kernels have all they need to run",
                         "CUDA: 2 of 2 kernels have all they need to run",
                         "2 air.* intrinsics, by the number of functions calling each:",
                         "        1  air.simd_sum.f32", "        1  air.wg.barrier"]
    out = tmp_path / "info.json"
    r = run_cli("metallib-info", str(path), "--kernel", "row_sum_float", "--json", str(out))
    assert r.returncode == 0, r.stderr
    assert ("kernel void row_sum_float(device float* out [[buffer(1)]], device const float* in [[buffer(0)]], "
            "device const float* bias [[buffer(2)]] (if has_bias), uint lid [[thread_position_in_threadgroup]]") in r.stdout
    assert "  constant bool has_bias [[function_constant(7)]]" in r.stdout
    assert "128 bytes of threadgroup variables" in r.stdout
    assert "  CPU: has all it needs" in r.stdout
    assert [f["name"] for f in json.loads(out.read_text())["functions"]] == ["row_sum_float"]


def test_metallib_info_refuses_what_it_cannot_read(library, tmp_path):
    path = tmp_path / "k.metallib"
    path.write_bytes(library)
    r = run_cli("metallib-info", str(path), "--kernel", "nope")
    assert r.returncode == 2 and "has no function nope" in r.stderr
    path.write_bytes(b"BRZL" + bytes(100))
    r = run_cli("metallib-info", str(path))
    assert r.returncode == 2 and "not a .metallib" in r.stderr
    r = run_cli("metallib-info", str(tmp_path / "absent.metallib"))
    assert r.returncode == 2 and "no such file" in r.stderr
    path.write_bytes(library)
    r = run_cli("metallib-info", str(path), "--json", str(tmp_path / "no" / "such" / "dir.json"))
    assert r.returncode == 2 and "cannot write" in r.stderr and "Traceback" not in r.stderr


def test_without_llvm_the_error_says_what_to_install(library):
    r = subprocess.run([sys.executable, "-c", "import bronze, sys; from bronze import _metallib\n"
                        "try:\n  _metallib.read_info(sys.stdin.buffer.read())\nexcept bronze.NotSupportedError as e:\n"
                        "  print(e)"], input=library, capture_output=True, timeout=120,
                       env={**os.environ, "BRONZE_LLVM_LIBRARY": "libLLVM-none.so"})
    out = r.stdout.decode()
    assert "reading an Apple .metallib needs LLVM: no libLLVM 17 or newer found" in out
    assert "libLLVM-none.so" in out


def test_bronze_info_names_the_llvm_it_loads():
    r = run_cli("info")
    assert r.returncode == 0, r.stderr
    assert "  LLVM (Apple .metallib files): LLVM " in r.stdout


def test_an_apple_kernel_runs_on_the_cpu(library, tmp_path):
    lib = bronze.load_metallib(library)
    assert lib.kernel_names == ["axpby_float", "row_sum_float"] and "axpby_float" in dir(lib)
    x = np.arange(1000, dtype=np.float32)
    y = bronze.ones(1000)
    lib.axpby_float(bronze.tensor(x), y, np.array([2.0, 3.0], np.float32).tobytes(), threads=1000)
    np.testing.assert_array_equal(y.numpy(), 2 * x + 3)
    lib.axpby_float(bronze.tensor(x), y, [1.0, -1.0], threads=1000)  # a constant float2&, from numbers
    np.testing.assert_array_equal(y.numpy(), x - (2 * x + 3))
    # The same from a path, its reflection as compiled libraries give it.
    path = tmp_path / "k.metallib"
    path.write_bytes(library)
    k = bronze.load_metallib(str(path)).axpby_float
    assert [(p["name"], p["type"]) for p in k.params] == [("x", "float"), ("y", "float"), ("ab", "float2"),
                                                           ("i", "uint")]


def test_every_position_of_a_kernel_run_a_row_at_a_time():
    # A kernel without barriers or collectives runs a row of a group in one
    # loop of its code (backends::row_thunk_ir): each thread's positions as
    # the grid gives them, with partial groups at the grid's end and lanes
    # that wrap inside a row (48 x 2 groups: 96 threads, 3 simdgroups).
    k = bronze.load_metallib(air.pack([("positions", air.assemble(air.POSITIONS))])).positions
    W, H, GX, GY = 101, 5, 48, 2
    out = bronze.zeros(W * H * 8, dtype=bronze.uint32)
    k(out, W, threads=(W, H), group_size=(GX, GY))
    got = out.numpy().reshape(H, W, 8)
    y, x = np.mgrid[0:H, 0:W]
    lx, ly = x % GX, y % GY
    width = np.minimum(GX, W - x // GX * GX)  # a partial group's actual width
    t = lx + width * ly
    want = np.stack([x, y, lx, ly, t, t % 32, t // 32, (x // GX) * 1000 + y // GY], axis=-1)
    np.testing.assert_array_equal(got, want)


def test_the_kernels_declared_group_limit_is_its_limit(library):
    # [[max_total_threads_per_threadgroup(64)]] as Apple's compiler writes
    # it into the kernel's metadata; a kernel without it keeps the device's.
    bounded = air.AXPBY.replace("!0 = !{ptr @axpby_float, !1, !2}",
                                "!0 = !{ptr @axpby_float, !1, !2, !11}\n!11 = !{!\"air.max_work_group_size\", i32 64}")
    blob = air.pack([("axpby_float", air.assemble(bounded))])
    assert _metallib.read_info(blob)["functions"][0]["max_threads_per_threadgroup"] == 64
    assert "max_threads_per_threadgroup" not in _metallib.read_info(library)["functions"][0]
    k = bronze.load_metallib(blob).axpby_float
    assert k.max_threads_per_threadgroup == 64
    assert bronze.load_metallib(library).axpby_float.max_threads_per_threadgroup > 64
    x, y = np.arange(256, dtype=np.float32), bronze.zeros(256)
    k(bronze.tensor(x), y, [2.0, 0.0], threads=256)  # the group the launch picks is within the limit
    np.testing.assert_array_equal(y.numpy(), 2 * x)
    with pytest.raises(ValueError, match="over the kernel's limit of 64 threads per threadgroup"):
        k(bronze.tensor(x), y, [2.0, 0.0], threads=256, group_size=128)


@pytest.mark.parametrize("has_bias", [False, True])
def test_a_cooperative_kernel_specialized_by_its_function_constant(library, has_bias):
    # Barriers, simd_sum and a threadgroup array over 4 groups of 1024
    # threads; the bias buffer is an argument only while has_bias is true.
    k = bronze.load_metallib(library).specialize("row_sum_float", {"has_bias": has_bias})
    x = bronze.tensor(np.random.default_rng(0).random((4, 1024), dtype=np.float32))
    out = bronze.zeros(4)
    args = (x, out, bronze.zeros(4)) if has_bias else (x, out)
    k(*args, threads=4 * 1024, group_size=1024)
    np.testing.assert_allclose(out.numpy(), x.numpy()[:, :32].sum(1), rtol=1e-5)
    with pytest.raises(TypeError, match=f"takes {len(args)} arguments"):
        k(x, threads=4 * 1024, group_size=1024)


RUN_ROW_SUM = """
import sys, numpy as np, bronze
k = bronze.load_metallib(sys.stdin.buffer.read()).specialize("row_sum_float", {"has_bias": False})
x = bronze.tensor(np.arange(2048, dtype=np.float32).reshape(2, 1024))
out = bronze.zeros(2)
k(x, out, threads=2048, group_size=1024)
print(out.numpy().tolist())
"""


def test_a_built_kernel_is_taken_from_the_compile_cache_by_its_bitcodes_hash(library, tmp_path):
    # The first process lowers it with LLVM and builds it; the next loads
    # it from the cache, its reflection included, without LLVM's work.
    def run():
        r = subprocess.run([sys.executable, "-c", RUN_ROW_SUM], input=library, capture_output=True, timeout=300,
                           env={**os.environ, "BRONZE_CACHE_DIR": str(tmp_path / "cache"), "BRONZE_LOG": "info"})
        assert r.returncode == 0, r.stderr
        return r.stdout.decode().strip(), r.stderr.decode()
    want = str([float(np.arange(32).sum()), float(np.arange(1024, 1056).sum())])
    out, log = run()
    assert out == want and "lower kernel 'row_sum_float' of an Apple .metallib with LLVM: done in" in log, log
    out, log = run()
    assert out == want and "with LLVM" not in log, log


def test_float_to_integer_conversions_saturate_as_apple_gpus_convert():
    lib = bronze.load_metallib(air.pack([("to_int", air.assemble(air.TO_INT))]))
    x = np.array([1.7, -1.7, 3e9, -3e9, np.nan, np.inf, -np.inf, 42.0], np.float32)
    s, u = bronze.zeros(8, dtype=bronze.int32), bronze.zeros(8, dtype=bronze.uint32)
    lib.to_int(bronze.tensor(x), s, u, threads=8)
    assert s.numpy().tolist() == [1, -1, 2**31 - 1, -2**31, 0, 2**31 - 1, -2**31, 42]
    assert u.numpy().tolist() == [1, 0, 3000000000, 0, 0, 2**32 - 1, 0, 42]


def test_a_required_function_constant_without_a_value_is_refused(library):
    lib = bronze.load_metallib(library)
    with pytest.raises(ValueError, match=r"function constant 'has_bias' \(bool \[\[function_constant\(7\)\]\]\) "
                                         r"of kernel 'row_sum_float' needs a value"):
        lib.row_sum_float(bronze.zeros(1024), bronze.zeros(1), bronze.zeros(1), threads=1024)
    with pytest.raises(ValueError, match="'2' is not a bool"):
        lib.specialize("row_sum_float", {"has_bias": 2}).warmup()
    x = bronze.ones(2)  # the library still serves
    lib.axpby_float(bronze.ones(2), x, np.array([1.0, 1.0], np.float32).tobytes(), threads=2)
    assert x.numpy().tolist() == [2.0, 2.0]


UNKNOWN_INTRINSIC = air.AXPBY.replace("%r = fadd float %ax, %by", "%r = call float @air.gamma.f32(float %ax)").replace(
    "define void @axpby_float", "declare float @air.gamma.f32(float)\n\ndefine void @axpby_float")


def test_an_intrinsic_the_runtime_lacks_is_named_at_the_first_call(library):
    lib = bronze.load_metallib(air.pack([("axpby_float", air.assemble(UNKNOWN_INTRINSIC))]))
    info = _metallib.read_info(air.pack([("axpby_float", air.assemble(UNKNOWN_INTRINSIC))]))
    assert info["functions"][0]["cpu"] == "air.gamma.f32: does not implement yet"
    with pytest.raises(bronze.NotSupportedError, match="kernel 'axpby_float' calls air.gamma.f32, which bronze's "
                                                       "runtime does not implement yet"):
        lib.axpby_float(bronze.ones(2), bronze.ones(2), bytes(8), threads=2)
    assert _metallib.read_info(library)["functions"][1]["cpu"] is True


def test_ir_llvm_cannot_build_ends_bronze_air_not_the_caller(library):
    # An intrinsic of another target verifies, then stops LLVM's code
    # generator ("Cannot select"): a fatal error, which used to abort Python.
    # Without bronze-air beside the extension it would abort this one.
    assert os.access(os.path.join(os.path.dirname(_C.__file__), "bronze-air"), os.X_OK)
    on_cuda = bronze.current_device().type == "cuda"
    name, ty = ("llvm.x86.rdtsc", "i64") if on_cuda else ("llvm.nvvm.read.ptx.sreg.tid.x", "i32")
    ir = air.AXPBY.replace("  %r = fadd float %ax, %by\n",
                           f"  %t = call {ty} @{name}()\n  %tf = uitofp {ty} %t to float\n"
                           "  %r0 = fadd float %ax, %by\n  %r = fadd float %r0, %tf\n")
    ir = ir.replace("!air.kernel = ", f"declare {ty} @{name}()\n\n!air.kernel = ", 1)
    lib = bronze.load_metallib(air.pack([("axpby_float", air.assemble(ir))]))
    with pytest.raises(bronze.NotSupportedError, match=rf"kernel 'axpby_float' cannot be built for .*: LLVM stopped "
                                                       rf"on it: .*{name}"):
        lib.axpby_float(bronze.ones(2), bronze.ones(2), bytes(8), threads=2)
    y = bronze.ones(4)  # bronze goes on
    bronze.load_metallib(library).axpby_float(bronze.ones(4), y, [1.0, 1.0], threads=4)
    np.testing.assert_array_equal(y.numpy(), [2, 2, 2, 2])


def test_load_metallib_refuses_rebuild_for_apple_files(library):
    with pytest.raises(ValueError, match="carries no source"):
        bronze.load_metallib(library, rebuild=True)


def _apple_layout():
    """Per lane, the (row, column) of its two thread_elements() in an 8 x 8
    simdgroup matrix on Apple's GPUs: elements (r, c) and (r, c + 1)."""
    lanes = np.arange(32)
    rows = (lanes >> 2 & 4) | (lanes >> 1 & 3)
    cols = (lanes >> 1 & 4) | (lanes << 1 & 2)
    return np.stack([rows, rows], 1), np.stack([cols, cols + 1], 1)


def test_simdgroup_matrices_multiply_in_apples_thread_elements_layout():
    # MLX's steel GEMM holds each lane's two elements in a <64 x float>
    # (elements 0 and 1) and multiplies the 32 lanes' fragments.
    lib = bronze.load_metallib(air.pack([("fragments_mma", air.assemble(air.MATRIX))]))
    rng = np.random.default_rng(3)
    a, b, c = (rng.standard_normal((8, 8)).astype(np.float32) for _ in range(3))
    rows, cols = _apple_layout()
    d = bronze.zeros(64)
    lib.fragments_mma(*(bronze.tensor(m[rows, cols].ravel()) for m in (a, b, c)), d, threads=32, group_size=32)
    got = np.empty((8, 8), np.float32)
    got[rows, cols] = d.numpy().reshape(32, 2)
    np.testing.assert_allclose(got, a.astype(np.float64) @ b + c, rtol=1e-5, atol=1e-5)


def test_simdgroup_matrix_load_store_and_a_mixed_multiply():
    lib = bronze.load_metallib(air.pack([("load_mma_store", air.assemble(air.MATRIX_LOAD_STORE))]))
    rng = np.random.default_rng(4)
    a = rng.standard_normal((8, 12)).astype(np.float32)
    b = rng.standard_normal((8, 16)).astype(np.float16)
    d = bronze.zeros(64)
    lib.load_mma_store(bronze.tensor(a), bronze.tensor(b), d, threads=32, group_size=32)
    want = a[:, 4:].astype(np.float64) @ b[:, :8].T.astype(np.float64) + 0.5
    np.testing.assert_allclose(d.numpy().reshape(8, 8), want, rtol=1e-5, atol=1e-5)


def test_vector_half_and_bfloat_intrinsics_atomics_and_uniformity():
    lib = bronze.load_metallib(air.pack([("lanes", air.assemble(air.LANES))]))
    lanes = np.arange(32)
    wide = (lanes.astype(np.uint64) << np.uint64(40)) + lanes.astype(np.uint64) * np.uint64(3)
    w = bronze.tensor(wide)
    h = bronze.tensor((lanes % 4).astype(np.float16))
    v4 = np.stack([lanes, np.ones(32), np.zeros(32), 2 * np.ones(32)], 1).astype(np.float32)
    f, bf, acc = bronze.zeros(32), bronze.zeros(32, dtype=bronze.bfloat16), bronze.zeros(1)
    lib.lanes(w, h, bronze.tensor(v4), f, bf, acc, 3, threads=32, group_size=32)  # n, a constant uint&, as a number
    assert w.numpy()[:31].tolist() == wide[1:].tolist()  # a 64-bit value shuffled as <2 x i32>
    assert h.numpy().tolist() == [48.0] * 32  # simd_sum in half
    # dot(v, (1, 2, 3, 4)) = lane + 10, moved up 2 lanes; the first two take the fill, the simdgroup's width.
    assert f.numpy().tolist() == [32.0, 32.0] + (lanes[:30] + 10).astype(np.float32).tolist()
    assert bf.to(bronze.float32).numpy().tolist() == (-lanes).astype(np.float32).tolist()
    assert acc.numpy().tolist() == [96.0]  # 32 atomic adds of 3


def test_function_constants_by_index_and_an_unknown_one_refused(library):
    lib = bronze.load_metallib(library)
    x = np.random.default_rng(5).random((2, 1024), dtype=np.float32)
    out = bronze.zeros(2)
    lib.specialize("row_sum_float", {7: False})(bronze.tensor(x), out, threads=2 * 1024, group_size=1024)
    np.testing.assert_allclose(out.numpy(), x[:, :32].sum(1), rtol=1e-5)
    with pytest.raises(ValueError, match=r"kernel 'row_sum_float' has no function constant 'has_bais' "
                                         r"\(it has has_bias \(7\)\)"):
        lib.specialize("row_sum_float", {"has_bais": True}).warmup()


def _mlx_metallib():
    """Apple's compiled MLX kernels: $BRONZE_MLX_METALLIB, else where
    scripts/fetch-mlx-metallib caches it."""
    path = os.environ.get("BRONZE_MLX_METALLIB") or os.path.join(
        os.environ.get("BRONZE_CORPUS_CACHE") or os.path.join(
            os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "bronze-corpus"),
        "mlx-metal-0.32.4", "mlx.metallib")
    return path if os.path.isfile(path) else None


needs_mlx = pytest.mark.skipif(_mlx_metallib() is None, reason="no mlx.metallib (scripts/fetch-mlx-metallib)")


@pytest.fixture(scope="module")
def mlx():
    return bronze.load_metallib(_mlx_metallib())


@needs_mlx
def test_mlx_metallib_loads_every_kernel_by_name(mlx):
    names = mlx.kernel_names
    assert len(names) == 17248 and len(set(names)) == len(names)
    assert {"vv_Addfloat32", "rmsfloat32", "block_softmax_float32"} <= set(names)


@needs_mlx
def test_mlx_elementwise_kernels_from_apples_binary_match_numpy(mlx):
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal(1000).astype(np.float32), rng.standard_normal(1000).astype(np.float32)
    out = bronze.zeros(1000)
    A, B = bronze.tensor(a), bronze.tensor(b)
    mlx.vv_Addfloat32(A, B, out, 1000, threads=1000)
    np.testing.assert_array_equal(out.numpy(), a + b)
    mlx.v_Expfloat32float32(A, out, 1000, threads=1000)
    np.testing.assert_allclose(out.numpy(), np.exp(a), rtol=2e-7)
    mlx.v_Sigmoidfloat32float32(A, out, 1000, threads=1000)
    np.testing.assert_allclose(out.numpy(), 1 / (1 + np.exp(-a)), rtol=1e-6, atol=1e-7)
    half = bronze.zeros(1000, dtype=bronze.float16)
    mlx.v_Expfloat16float16(bronze.tensor(a.astype(np.float16)), half, 1000, threads=1000)
    np.testing.assert_allclose(half.numpy().astype(np.float32), np.exp(a.astype(np.float16).astype(np.float32)),
                               rtol=1e-3)


@needs_mlx
def test_mlx_row_kernels_from_apples_binary_match_numpy(mlx):
    # As MLX dispatches them: a threadgroup per row, N_READS = 4 per thread.
    rng = np.random.default_rng(2)
    rows, n = 8, 4096
    x = rng.standard_normal((rows, n)).astype(np.float32)
    w = rng.standard_normal(n).astype(np.float32)
    out = bronze.zeros(rows, n)
    X = bronze.tensor(x)
    mlx.rmsfloat32(X, bronze.tensor(w), out, 1e-5, n, 1, threads=rows * 1024, group_size=1024)  # constant T& as numbers
    ref = x / np.sqrt((x * x).mean(1, keepdims=True) + 1e-5) * w
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5, atol=1e-5)
    mlx.block_softmax_float32(X, out, n, threads=rows * 1024, group_size=1024)
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(out.numpy(), e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-8)


@needs_mlx
@pytest.mark.parametrize("trans", ["nn", "tn"])
def test_mlx_steel_gemm_from_apples_binary_matches_numpy(mlx, trans):
    # Simdgroup matrices as Apple's compiler passes them; MLX's dispatch:
    # 32 x 32 tiles, 2 x 2 simdgroups each, has_batch/use_out_source/do_axpby
    # off, align_M/N off (partial tiles), align_K on.
    M, N, K = 70, 40, 64
    k = mlx.specialize(f"steel_gemm_fused_{trans}_float32_float32_bm32_bn32_bk16_wm2_wn2",
                       {10: False, 100: False, 110: False, 200: False, 201: False, 202: True})
    rng = np.random.default_rng(12)
    a, b = rng.standard_normal((M, K)).astype(np.float32), rng.standard_normal((K, N)).astype(np.float32)
    tn, tm = -(-N // 32), -(-M // 32)
    # mlx::steel::GEMMParams: M N K lda ldb ldd tiles_n tiles_m, three batch strides, swizzle_log,
    # gemm_k_iterations_aligned, batch_ndim.
    params = struct.pack("<8i3q3i4x", M, N, K, M if trans[0] == "t" else K, N, N, tn, tm, M * K, K * N, M * N, 0,
                         K // 16, 1)
    d = bronze.zeros(M, N)
    k(bronze.tensor(np.ascontiguousarray(a.T) if trans[0] == "t" else a), bronze.tensor(b), d, params,
      threads=(tn * 32, tm * 2, 2), group_size=(32, 2, 2))
    np.testing.assert_allclose(d.numpy(), a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)


@needs_mlx
def test_mlx_metallib_coverage_is_reported_per_backend(tmp_path):
    r = run_cli("metallib-info", _mlx_metallib())
    assert r.returncode == 0, r.stderr
    cpu = next(line for line in r.stdout.splitlines() if line.startswith("CPU: "))
    ok = int(cpu.split()[1])
    assert ok == 17248, cpu  # every kernel of MLX 0.32.4 (12,463 before the simdgroup matrix and vectors)
