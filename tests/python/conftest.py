import gc

import pytest

import bronze


@pytest.fixture(autouse=True)
def _clean_runtime():
    """Every test starts with no limit and leaves no queued failure behind."""
    bronze.set_per_process_memory_fraction(0.0)
    yield
    gc.collect()
    bronze.synchronize()
    bronze.set_per_process_memory_fraction(0.0)
