"""A big unit compiles as Metal's toolchain compiles it: compile_shader checks
the whole unit (preprocessing, parse and the compiler's semantic analysis of
every kernel and instantiation) and builds no kernel; each kernel is built
alone the first time it is used, and cached on disk per kernel;
Library.warmup builds them all ahead of time."""

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid

import numpy as np
import pytest

import bronze

# More kernels than compile_shader builds whole at once (api/shader.cpp: kEagerKernels).
N = 12


def unit(tag=None, extra=""):
    """N kernels k0..k{N-1}, each writing its index plus a constant that
    makes the source one no cache has seen."""
    tag = uuid.uuid4().int % 100000 if tag is None else tag
    body = "".join(f"kernel void k{i}(device float* o [[buffer(0)]], uint id [[thread_position_in_grid]]) "
                   f"{{ o[id] = {i}.0f + {tag}.0f * 0.0f; }}\n" for i in range(N))
    return body + extra


def built(lib):
    return [lib._kernel(f"k{i}").is_built for i in range(N)]


def test_a_big_unit_builds_no_kernel_until_one_is_used():
    lib = bronze.compile_shader(unit())
    assert lib.kernel_names == [f"k{i}" for i in range(N)]  # known without a build
    assert not any(built(lib))
    x = bronze.zeros(8, device=lib.device)
    lib.k3(x)
    np.testing.assert_array_equal(x.numpy(), 3.0)
    assert built(lib) == [i == 3 for i in range(N)]
    # Reflection is a use: the kernel's parameters as its compiler laid them out.
    assert lib.k5.params[0]["size"] == 4 and lib.k5.is_built


def test_a_small_unit_is_built_whole_when_compiled():
    lib = bronze.compile_shader("kernel void one(device float* o [[buffer(0)]]) { o[0] = 1; }")
    assert lib.one.is_built


def test_an_error_in_any_instantiation_is_the_compiles_at_the_users_line():
    bad = ("template <typename T> kernel void t(device T* o [[buffer(0)]], uint id [[thread_position_in_grid]])"
           " { o[id] = o[id].no_such_member; }\n"
           "template [[host_name(\"t_float\")]] kernel void t<float>(device float*, uint);\n")
    lines = unit().count("\n")
    with pytest.raises(bronze.ShaderCompileError) as e:
        bronze.compile_shader(unit() + bad)
    assert f"shader.metal:{lines + 1}:" in str(e.value) and "no_such_member" in str(e.value)


def test_metals_refusals_are_the_compiles_not_the_first_calls():
    # The binding plans' assertions (rewrite.cpp) are part of the check.
    dup = "kernel void d(device float* a [[buffer(0)]], device float* b [[buffer(0)]]) { a[0] = b[0]; }\n"
    with pytest.raises(bronze.ShaderCompileError, match="index is another parameter's too"):
        bronze.compile_shader(unit() + dup)


def test_a_build_failing_at_first_use_raises_from_the_call_and_the_library_stays_usable():
    # The CPU backend's private-memory limit is found by the build (the
    # compiler's stack report), as Metal finds such limits when it makes the pipeline.
    big = ("kernel void big(device float* o [[buffer(0)]], uint id [[thread_position_in_grid]])"
           " { float a[300000]; for (uint i = 0; i < 300000; ++i) a[i] = o[i % 8]; o[id] = a[id * 7919 % 300000]; }\n")
    src = unit(extra=big)
    lib = bronze.compile_shader(src, device="cpu")
    x = bronze.zeros(8, device="cpu")
    for _ in range(2):  # a failed build is tried again by the next use, and fails again
        with pytest.raises(bronze.ShaderCompileError, match=f"shader.metal:{src.count(chr(10))}"):
            lib.big(x)
    lib.k1(x)
    np.testing.assert_array_equal(x.numpy(), 1.0)


def test_threads_calling_one_kernel_first_build_it_once():
    lib = bronze.compile_shader(unit())
    before = bronze.cache_info()
    outs = [bronze.zeros(4, device=lib.device) for _ in range(8)]
    errors = []
    go = threading.Barrier(len(outs))

    def call(x):
        try:
            go.wait()
            lib.k7(x)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=call, args=(x,)) for x in outs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for x in outs:
        np.testing.assert_array_equal(x.numpy(), 7.0)
    after = bronze.cache_info()
    if after["enabled"]:
        assert after["stores"] - before["stores"] == 2  # its object and the unit's reference to it


