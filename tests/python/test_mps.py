"""torch.mps code on bronze: `device="mps"` is bronze's default accelerator,
and `import bronze.mps as mps` gives torch.mps's names."""

import subprocess
import sys

import numpy as np
import pytest

import bronze
import bronze.mps as mps

ACCELERATOR = "cuda:0" if bronze.is_available("cuda") else "cpu:0"
# Said once per process; test_mps_is_the_default_accelerator_said_once checks it in a process of its own.
pytestmark = pytest.mark.filterwarnings("ignore:bronze. device 'mps' is")


def test_mps_is_the_default_accelerator_said_once():
    code = ("import warnings, bronze\nwarnings.simplefilter('always')\n"
            "with warnings.catch_warnings(record=True) as w:\n"
            "    a = bronze.zeros(2, device='mps'); b = bronze.ones(2, device='mps:0')\n"
            "print(a.device, b.device, len([x for x in w if \"device 'mps'\" in str(x.message)]))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120).stdout
    assert out.split() == [ACCELERATOR, ACCELERATOR, "1"]


def test_only_one_mps_device():
    with pytest.raises(ValueError, match="torch.mps has one device"):
        bronze.zeros(2, device="mps:1")


def test_torch_mps_code_ports_by_one_import():
    # As a torch.mps user writes it, with `import torch.mps as mps` replaced.
    assert mps.is_available() and mps.device_count() == 1
    mps.manual_seed(7)
    state = mps.get_rng_state()
    lib = mps.compile_shader("""
        kernel void axpy(device float* y, device const float* x, constant float& a,
                         uint i [[thread_position_in_grid]]) { y[i] += a * x[i]; }""")
    x = bronze.rand(256, device="mps")
    y = bronze.ones(256, device="mps")
    lib.axpy(y, x, 2.0)
    mps.synchronize()
    np.testing.assert_allclose(y.numpy(), 1 + 2 * x.numpy(), rtol=1e-6)
    assert mps.current_allocated_memory() >= 2 * 256 * 4
    assert mps.driver_allocated_memory() >= mps.current_allocated_memory()
    assert mps.recommended_max_memory() > 0
    mps.set_rng_state(state)
    np.testing.assert_array_equal(bronze.rand(256, device="mps").numpy(), x.numpy())  # the same state, the same draws
    start, end = mps.event.Event(enable_timing=True), mps.event.Event(enable_timing=True)
    start.record()
    lib.axpy(y, x, 1.0)
    end.record()
    end.synchronize()
    assert start.elapsed_time(end) >= 0
    del x, y
    before = mps.driver_allocated_memory()
    mps.empty_cache()
    assert mps.current_allocated_memory() <= mps.driver_allocated_memory() <= before


def test_a_torch_device_names_a_device():
    torch = pytest.importorskip("torch")
    assert bronze.zeros(1, device=torch.device("mps")).device == bronze.device(ACCELERATOR)
    assert bronze.zeros(1, device=torch.device("cpu")).device == bronze.device("cpu")
