"""$BRONZE_* settings (N37): each is parsed strictly where it is used. A value
that does not parse is a ValueError naming the variable and the value, raised
by the call that needed the setting, never a default in its place; importing
bronze still works, so `bronze info` can say which (test_cli.py)."""

import os
import subprocess
import sys

import pytest

K = "kernel void k(device float* o, uint i [[thread_position_in_grid]]) { o[i] = 3; }"


def child(code, **env):
    """Runs code after `import bronze` in a child with env set (None: unset);
    returns its stdout: what the code printed, or the ValueError it raised."""
    run = f"import bronze\ntry:\n    print({code})\nexcept ValueError as e:\n    print('ValueError', e)\n"
    environ = {k: v for k, v in {**os.environ, **env}.items() if v is not None}
    r = subprocess.run([sys.executable, "-c", run], capture_output=True, text=True, timeout=120, env=environ)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


# (variable, a bad value, what uses it): each once read silently as a default.
BAD = [
    ("BRONZE_NUM_THREADS", "abc", "bronze.ones(2).numpy()"),  # was 1 thread
    ("BRONZE_NUM_THREADS", "1e3", "bronze.get_device_properties().multi_processor_count"),
    ("BRONZE_CACHE_MAX_BYTES", "-5", f"bronze.compile_shader({K!r})"),  # was no limit
    ("BRONZE_CACHE_DISABLE", "maybe", "bronze.cache_info()"),
    ("BRONZE_DEVICE", "garbage", "bronze.ones(2)"),  # was the CPU
    ("BRONZE_DEVICE", "cuda:-1", "bronze.current_device()"),
    # At the call, not as a DeviceError of the first queued kernel.
    ("BRONZE_KERNEL_TIME_LIMIT", "inf", "bronze.ones(2)"),
    ("BRONZE_BLAS_LIBRARY", "/nonexistent/libblas.so", "bronze.mm(bronze.ones(2, 2), bronze.ones(2, 2))"),  # was OpenBLAS
    ("BRONZE_DISABLE_CUDA", "nope", "bronze.cuda_status()"),
    ("BRONZE_CAPTURE_ENABLED", "2", "bronze.profiler.is_metal_capture_enabled()"),
]


@pytest.mark.parametrize("var, value, use", BAD, ids=[f"{v}={x}" for v, x, _ in BAD])
def test_a_bad_value_is_an_error_naming_it(var, value, use):
    out = child(use, **{var: value})
    assert out.startswith(f"ValueError ${var}='{value}' is not "), out


def test_switches_read_false_as_false():
    # BRONZE_CACHE_DISABLE=false (or no, off) disabled the cache: only "0" enabled it.
    out = child("[bronze.cache_info()['enabled'], bronze.profiler.is_metal_capture_enabled()]",
                BRONZE_CACHE_DISABLE="false", BRONZE_CAPTURE_ENABLED="off", MTL_CAPTURE_ENABLED="no")
    assert out == "[True, False]", out
    assert child("bronze.cache_info()['status']", BRONZE_CACHE_DISABLE="YES") == "disabled by BRONZE_CACHE_DISABLE"


def test_an_empty_value_is_the_default():
    # BRONZE_NUM_THREADS="" gave one thread: empty is unset, as for every setting.
    threads = "bronze.get_device_properties().multi_processor_count"
    assert child(threads, BRONZE_NUM_THREADS="") == child(threads, BRONZE_NUM_THREADS=None)


def test_pip_nvidia_wheels_on_sys_path_are_where_cuda_libraries_are_looked_for(tmp_path):
    # PyTorch installs NVRTC and cuBLAS as pip wheels (site-packages/nvidia/cu13/lib):
    # bronze names their lib folders to the core, which searches them after
    # the library path (tests/cpp: ToolkitPaths).
    for d in ("nvidia/cu13/lib", "nvidia/cuda_nvrtc/lib", "nvidia/empty"):
        (tmp_path / d).mkdir(parents=True)
    code = "import bronze; print('\\n'.join(bronze._C._pip_cuda_dirs()))"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    dirs = [d.rstrip("/") for d in p.stdout.split()]
    assert dirs[:2] == [str(tmp_path / "nvidia/cu13/lib"), str(tmp_path / "nvidia/cuda_nvrtc/lib")]
