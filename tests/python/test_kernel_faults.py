"""A fault or a runaway inside a CPU kernel fails that launch, as a GPU fault
would, and never the process; the device serves new work afterwards."""

import os
import platform
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import bronze

FAULTS = """
kernel void divide(device int* out, constant int& d, uint i [[thread_position_in_grid]]) {
  out[i] = (int(i) + 7) / d + (int(i) + 7) % d;
}
kernel void divide_u(device uint* out, constant uint& d, uint i [[thread_position_in_grid]]) {
  out[i] = (i + 7u) / d;
}
kernel void int_min(device int* out, constant int& d, constant int& x, uint i [[thread_position_in_grid]]) {
  out[i] = x / d;
}
kernel void wild(device int* out, constant ulong& at, uint i [[thread_position_in_grid]]) {
  *(device int*)(at + i * 4) = 1;
}
int deep(int n) {
  volatile char frame[4096];
  frame[0] = (char)n;
  return n == 0 ? frame[0] : deep(n - 1) + frame[0];
}
kernel void recurse(device int* out, uint i [[thread_position_in_grid]]) { out[i] = deep(1000000 + int(i)); }
kernel void recurse_group(device int* out, uint i [[thread_position_in_grid]]) {
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[i] = deep(1000000 + int(i));
}
kernel void trap(device int* out, uint i [[thread_position_in_grid]]) { if (i == 3) __builtin_trap(); out[i] = 1; }
kernel void spin(volatile device int* flag, uint i [[thread_position_in_grid]]) { while (flag[0] == 0) { } }
kernel void spin_group(volatile device int* flag, uint i [[thread_position_in_grid]]) {
  while (flag[0] == 0) threadgroup_barrier(mem_flags::mem_none);
}
kernel void fill(device int* out, constant int& v, uint i [[thread_position_in_grid]]) { out[i] = v; }
"""


@pytest.fixture(scope="module")
def lib():
    return bronze.compile_shader(FAULTS)


@pytest.fixture(autouse=True)
def _no_time_limit():
    yield
    bronze.set_kernel_time_limit(None)


def still_serves(lib):
    out = bronze.zeros(64, dtype=bronze.int32)
    lib.fill(out, 5)
    bronze.synchronize()
    assert (out.numpy() == 5).all()


def launch_error(call):
    call()
    with pytest.raises(bronze.DeviceError) as e:
        bronze.synchronize()
    return str(e.value)


x86 = pytest.mark.skipif(platform.machine() != "x86_64", reason="only x86-64 traps on integer division")


@x86
def test_division_by_zero_yields_a_value_without_a_fault(lib):
    out = bronze.zeros(8, dtype=bronze.int32)
    lib.divide(out, 0)
    bronze.synchronize()
    # Unspecified on a GPU; bronze gives the dividend and remainder 0.
    assert out.numpy().tolist() == list(range(7, 15))
    u = bronze.zeros(4, dtype=bronze.uint32)
    lib.divide_u(u, 0)
    bronze.synchronize()
    assert u.numpy().tolist() == [7, 8, 9, 10]


@x86
def test_int_min_by_minus_one_wraps_as_on_a_gpu(lib):
    out = bronze.zeros(4, dtype=bronze.int32)
    lib.int_min(out, -1, -(2**31))
    bronze.synchronize()
    assert out.numpy().tolist() == [-(2**31)] * 4


def test_validate_names_the_division_by_zero():
    src = "kernel void q(device int* out, constant int& d, uint i [[thread_position_in_grid]]) {\n" \
          "  out[i] = 10 /\n" \
          "           d;\n}\n"
    v = bronze.compile_shader(src, validate=True, filename="ratio.metal")
    out = bronze.zeros(4, dtype=bronze.int32)
    v.q(out, 2)
    bronze.synchronize()
    assert out.numpy().tolist() == [5] * 4  # nonzero divisors: no report
    msg = launch_error(lambda: v.q(out, 0))
    assert "kernel 'q'" in msg and "integer division by zero at ratio.metal:2:" in msg


def test_invalid_access_fails_the_launch_and_says_what_to_trust(lib):
    out = bronze.zeros(8, dtype=bronze.int32)
    msg = launch_error(lambda: lib.wild(out, 16))
    assert "kernel 'wild'" in msg and "SIGSEGV" in msg and "0x1" in msg
    assert "cannot be trusted" in msg
    still_serves(lib)