def test_warmup_builds_every_kernel():
    lib = bronze.compile_shader(unit())
    lib.k0(bronze.zeros(1, device=lib.device))  # one built already: the others join it
    lib.warmup()
    assert all(built(lib))
    x = bronze.zeros(4, device=lib.device)
    for i in range(N):
        lib._kernel(f"k{i}")(x)
        np.testing.assert_array_equal(x.numpy(), float(i))


# A process that compiles the unit and calls k{i}: what it found in the cache.
CALL = """
import json, sys, bronze
lib = bronze.compile_shader(sys.argv[1])
x = bronze.zeros(4, device=lib.device)
print("building", flush=True)
getattr(lib, sys.argv[2])(x)
print(json.dumps({"x": x.numpy().tolist(), "cache": bronze.cache_info()}))
"""


def call_in_process(cache, src, kernel, **popen):
    env = dict(os.environ, BRONZE_CACHE_DIR=str(cache))
    env.pop("BRONZE_CACHE_DISABLE", None)
    return subprocess.Popen([sys.executable, "-c", CALL, src, kernel], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **popen)


def result(p):
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0, err
    return json.loads(out.splitlines()[-1])


def test_a_second_process_finds_the_unit_and_the_kernel_in_the_cache(tmp_path):
    src = unit()
    first = result(call_in_process(tmp_path, src, "k2"))
    # The preprocessed unit, the check's pass, the unit's record, k2's object
    # and the record's reference to it.
    assert first["x"] == [2.0] * 4 and first["cache"]["stores"] == 5
    second = result(call_in_process(tmp_path, src, "k2"))
    assert second["x"] == [2.0] * 4
    # The preprocessed unit (no preprocessor), the record (no parse, no
    # check), the reference and the object (no code generated).
    assert second["cache"]["misses"] == 0 and second["cache"]["hits"] == 4 and second["cache"]["stores"] == 0
    third = result(call_in_process(tmp_path, src, "k4"))  # another kernel: built, the unit found
    assert third["x"] == [4.0] * 4
    assert third["cache"]["hits"] == 2 and third["cache"]["stores"] == 2


def test_two_processes_building_one_kernel_both_get_it(tmp_path):
    src = unit()
    a, b = call_in_process(tmp_path, src, "k6"), call_in_process(tmp_path, src, "k6")
    assert result(a)["x"] == result(b)["x"] == [6.0] * 4
    assert result(call_in_process(tmp_path, src, "k6"))["cache"]["misses"] == 0


def test_a_build_killed_midway_leaves_the_cache_usable(tmp_path):
    src = unit()
    p = call_in_process(tmp_path, src, "k9", start_new_session=True)
    try:
        assert p.stdout.readline().strip() == "building"
        deadline = time.monotonic() + 60  # killed while its build folder exists, if it is still building
        while time.monotonic() < deadline and p.poll() is None:
            if any(e.name.startswith("bronze-build-") for e in tmp_path.iterdir()):
                break
            time.sleep(0.01)
    finally:
        try:
            os.killpg(p.pid, signal.SIGKILL)  # the process and its compiler
        except ProcessLookupError:  # it finished first (a fast build)
            pass
        p.communicate()
    after = result(call_in_process(tmp_path, src, "k9"))
    assert after["x"] == [9.0] * 4


def test_the_nvrtc_worker_ships_beside_the_extension():
    # NVRTC runs one compile at a time per process: the parts of a unit
    # built at once each compile in a bronze-nvrtc process, found beside
    # bronze._C (backends/cuda/nvrtc.cpp). It is bronze's own program.
    worker = os.path.join(os.path.dirname(bronze._C.__file__), "bronze-nvrtc")
    assert os.access(worker, os.X_OK)
    p = subprocess.run([worker], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "usage: bronze-nvrtc" in p.stderr


def test_a_kernels_name_and_repr_build_nothing():
    lib = bronze.compile_shader(unit())
    k = lib.k8
    assert k.name == "k8" and repr(k) == "<bronze.Kernel 'k8'>" and "k8" in repr(lib)
    assert not k.is_built
