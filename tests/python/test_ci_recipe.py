"""The README's "Testing Metal kernels in CI" recipe, run as written: its
`bronze check` and `pytest -p bronze.pytest_plugin` commands and its test
file, on a small repository made here."""

import os
import re
import subprocess
import sys

import pytest

README = os.path.join(os.path.dirname(__file__), "..", "..", "README.md")
SCALE = """
kernel void scale(device float* out [[buffer(0)]], device const float* x [[buffer(1)]],
                  constant float& a [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  out[i] = a * x[i];
}
"""


def recipe():
    text = open(README, encoding="utf-8").read()
    section = text.split("### Testing Metal kernels in CI", 1)[1].split("\n### ", 1)[0]
    yaml, test = re.findall(r"```(?:yaml|python)\n(.*?)```", section, re.S)
    commands = [line.split("- run: ", 1)[1] for line in yaml.splitlines() if "- run: " in line]
    check = next(c for c in commands if c.startswith("bronze check"))
    pytest_run = next(c for c in commands if c.startswith("pytest -p bronze.pytest_plugin"))
    return check.split(), pytest_run.split(), test


def run(argv, cwd):
    argv = [sys.executable, "-m", *argv]  # `bronze ...` and `pytest ...` with this interpreter and its bronze
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=600)


@pytest.fixture
def repo(tmp_path):
    (tmp_path / "kernels").mkdir()
    (tmp_path / "tests").mkdir()
    (tmp_path / "kernels" / "scale.metal").write_text(SCALE)
    return tmp_path


def test_the_ci_recipe_passes_a_good_repository(repo):
    check, pytest_run, test = recipe()
    (repo / "tests" / "test_scale.py").write_text(test)
    r = run(check, repo)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "PASS kernels/scale.metal (1 kernel" in r.stdout and "1 files, 1 passed, 0 failed" in r.stdout
    assert 'tests="1" failures="0"' in (repo / "metal-check.xml").read_text()
    r = run(pytest_run, repo)
    assert r.returncode == 0 and "1 passed" in r.stdout, r.stdout + r.stderr


def test_the_ci_recipe_fails_a_broken_kernel_at_its_line(repo):
    check, _, _ = recipe()
    (repo / "kernels" / "broken.metal").write_text("kernel void k(device float* o) {\n  o[0] = undeclared;\n}\n")
    r = run(check, repo)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "FAIL kernels/broken.metal: ShaderCompileError: kernels/broken.metal:2:" in r.stdout
    assert "2 files, 1 passed, 1 failed (kernels/broken.metal)" in r.stdout
    assert 'failures="1"' in (repo / "metal-check.xml").read_text()


def test_a_kernel_that_faults_fails_the_test_that_launched_it(repo):
    _, pytest_run, _ = recipe()
    (repo / "tests" / "test_fault.py").write_text(
        "import bronze\n\n"
        "def test_faults(metal):\n"
        "    lib = metal('kernel void wild(device int* o, uint i [[thread_position_in_grid]]) "
        "{ *(device int*)(64 + i) = 1; }', device='cpu')\n"
        "    lib.wild(bronze.zeros(1, dtype=bronze.int32, device='cpu'))\n\n"
        "def test_after():\n    pass\n")
    r = run(pytest_run, repo)
    assert r.returncode == 1, r.stdout + r.stderr
    assert re.search(r"FAILED tests/test_fault.py::test_faults - .*DeviceError", r.stdout + r.stderr) or \
        "test_fault.py::test_faults FAILED" in r.stdout, r.stdout
    assert "1 failed, 1 passed" in r.stdout, r.stdout


def test_usage_errors_exit_2(repo):
    r = run(["bronze", "check", "no/such/path"], repo)
    assert r.returncode == 2 and "bronze check: no such file or folder: no/such/path" in r.stderr
    r = run(["bronze", "check", "tests"], repo)  # no .metal files there
    assert r.returncode == 2 and "no .metal files under tests" in r.stderr