def test_a_fault_is_its_streams_to_report(lib):
    # A fault on one stream (another thread's, say) is raised by that
    # stream's synchronize or the device's, never by a read or an
    # empty_cache() on another stream, which would take it from its owner.
    side = bronze.Stream()
    with bronze.stream(side):
        lib.wild(bronze.zeros(8, dtype=bronze.int32), 16)
    assert bronze.ones(4).numpy().tolist() == [1.0] * 4
    assert bronze.full((1,), 3.0).item() == 3.0
    bronze.empty_cache()
    with pytest.raises(bronze.DeviceError, match="kernel 'wild'"):
        side.synchronize()
    with bronze.stream(side):
        lib.wild(bronze.zeros(8, dtype=bronze.int32), 16)
    with pytest.raises(bronze.DeviceError, match="kernel 'wild'"):
        bronze.synchronize()  # the device's: every stream's failures
    still_serves(lib)


@pytest.mark.parametrize("kernel", ["recurse", "recurse_group"])
def test_stack_overflow_fails_the_launch(lib, kernel):
    out = bronze.zeros(4, dtype=bronze.int32)
    msg = launch_error(lambda: getattr(lib, kernel)(out))
    assert f"kernel '{kernel}' overflowed its stack" in msg
    assert "512 KiB" in msg
    still_serves(lib)


def test_trap_fails_the_launch(lib):
    out = bronze.zeros(8, dtype=bronze.int32)
    msg = launch_error(lambda: lib.trap(out))
    assert "kernel 'trap'" in msg and "SIGILL" in msg
    still_serves(lib)


@pytest.mark.parametrize("kernel", ["spin", "spin_group"])
def test_time_limit_stops_a_runaway_kernel(lib, kernel):
    bronze.set_kernel_time_limit(0.3)
    assert bronze.kernel_time_limit() == pytest.approx(0.3)
    flag = bronze.zeros(1, dtype=bronze.int32)
    start = time.monotonic()
    msg = launch_error(lambda: getattr(lib, kernel)(flag, threads=256, group_size=64))
    assert time.monotonic() - start < 30
    assert f"kernel '{kernel}' ran past the kernel time limit of 0.3 s" in msg
    still_serves(lib)


def test_time_limit_spares_kernels_that_finish(lib):
    bronze.set_kernel_time_limit(5)
    flag = bronze.ones(1, dtype=bronze.int32)
    for _ in range(50):
        lib.spin(flag, threads=64)
    bronze.synchronize()
    still_serves(lib)


def test_time_limit_arguments():
    with pytest.raises(ValueError, match="seconds >= 0"):
        bronze.set_kernel_time_limit(-1)
    with pytest.raises(ValueError, match="seconds >= 0"):
        bronze.set_kernel_time_limit(float("nan"))
    with pytest.raises(TypeError, match="must be a number"):
        bronze.set_kernel_time_limit("1s")
    bronze.set_kernel_time_limit(0)
    assert bronze.kernel_time_limit() == 0


def run_python(code, **env):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=120, env={**os.environ, **env})


def test_time_limit_from_the_environment():
    code = f"""
        import bronze
        lib = bronze.compile_shader({FAULTS!r})
        flag = bronze.zeros(1, dtype=bronze.int32)
        lib.spin(flag, threads=64)
        try:
            bronze.synchronize()
        except bronze.DeviceError as e:
            print("stopped" if "time limit of 0.2 s" in str(e) else e)
    """
    r = run_python(code, BRONZE_KERNEL_TIME_LIMIT="0.2")
    assert r.stdout.strip() == "stopped", r.stderr
    r = run_python("import bronze; bronze.kernel_time_limit()", BRONZE_KERNEL_TIME_LIMIT="soon")
    assert "BRONZE_KERNEL_TIME_LIMIT='soon' is not a number of seconds" in r.stderr


def test_faults_outside_kernels_still_reach_their_handlers():
    # After bronze's handlers are in place, a fault in other code is not
    # swallowed: it ends the process as it would have (here faulthandler's dump).
    code = """
        import ctypes, faulthandler, bronze
        faulthandler.enable()
        lib = bronze.compile_shader("kernel void k(device int* o, uint i [[thread_position_in_grid]]) { o[i] = 1; }")
        o = bronze.zeros(4, dtype=bronze.int32)
        lib.k(o)
        bronze.synchronize()
        ctypes.string_at(0)
    """
    r = run_python(code)
    assert r.returncode != 0
    assert "Segmentation fault" in r.stderr


