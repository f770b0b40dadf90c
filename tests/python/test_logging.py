"""BRONZE_LOG (#37): records of the `bronze` logger for each compile (its
command line, time and the compile cache's answer) and, at debug, each
launch; a compile past 2 s shows a line on a terminal, and Ctrl-C stops it.
The level is read once per process, so each case runs in a child."""

import json
import os
import pty
import signal
import subprocess
import sys
import time

import pytest

from long_compile import LONG_COMPILE

K = "kernel void k(device float* o, uint i [[thread_position_in_grid]]) { o[i] = 3; }"

# Prints the `bronze` logger's records as JSON lines once `code` has run: a
# handler of the application's own (so bronze adds none).
RECORDS = """
import json, logging, sys, threading
import bronze
records = []
class Keep(logging.Handler):
    def emit(self, r):
        records.append((r.levelname, r.getMessage(), r.threadName))
logging.getLogger("bronze").addHandler(Keep())
{code}
for r in records:
    print(json.dumps(r))
"""


def child(code, tmp_path, stdin=None, **env):
    environ = {k: v for k, v in {**os.environ, "BRONZE_CACHE_DIR": str(tmp_path / "cache"), **env}.items()
               if v is not None}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=environ)


def records(code, tmp_path, **env):
    r = child(RECORDS.format(code=code), tmp_path, **env)
    assert r.returncode == 0, r.stderr
    return [tuple(json.loads(line)) for line in r.stdout.splitlines()]


COMPILE = f"bronze.compile_shader({K!r}, device='cpu', filename='k.metal')"


def test_a_compile_is_recorded_at_info_a_miss_then_a_hit(tmp_path):
    first = records(COMPILE, tmp_path, BRONZE_LOG="info")
    compiles = [m for level, m, _ in first if m.startswith("compile k.metal on cpu")]
    assert len(compiles) == 1, first
    assert "cache miss, done in " in compiles[0]
    # The command line as run: the compiler, its options, the unit.
    assert " -std=c++17 " in compiles[0] and compiles[0].endswith("/kernel.cpp"), compiles[0]
    assert any(m.startswith("compile cache: stored ") and m.endswith(".so (k.metal)") for _, m, _ in first), first
    assert all(level == "INFO" for level, _, _ in first)
    # On the thread that compiled (the main one here), not a thread of bronze's.
    assert {thread for _, _, thread in first} == {"MainThread"}

    second = records(COMPILE, tmp_path, BRONZE_LOG="info")
    compiles = [m for _, m, _ in second if m.startswith("compile k.metal on cpu")]
    assert len(compiles) == 1 and compiles[0].startswith("compile k.metal on cpu: cache hit ("), second
    assert not any("stored" in m for _, m, _ in second), second


def test_an_nvrtc_compile_is_recorded_with_its_options(tmp_path):
    # NVRTC alone (no GPU needed) compiles for sm_90 where it loads.
    code = ("try:\n"
            f"    bronze.compile_library({K!r}, filename='k.metal', archs=[90])\n"
            "except bronze.NotSupportedError as e:\n"
            "    print(json.dumps(('no NVRTC', str(e), '')))\n")
    first = records(code, tmp_path, BRONZE_LOG="info")
    if first and first[0][0] == "no NVRTC":
        pytest.skip(first[0][1])
    cuda = [m for _, m, _ in first if m.startswith("compile k.metal on cuda: ")]
    assert cuda and all(m.startswith("compile k.metal on cuda: cache miss, done in ") for m in cuda), first
    assert any("NVRTC " in m and " --gpu-architecture=sm_90 " in m for m in cuda), cuda
    assert any(" --gpu-architecture=compute_90 " in m for m in cuda), cuda  # the library's PTX
    second = records(code, tmp_path, BRONZE_LOG="info")
    cuda = [m for _, m, _ in second if m.startswith("compile k.metal on cuda: ")]
    assert cuda and all(m.startswith("compile k.metal on cuda: cache hit (") for m in cuda), second


