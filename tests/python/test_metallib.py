"""Apple .metallib files read through LLVM (src/air): the container, each
function's reflection from its AIR metadata, `bronze metallib-info`.
The libraries are made here (air_library.py): AIR written in the style of
Apple's compiler's output, assembled by the libLLVM bronze loads."""

import json
import os
import subprocess
import sys

import pytest

import bronze
from bronze import _metallib

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
        ("x", "buffer", "float"), ("y", "buffer", "float"), ("ab", "buffer", "float2"),
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
    assert lines[1] == "2 air.* intrinsics, by the number of functions calling each:"
    assert lines[2:] == ["        1  air.simd_sum.f32", "        1  air.wg.barrier"]
    out = tmp_path / "info.json"
    r = run_cli("metallib-info", str(path), "--kernel", "row_sum_float", "--json", str(out))
    assert r.returncode == 0, r.stderr
    assert ("kernel void row_sum_float(device float* out [[buffer(1)]], device const float* in [[buffer(0)]], "
            "device const float* bias [[buffer(2)]] (if has_bias), uint lid [[thread_position_in_threadgroup]]") in r.stdout
    assert "  constant bool has_bias [[function_constant(7)]]" in r.stdout
    assert "128 bytes of threadgroup variables" in r.stdout
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


def test_load_metallib_says_it_reads_but_does_not_yet_run_apple_files(library):
    with pytest.raises(ValueError, match="bronze metallib-info FILE"):
        bronze.load_metallib(library)