def after_the_first_launch(install):
    """A child's script: a first launch, then `install` (another library's handler)."""
    return f"""
        import ctypes, faulthandler, signal
        import bronze
        lib = bronze.compile_shader({FAULTS!r})
        out = bronze.zeros(4, dtype=bronze.int32)
        lib.fill(out, 1)
        bronze.synchronize()
        {install}"""


# N19: a handler another library installs after bronze's first launch took
# the kernels' faults: SIG_IGN for SIGFPE killed the process at a division by
# zero, a Python handler looped forever on it, faulthandler printed "Fatal
# Python error" and the fault's address was lost. bronze puts its own back.
@x86
@pytest.mark.parametrize("install", ["signal.signal(signal.SIGFPE, signal.SIG_IGN)",
                                     "signal.signal(signal.SIGFPE, lambda *a: print('python handler'))",
                                     "faulthandler.enable()"])
def test_a_handler_installed_after_the_first_launch_leaves_the_guard_on(install):
    r = run_python(after_the_first_launch(install) + """
        lib.divide(out, 0)
        bronze.synchronize()
        print(out.numpy().tolist())
        lib.wild(out, 16)
        try:
            bronze.synchronize()
        except bronze.DeviceError as e:
            print(e)
    """)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "[7, 8, 9, 10]" and "invalid memory access at 0x10 (SIGSEGV)" in lines[1], r.stdout
    assert "Fatal Python error" not in r.stderr, r.stderr


@pytest.mark.parametrize("install, fatal", [("faulthandler.enable()", 1), ("signal.signal(signal.SIGSEGV, signal.SIG_IGN)", 0)])
def test_a_fault_outside_kernels_reaches_a_handler_installed_after_the_first_launch(install, fatal):
    # The handler bronze displaced still gets faults that are not a kernel's,
    # once (faulthandler hands the fault back to the handler it replaced,
    # bronze's, which passes it on); an ignored fault ends the process, as
    # without bronze, rather than running again forever.
    r = run_python(after_the_first_launch(install) + """
        lib.fill(out, 2)
        bronze.synchronize()
        ctypes.string_at(0)
    """)
    assert r.returncode == -signal.SIGSEGV, (r.returncode, r.stderr)
    assert r.stderr.count("Fatal Python error: Segmentation fault") == fatal, r.stderr


def test_ctrl_c_interrupts_every_wait():
    # Each wait blocks on a kernel spinning on a flag; SIGINT raises
    # KeyboardInterrupt there, then the flag lets the kernel finish. The
    # signal is sent only once the waiting call's `try` is entered (the
    # handshake): a timer started before it could fire earlier under load,
    # outside the `try`, and leave the kernel spinning at exit.
    code = f"""
        import ctypes, os, signal, threading, time
        import bronze
        lib = bronze.compile_shader({FAULTS!r})
        flag = bronze.zeros(1, dtype=bronze.int32)
        cell = ctypes.c_int.from_address(flag.data_ptr())
        s = bronze.Stream()
        waits = {{
            "synchronize": lambda: bronze.synchronize(),
            "numpy": lambda: flag.numpy(),
            "item": lambda: flag.item(),
            "stream": lambda: s.synchronize(),
            "event": lambda: e.synchronize(),
            "empty_cache": lambda: bronze.empty_cache(),
        }}
        for name, wait in waits.items():
            cell.value = 0
            with bronze.stream(s):
                lib.spin(flag, threads=64)
                e = bronze.Event()
                e.record()
            entered = threading.Event()
            def interrupt():
                entered.wait()
                time.sleep(0.3)  # into the wait, as a rule; a signal just before it lands in the same try
                os.kill(os.getpid(), signal.SIGINT)
            sender = threading.Thread(target=interrupt)
            sender.start()
            try:
                entered.set()
                wait()
                print(name, "returned")
            except KeyboardInterrupt:
                print(name, "interrupted")
            sender.join()
            cell.value = 1
            bronze.synchronize()
    """
    r = run_python(code)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[:-1] == [f"{w} interrupted" for w in
                                          ["synchronize", "numpy", "item", "stream", "event", "empty_cache"]]


# Each in a child process: before the guards these killed the process.
OVERRUNS = """
kernel void tail(device float* o, uint i [[thread_position_in_grid]]) { o[i] = 1; }
kernel void before(device float* o, uint i [[thread_position_in_grid]]) { o[-int(i) - 1] = 1; }
kernel void grouped_tail(device float* o, uint i [[thread_position_in_grid]]) {
  threadgroup_barrier(mem_flags::mem_device);
  o[i] = 1;
}
"""