def test_records_of_a_compile_on_another_thread_are_delivered_there(tmp_path):
    code = ("t = threading.Thread(target=lambda: " + COMPILE + ", name='compiler')\n"
            "t.start()\nt.join()")
    out = records(code, tmp_path, BRONZE_LOG="info")
    assert any(m.startswith("compile k.metal on cpu: cache miss") for _, m, _ in out), out
    assert {thread for _, _, thread in out} == {"compiler"}, out


def test_a_handler_may_call_bronze_while_threads_compile_and_launch(tmp_path):
    # Records are delivered where no lock of bronze's is held: a handler that
    # launches and waits, while two threads compile (their parts on threads
    # of bronze's) and the main thread launches, deadlocks nothing. (A
    # handler that launched for every record, its launches' own included,
    # fed itself until the queue of 10,000 records dropped some.)
    code = f"""
lib = bronze.compile_shader({K!r}, device="cpu")
class Busy(logging.Handler):
    def emit(self, r):
        if r.getMessage().startswith("launch "):  # else each launch's record launches again, without end
            return
        y = bronze.empty(8)
        lib.k(y)
        assert y.numpy()[0] == 3
logging.getLogger("bronze").addHandler(Busy())
def compile(n):
    src = "".join(f"kernel void k{{n}}_{{i}}(device float* o) {{{{ o[0] = {{i}}; }}}}\\n" for i in range(n))
    bronze.compile_shader(src, device="cpu").warmup()
threads = [threading.Thread(target=compile, args=(n,)) for n in (3, 130)]
for t in threads:
    t.start()
x = bronze.empty(8)
for _ in range(200):
    lib.k(x)
for t in threads:
    t.join()
bronze.synchronize()
"""
    out = records(code, tmp_path, BRONZE_LOG="debug")
    assert sum(m.startswith("launch k grid 8x1x1") for _, m, _ in out) >= 200, out
    if len(os.sched_getaffinity(0)) > 1:  # the big unit is checked in parts, on threads of bronze's
        assert any(m.startswith("check shader.metal (part 2 of 2) on cpu") for _, m, _ in out), out


def test_launches_are_recorded_at_debug_only(tmp_path):
    launch = COMPILE.replace("bronze.compile_shader", "lib = bronze.compile_shader") + (
        "\nx = bronze.empty(40)\nlib.k(x, threads=(40, 1, 1), group_size=(8, 1, 1))\n"
        "# Delivered by the call, or by the main thread before its next Python code.\n"
        "print(json.dumps(('launched', [m for _, m, _ in records if m.startswith('launch ')])))\n"
        "x.numpy()")
    out = records(launch, tmp_path, BRONZE_LOG="debug")
    assert out[0] == ("launched", ["launch k grid 40x1x1 group 8x1x1 on cpu:0 stream 1"]), out
    assert any(level == "DEBUG" and m.startswith("compile cache lookup ") for level, m, _ in out[1:]), out
    assert records(launch, tmp_path, BRONZE_LOG="info")[0] == ("launched", [])
    assert records(launch, tmp_path, BRONZE_LOG=None) == [("launched", [])]


def test_without_a_handler_records_reach_stderr(tmp_path):
    # logging not configured: bronze adds one handler for its logger, at the
    # level asked for; the application's own logging is left alone.
    code = COMPILE + ("\nimport logging\nlog = logging.getLogger('bronze')\n"
                      "print(len(log.handlers), logging.getLevelName(log.level), logging.getLogger().handlers)")
    r = child("import bronze\n" + code, tmp_path, BRONZE_LOG="info")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["1", "INFO", "[]"]
    assert "bronze INFO: compile k.metal on cpu: cache miss, done in " in r.stderr, r.stderr


def test_without_python_records_go_to_stderr_from_the_core(tmp_path):
    # As a C++ program gets them, and a Python one after its exit began:
    # a line each, straight from the thread that made it.
    out = records("bronze._C._log_install(None)\n" + COMPILE, tmp_path, BRONZE_LOG="info")
    assert out == []
    r = child("import bronze\nbronze._C._log_install(None)\n" + COMPILE, tmp_path, BRONZE_LOG="info")
    assert "bronze INFO: compile k.metal on cpu: cache hit (" in r.stderr, r.stderr


