"""A pytest plugin for testing Metal kernels with bronze (pytest 8 or later):

    pytest -p bronze.pytest_plugin [--bronze-validate] [--bronze-device cuda]

- After each test, the work queued on every device is waited for: a kernel
  that faulted fails the test that launched it (its DeviceError would
  otherwise surface in whichever test synchronizes next).
- The `metal` fixture compiles a source: `lib = metal(src, **options)`
  (compile_shader's options), for the device `--bronze-device` names
  (bronze's current device by default), with `validate=True` under
  `--bronze-validate` (every buffer access bounds-checked, on the CPU).
- The `assert_close` fixture compares a kernel's output with what is
  expected, after waiting for the kernel: `assert_close(out, expected,
  rtol=1e-6, atol=0)` for bronze tensors, NumPy arrays and numbers.
"""

import numpy as np
import pytest

import bronze


def pytest_addoption(parser):
    group = parser.getgroup("bronze", "Metal kernels with bronze")
    group.addoption("--bronze-validate", action="store_true",
                    help="compile the metal fixture's libraries with validate=True (bounds-checked buffers)")
    group.addoption("--bronze-device", default=None,
                    help="the device the metal fixture compiles for: cpu, cuda[:N] or mps (default: bronze's current)")


def _synchronize_all():
    for d in bronze.devices():
        bronze.synchronize(d)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    result = yield
    _synchronize_all()  # a DeviceError here is this test's failure
    return result


@pytest.fixture
def metal(request):
    """Compiles a Metal source for the test: metal(src, **compile_shader options)."""
    device = request.config.getoption("--bronze-device")
    validate = request.config.getoption("--bronze-validate")

    def compile(source, **options):
        options.setdefault("device", device)
        if validate:
            options.setdefault("validate", True)
        return bronze.compile_shader(source, **options)

    return compile


def _host(x):
    if isinstance(x, bronze.Tensor):
        return x.numpy()  # waits for the work queued before
    return np.asarray(x)


@pytest.fixture
def assert_close():
    """assert_close(actual, expected, rtol=1e-6, atol=0): waits for the queued work, then compares."""

    def check(actual, expected, rtol=1e-6, atol=0.0):
        _synchronize_all()  # a NumPy array bound as an output is written asynchronously
        np.testing.assert_allclose(_host(actual), _host(expected), rtol=rtol, atol=atol)

    return check