def fault_then_serve(compile_line, keep_line, launch, serve):
    """In a child: a launch that should fail, its error printed, then the
    runtime still serving: prints "serves <sum of 1000 ones> <sum of keep>"."""
    return run_python(f"""
        import bronze
        {compile_line}
        {keep_line}
        {launch}
        try:
            bronze.synchronize()
            print("no error")
        except bronze.DeviceError as e:
            print(e)
        y = bronze.ones(1000)
        {serve}
        bronze.synchronize()
        print("serves", float(y.numpy().sum()), float(keep.numpy().sum()))
    """)


@pytest.mark.parametrize("kernel, given, threads, where, room", [
    ("tail", "x", 1 << 22, "past the end", 64), ("before", "x", 1 << 22, "before the start", 64),
    ("tail", "big", (1 << 20) + 4096, "past the end", 4 << 20),
    ("grouped_tail", "big", (1 << 20) + 4096, "past the end", 4 << 20),
    ("tail", "odd", (1 << 20) + 4096, "past the end", 4000016),
    ("before", "big", 1 << 20, "before the start", 4 << 20)])
def test_a_grid_past_its_buffer_stops_at_its_end(kernel, given, threads, where, room):
    # Each tensor ends against an inaccessible guard of its own (to within 16
    # bytes: 1,000,003 floats end 4 bytes short of theirs), wide enough that
    # threads far past the end (4M over 16 floats) fault in it too: the
    # launch fails naming the parameter, and the tensors allocated around it
    # keep their values.
    r = fault_then_serve(f"lib = bronze.compile_shader({OVERRUNS!r})",
                         "pre = bronze.full(1 << 18, 2.0); x = bronze.zeros(16); big = bronze.zeros(1 << 20); "
                         "odd = bronze.zeros(1000003); keep = bronze.full(1 << 18, 3.0)",
                         f"getattr(lib, {kernel!r})({given}, threads={threads}, group_size=256)",
                         "lib.tail(y); print('pre', float(pre.numpy().sum()))")
    assert r.returncode == 0, r.stderr
    assert (f"kernel '{kernel}' stopped at a write {where} of the memory of 'o' ({room} bytes from where it starts; "
            "a grid or an index past its buffer?)") in r.stdout, r.stdout
    assert "The overrun reached no other tensor" in r.stdout
    assert f"serves 1000.0 {3.0 * (1 << 18)}" in r.stdout
    assert f"pre {2.0 * (1 << 18)}" in r.stdout


def test_tensors_allocate_under_an_address_space_limit():
    # The wide guards are address space, which `ulimit -v` limits: past it, a
    # segment gets a page of guard each side, and tensors still allocate and
    # still stop a grid at their end.
    r = run_python(f"""
        import resource, bronze
        lib = bronze.compile_shader({OVERRUNS!r})
        lib.tail(bronze.zeros(4)); bronze.synchronize()
        used = int(open("/proc/self/statm").read().split()[0]) * resource.getpagesize()
        resource.setrlimit(resource.RLIMIT_AS, (used + (160 << 20), resource.RLIM_INFINITY))
        ts = [bronze.full(1 << 18, float(i)) for i in range(8)]
        print("sum", sum(float(t.numpy().sum()) for t in ts))
        lib.tail(ts[-1], threads=(1 << 18) + 64)
        try:
            bronze.synchronize()
        except bronze.DeviceError as e:
            print(e)
    """)
    assert r.returncode == 0, r.stderr
    assert f"sum {28.0 * (1 << 18)}" in r.stdout
    assert "kernel 'tail' stopped at a write past the end of the memory of 'o' (1048576 bytes" in r.stdout


PRIVATE_ARRAYS = """
kernel void plain(device float* o, device const int* idx, uint i [[thread_position_in_grid]]) {
  float tmp[8] = {0};
  tmp[idx[i]] = 1.0f;
  o[i] = tmp[0];
}
kernel void grouped(device float* o, device const int* idx, uint i [[thread_position_in_grid]]) {
  float tmp[8] = {0};
  threadgroup_barrier(mem_flags::mem_threadgroup);
  tmp[idx[i]] = 1.0f;
  o[i] = tmp[0];
}
kernel void acc(device float* o, device const float* a, constant int& n, uint i [[thread_position_in_grid]]) {
  float tmp[8];
  for (int j = 0; j < n; ++j) tmp[j] = a[i] + j;
  o[i] = tmp[0] + tmp[7];
}
"""