def test_a_bad_level_is_an_error_naming_it(tmp_path):
    code = ("import bronze\n"  # importing reads no setting
            f"try:\n    {COMPILE}\nexcept ValueError as e:\n    print(e)\n")
    r = child(code, tmp_path, BRONZE_LOG="verbose")
    assert r.stdout.strip() == "$BRONZE_LOG='verbose' is not off, info or debug", r.stdout + r.stderr
    r = subprocess.run([sys.executable, "-m", "bronze", "info"], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, BRONZE_LOG="verbose"))
    assert r.returncode == 2 and "$BRONZE_LOG='verbose'" in r.stderr, r.stdout + r.stderr


# A compile that computes for minutes (constexpr loops under GCC's limits).
CTRL_C = """
import sys, bronze
try:
    bronze.compile_shader(sys.argv[1], device="cpu", filename="spin.metal")
except KeyboardInterrupt:
    print("KeyboardInterrupt", flush=True)
"""


def _compilers_of(cache):
    """Processes (not yet exited) whose command line names the cache folder: the compile's."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    continue
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if str(cache).encode() in f.read():
                    found.append(int(pid))
        except OSError:
            pass
    return found


def test_a_long_compile_shows_progress_on_a_terminal_and_ctrl_c_stops_it(tmp_path):
    cache = tmp_path / "cache"
    master, terminal = pty.openpty()
    # A time limit bounds the test should the line never come.
    env = dict(os.environ, BRONZE_CACHE_DIR=str(cache), BRONZE_COMPILE_TIMEOUT="300")
    env.pop("BRONZE_LOG", None)  # the line does not depend on the log
    child = subprocess.Popen([sys.executable, "-c", CTRL_C, LONG_COMPILE], env=env, stdout=subprocess.PIPE,
                             stderr=terminal, text=True)
    os.close(terminal)
    try:
        # The handshake: the line, written once the compile has run 2 s.
        shown = b""
        while b"bronze: compiling spin.metal (" not in shown:
            try:
                shown += os.read(master, 4096)
            except OSError:  # EIO: the child has ended
                raise AssertionError(f"no progress line: {shown!r} {child.communicate()}") from None
        assert _compilers_of(cache), "the line is shown while the compiler runs"
        child.send_signal(signal.SIGINT)
        out, _ = child.communicate(timeout=60)  # the compile alone would take minutes
        try:
            while data := os.read(master, 4096):
                shown += data
        except OSError:  # EIO: the terminal's last holder has gone
            pass
    finally:
        child.kill()
        child.wait()
        os.close(master)
    assert out == "KeyboardInterrupt\n"
    text = shown.decode()
    assert text.startswith("\r\x1b[Kbronze: compiling spin.metal (") and text.endswith(" s)\r\x1b[K"), text
    # The compiler was killed with its process group (gone once the kernel has delivered SIGKILL).
    deadline = time.monotonic() + 30
    while _compilers_of(cache) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _compilers_of(cache), "the compiler outlived the interrupt"
    # Nothing of the compile cached, and its build folder removed: only the
    # preprocessed unit (made before the compile) and the folder's tag.
    left = sorted(os.listdir(cache))
    assert [n for n in left if not n.endswith((".pp", ".probe"))] == ["CACHEDIR.TAG"], left


def test_no_progress_line_when_stderr_is_not_a_terminal(tmp_path):
    # The compiler is stopped at its 3 s time limit: past the line's 2 s.
    code = "import sys, bronze\nbronze.compile_shader(sys.argv[1], device='cpu', filename='spin.metal')\n"
    environ = dict(os.environ, BRONZE_CACHE_DIR=str(tmp_path / "cache"), BRONZE_COMPILE_TIMEOUT="3")
    r = subprocess.run([sys.executable, "-c", code, LONG_COMPILE], capture_output=True, text=True, timeout=300, env=environ)
    assert "ran past its time limit of 3 s" in r.stderr, r.stderr
    assert "bronze: compiling" not in r.stderr and "\x1b[K" not in r.stderr, r.stderr
