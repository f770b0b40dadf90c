import gc
import signal

import pytest

import bronze

# Python turns SIGINT into KeyboardInterrupt only if it was not ignored when
# the process started, and a background job of a non-interactive shell (nohup
# ..., a CI runner's step) starts with it ignored, as does every child then.
# The Ctrl-C tests send SIGINT to this process and to children they start:
# Python's own handler here, and so the default in every child (an exec
# keeps a signal ignored, never a handler).
signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(autouse=True)
def _clean_runtime():
    """Every test starts with no limit and leaves no queued failure behind."""
    bronze.set_per_process_memory_fraction(0.0)
    yield
    gc.collect()
    bronze.synchronize()
    bronze.set_per_process_memory_fraction(0.0)