@pytest.mark.parametrize("validate", [False, True])
@pytest.mark.parametrize("kernel, index", [("plain", 200), ("plain", 20000), ("grouped", 20000)])
def test_an_index_past_a_private_array_fails_the_launch(kernel, index, validate):
    # It killed the process (SIGSEGV) with or without validate=True: the write
    # landed in the worker thread's own frames, the guard's jump buffer among them.
    r = fault_then_serve(f"lib = bronze.compile_shader({PRIVATE_ARRAYS!r}, validate={validate})",
                         "keep = bronze.full(1000, 3.0)",
                         f"getattr(lib, {kernel!r})(bronze.zeros(64), bronze.tensor([0] * 63 + [{index}], dtype=bronze.int32))",
                         "lib.plain(y, bronze.zeros(1000, dtype=bronze.int32))")
    assert r.returncode == 0, r.stderr
    assert f"kernel '{kernel}'" in r.stdout
    if validate:
        assert f"out-of-bounds index {index} into an array 'float[8]' (8 elements) at shader.metal:" in r.stdout
    elif kernel == "plain":
        assert "wrote past the top of its stack" in r.stdout
    assert "serves 1000.0 3000.0" in r.stdout   # the overrun touched nothing of bronze's or the tensors'


def test_validate_stops_a_private_array_overflow_within_the_time_limit():
    # validate=True used to make this kernel spin forever (the loop wrote over
    # its own counter) past any time limit; now the first bad index stops it.
    # The limit is far above the launch's time: it is not what stops it.
    code = f"""
        import bronze
        bronze.set_kernel_time_limit(60)
        lib = bronze.compile_shader({PRIVATE_ARRAYS!r}, validate=True)
        for n in (12, 32, 100000):
            lib.acc(bronze.zeros(4), bronze.ones(4), n)
            try:
                bronze.synchronize()
                print(n, "no error")
            except bronze.DeviceError as e:
                print(n, "index", str(e).split("out-of-bounds index ")[1].split(" ")[0])
    """
    r = run_python(code)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[:-1] == ["12 index 8", "32 index 8", "100000 index 8"]


def test_time_limit_stops_a_validated_runaway(lib):
    # About 2^37 dependent steps: far past the limit on any machine.
    validated = bronze.compile_shader(
        "kernel void slow(device float* o, constant int& reps, uint i [[thread_position_in_grid]]) "
        "{ float s = 0; for (int r = 0; r < reps; ++r) s = s * 0.999f + 1.0f; o[i] = s; }", validate=True)
    bronze.set_kernel_time_limit(0.2)
    out = bronze.zeros(64)
    assert "ran past the kernel time limit of 0.2 s" in launch_error(lambda: validated.slow(out, 2**31 - 1))
    still_serves(lib)


THREADGROUP = """
kernel void tg(device float* o, threadgroup float* s [[threadgroup(0)]], uint l [[thread_index_in_threadgroup]],
               uint i [[thread_position_in_grid]]) {
  s[l] = i;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  o[i] = s[l];
}
"""


@pytest.mark.parametrize("validate", [False, True])
def test_threadgroup_memory_smaller_than_used_fails_the_launch(validate):
    # It used to corrupt the C heap: the launch "succeeded" and the process
    # aborted later in unrelated code (malloc_consolidate).
    code = f"""
        import numpy as np
        import bronze
        lib = bronze.compile_shader({THREADGROUP!r}, validate={validate})
        keep = [bronze.full(1024, 5.0) for _ in range(4)]
        x = bronze.zeros(4096)
        lib.tg(x, threadgroup_memory=4, group_size=64)   # needs 256 bytes
        try:
            bronze.synchronize()
            print("no error")
        except bronze.DeviceError as e:
            print(e)
        y = [np.ones(10000) for _ in range(100)]
        z = [bronze.ones(1000) for _ in range(50)]
        lib.tg(x, threadgroup_memory=256, group_size=64)
        bronze.synchronize()
        print("serves", float(x.numpy().sum()))
    """
    r = run_python(code)
    assert r.returncode == 0, r.stderr
    assert "kernel 'tg' stopped at an invalid memory access" in r.stdout
    assert f"serves {float(sum(range(4096)))}" in r.stdout
