"""Behaviours torch's test_mps.py checks for these APIs, against bronze."""

import gc

import numpy as np
import pytest

import bronze


def test_allocator_module():
    gc.collect()
    bronze.empty_cache()
    current_before = bronze.current_allocated_memory()
    assert current_before == 0  # nothing alive after gc + empty_cache
    driver_before = bronze.driver_allocated_memory()
    x = bronze.ones(1024 * 1024 * 8)  # 32 MiB: a new segment
    assert bronze.current_allocated_memory() > current_before
    assert bronze.driver_allocated_memory() > driver_before
    del x
    gc.collect()
    assert bronze.current_allocated_memory() == 0
    assert bronze.driver_allocated_memory() > driver_before  # cached until empty_cache
    bronze.empty_cache()
    assert bronze.driver_allocated_memory() == driver_before


def test_allocator_stats():
    assert bronze.recommended_max_memory() > 0


def test_set_per_process_memory_fraction_errors():
    with pytest.raises(TypeError):
        bronze.set_per_process_memory_fraction(1)
    with pytest.raises(TypeError):
        bronze.set_per_process_memory_fraction("0.5")
    with pytest.raises(ValueError):
        bronze.set_per_process_memory_fraction(-0.5)
    with pytest.raises(ValueError):
        bronze.set_per_process_memory_fraction(2.5)
    bronze.set_per_process_memory_fraction(2.0)
    assert bronze.get_per_process_memory_fraction() == 2.0


def test_profiler_module(tmp_path, monkeypatch):
    monkeypatch.setenv("BRONZE_TRACE_FILE", str(tmp_path / "trace.json"))  # the default path, kept out of the cwd
    with bronze.profiler.profile(mode="event", wait_until_completed=False) as p:
        x = bronze.rand(1, 128, 6, 6)
        (x * 2).numpy()
    assert p["path"]
    bronze.profiler.start(mode="interval", wait_until_completed=True)
    x = bronze.rand(1, 128, 6, 6)
    bronze.profiler.stop()


def test_event_module():
    start = bronze.Event(enable_timing=True)
    start.record()
    x = bronze.rand(256, 256)
    y = x @ x
    end = bronze.Event(enable_timing=True)
    end.record()
    assert start.elapsed_time(end) > 0.0
    del y


def test_generator():
    bronze.manual_seed(1234)
    state = bronze.get_rng_state()
    x = bronze.randn(5)
    bronze.set_rng_state(state)
    y = bronze.randn(5)
    np.testing.assert_array_equal(x.numpy(), y.numpy())
    bronze.manual_seed(1234)
    np.testing.assert_array_equal(bronze.randn(5).numpy(), x.numpy())


def test_default_generator_seed():
    bronze.manual_seed(bronze.initial_seed())
    s = bronze.seed()
    assert bronze.initial_seed() == s
