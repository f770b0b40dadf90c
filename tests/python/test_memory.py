import gc

import pytest

import bronze


def test_figures_follow_tensor_lifetimes():
    gc.collect()
    base = bronze.current_allocated_memory()
    t = bronze.empty(1000)
    assert bronze.current_allocated_memory() == base + 4096  # 4000 bytes rounded to 512s
    stats = bronze.memory_stats()
    assert stats["allocated_bytes.current"] == base + 4096
    assert stats["reserved_bytes.current"] >= stats["allocated_bytes.current"]
    del t
    assert bronze.current_allocated_memory() == base
    assert bronze.memory_stats()["allocated_bytes.peak"] >= base + 4096
    bronze.reset_peak_memory_stats()
    assert bronze.memory_stats()["allocated_bytes.peak"] == base


def test_cache_hits_reuse_blocks():
    t = bronze.empty(256)
    ptr = t.data_ptr()
    del t
    hits = bronze.memory_stats()["cache_hits"]
    u = bronze.empty(256)
    assert u.data_ptr() == ptr
    assert bronze.memory_stats()["cache_hits"] == hits + 1


def test_oom_names_figures_and_runtime_stays_usable():
    bronze.empty_cache()
    rec = bronze.recommended_max_memory()
    bronze.set_per_process_memory_fraction(64 * 2**20 / rec)  # a 64 MiB limit
    keep = bronze.empty(8 * 2**20)  # 32 MiB
    ooms = bronze.memory_stats()["num_ooms"]
    with pytest.raises(bronze.OutOfMemoryError) as info:
        bronze.empty(16 * 2**20)  # 64 MiB more
    e = info.value
    assert isinstance(e, RuntimeError)
    assert e.requested == 64 * 2**20
    assert e.allocated >= 32 * 2**20
    assert 0 < e.limit <= 64 * 2**20
    msg = str(e)
    for word in ("tried to allocate", "allocated", "reserved", "limit"):
        assert word in msg
    assert bronze.memory_stats()["num_ooms"] == ooms + 1
    del keep
    t = bronze.empty(8 * 2**20)  # fits again: cache is freed and retried
    assert t.numel() == 8 * 2**20


def test_limit_frees_cache_before_failing():
    bronze.empty_cache()
    rec = bronze.recommended_max_memory()
    a = bronze.empty(10 * 2**20)  # 40 MiB segment, then cached
    del a
    bronze.set_per_process_memory_fraction(60 * 2**20 / rec)
    b = bronze.empty(12 * 2**20)  # 48 MiB: fits only after the cached 40 MiB goes back
    assert b.numel() == 12 * 2**20


def test_a_tiny_positive_fraction_is_a_limit_not_none():  # issue #34 N44
    bronze.empty_cache()
    bronze.set_per_process_memory_fraction(1e-300)
    try:
        assert bronze.memory_stats()["limit_bytes"] == 1
        with pytest.raises(bronze.OutOfMemoryError, match="limit 1 B"):
            bronze.empty(1000)
    finally:
        bronze.set_per_process_memory_fraction(0.0)
    assert bronze.memory_stats()["limit_bytes"] == 0  # 0 is still "no limit"
