"""The on-disk compile cache, exercised in fresh processes (the cache
directory is chosen once per process)."""

import json
import os
import shutil
import subprocess
import sys
import time

import pytest

import bronze

KERNEL = "kernel void k(device float* o, uint i [[thread_position_in_grid]]) { o[i] = %s; }"

PROBE = """
import json, sys, bronze
lib = bronze.compile_shader(sys.argv[1])
x = bronze.empty(4)
lib.k(x)
print(json.dumps({"cache": bronze.cache_info(), "x": x.numpy().tolist()}))
"""


def run(cache_dir, value, want_stderr=False, **env_extra):
    env = dict(os.environ, BRONZE_CACHE_DIR=str(cache_dir), **env_extra)
    env.pop("BRONZE_CACHE_DISABLE", None)
    out = subprocess.run([sys.executable, "-c", PROBE, KERNEL % value], env=env, capture_output=True, text=True,
                         check=True, timeout=120)
    return (json.loads(out.stdout), out.stderr) if want_stderr else json.loads(out.stdout)


def test_cold_then_warm_across_processes(tmp_path):
    cache = tmp_path / "cache"
    first = run(cache, "7.0f")
    # Two entries: the preprocessed unit and its object.
    assert first["cache"]["enabled"] and first["cache"]["stores"] == 2 and first["cache"]["hits"] == 0
    assert (cache.stat().st_mode & 0o777) == 0o700
    second = run(cache, "7.0f")
    assert second["cache"]["hits"] == 2 and second["cache"]["stores"] == 0
    assert second["x"] == [7.0] * 4


def test_corrupt_entry_is_detected_and_rebuilt(tmp_path):
    cache = tmp_path / "cache"
    run(cache, "1.0f")
    (entry,) = [p for p in cache.iterdir() if p.name.endswith(".so")]
    data = entry.read_bytes()
    entry.write_bytes(data[: len(data) // 2])  # truncated
    again = run(cache, "1.0f")
    assert again["cache"]["corrupt"] == 1 and again["cache"]["stores"] == 1
    assert again["x"] == [1.0] * 4
    flipped = bytearray(entry.read_bytes())
    flipped[100] ^= 0xFF  # one bad byte
    entry.write_bytes(bytes(flipped))
    assert run(cache, "1.0f")["cache"]["corrupt"] == 1


@pytest.mark.parametrize("how", ["copy", "symlink", "fifo"])
def test_an_entry_swapped_for_another_keys_is_rebuilt_never_run(tmp_path, how):
    # The checksum covers the key: B's object under A's name runs neither.
    cache = tmp_path / "cache"
    run(cache, "1.0f")
    (a,) = [p for p in cache.iterdir() if p.name.endswith(".so")]
    run(cache, "2.0f")
    (b,) = [p for p in cache.iterdir() if p.name.endswith(".so") and p != a]
    a.unlink()
    if how == "copy":
        shutil.copyfile(b, a)
    elif how == "symlink":
        a.symlink_to(b)
    else:
        os.mkfifo(a)  # read without blocking: not a regular file
    again = run(cache, "1.0f")
    assert again["x"] == [1.0] * 4
    assert again["cache"]["hits"] == 1 and again["cache"]["stores"] == 1  # the preprocessed unit hits


def test_cache_writable_by_others_is_refused(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    r = run(shared, "2.0f")
    assert not r["cache"]["enabled"]
    assert "writable by other users" in r["cache"]["status"]
    assert r["x"] == [2.0] * 4  # still compiles, without caching
    assert not any(shared.iterdir())


def test_cache_info_in_process():
    info = bronze.cache_info()
    assert set(info) >= {"enabled", "dir", "status", "hits", "misses", "stores", "corrupt", "compiler"}
    assert info["compiler"]


def test_trim_touches_only_its_own_entries_and_keeps_the_one_just_built(tmp_path):
    env = dict(os.environ)
    env.pop("BRONZE_CACHE_DISABLE", None)
    probe = ("import bronze\nfor i in range(3):\n    lib = bronze.compile_shader("
             "'kernel void k(device float* o) { o[0] = %d; }' % i)\n    x = bronze.zeros(1)\n    lib.k(x)\n"
             "    assert x.item() == i\nprint(bronze.cache_info()['status'])\n")
    # Someone's folder: used, never trimmed, their files untouched.
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o700)
    precious = theirs / ("a" * 70)  # a long name, as the old trim deleted
    precious.write_text("not bronze's")
    (theirs / "notes.txt").write_text("mine")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120,
                         env=dict(env, BRONZE_CACHE_DIR=str(theirs), BRONZE_CACHE_MAX_BYTES="1K"))
    assert out.returncode == 0, out.stderr
    assert "never trimmed" in out.stdout and precious.read_text() == "not bronze's"
    # bronze's own folder under a bound smaller than one entry: every compile still works.
    ours = tmp_path / "ours"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120,
                         env=dict(env, BRONZE_CACHE_DIR=str(ours), BRONZE_CACHE_MAX_BYTES="1K"))
    assert out.returncode == 0, out.stderr
    assert (ours / "CACHEDIR.TAG").exists()
    assert len([p for p in ours.iterdir() if p.suffix == ".so"]) == 1  # the rest trimmed
    bad = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120,
                         env=dict(env, BRONZE_CACHE_DIR=str(ours), BRONZE_CACHE_MAX_BYTES="2 GiB please"))
    assert bad.returncode != 0 and "BRONZE_CACHE_MAX_BYTES" in bad.stderr


def test_unwritable_cache_folder_falls_back_with_a_warning():
    # procfs: a folder of the user's own that nobody, root included, can create files in.
    r, err = run("/proc/self/fdinfo", "3.0f", want_stderr=True)
    assert r["x"] == [3.0] * 4
    assert r["cache"]["enabled"] and not r["cache"]["writable"]
    assert "private folders" in r["cache"]["status"]
    assert "RuntimeWarning: bronze: the compile cache /proc/self/fdinfo (not written to: " in err
    assert err.count("RuntimeWarning") == 1  # said once


def _can_mount_tmpfs():
    return shutil.which("unshare") is not None and subprocess.run(
        ["unshare", "-rm", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt"], capture_output=True).returncode == 0


@pytest.mark.skipif(not _can_mount_tmpfs(), reason="needs user namespaces to mount a small tmpfs")
def test_full_cache_folder_falls_back_with_a_warning(tmp_path):
    # A 512 KiB file system, filled: the build cannot happen there.
    full = tmp_path / "full"
    full.mkdir(mode=0o700)
    code = ("import json, bronze\n"
            "lib = bronze.compile_shader('kernel void k(device float* o, uint i [[thread_position_in_grid]]) { o[i] = 6; }')\n"
            "x = bronze.zeros(2)\nlib.k(x)\nprint(json.dumps({'x': x.numpy().tolist(), 'cache': bronze.cache_info()}))\n")
    script = (f"mount -t tmpfs -o size=512k tmpfs {full} && chmod 700 {full} && "
              f"(dd if=/dev/zero of={full}/filler bs=4k 2>/dev/null; true) && "
              f"BRONZE_CACHE_DIR={full}/cache {sys.executable} -c \"$CODE\"")
    r = subprocess.run(["unshare", "-rm", "sh", "-c", script], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, CODE=code))
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["x"] == [6.0, 6.0]
    assert not out["cache"]["writable"] and "full: 0 KiB free" in out["cache"]["status"]
    assert r.stderr.count("RuntimeWarning: bronze: the compile cache") == 1


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a mode-0500 folder")
def test_read_only_cache_still_serves_its_entries(tmp_path):
    cache = tmp_path / "cache"
    run(cache, "4.0f")
    cache.chmod(0o500)
    try:
        hit, err = run(cache, "4.0f", want_stderr=True)
        assert hit["cache"]["hits"] == 1 and hit["x"] == [4.0] * 4 and "RuntimeWarning" in err
        miss = run(cache, "5.0f")
        assert miss["x"] == [5.0] * 4 and miss["cache"]["stores"] == 0 and not miss["cache"]["writable"]
    finally:
        cache.chmod(0o700)


def test_build_folders_of_killed_processes_are_removed_later(tmp_path):
    dead = subprocess.Popen(["true"])
    dead.wait()
    cache, tmp = tmp_path / "cache", tmp_path / "tmp"
    cache.mkdir(mode=0o700)
    tmp.mkdir()
    hour_ago = time.time() - 3600

    def leftover(where, pid, old=True):
        d = where / f"bronze-build-{pid}-{'old' if old else 'new'}Ab1"
        (d / "sub").mkdir(parents=True)
        (d / "sub" / "kernel.cpp").write_text("// a killed build's file")
        if old:
            os.utime(d, (hour_ago, hour_ago))
        return d

    killed_in_cache, killed_in_tmp = leftover(cache, dead.pid), leftover(tmp, dead.pid)
    running = leftover(cache, os.getpid())  # its process still runs
    recent = leftover(tmp, dead.pid, old=False)  # may be another pid namespace's live build
    r = run(cache, "6.0f", TMPDIR=str(tmp))
    assert r["x"] == [6.0] * 4
    assert not killed_in_cache.exists() and not killed_in_tmp.exists()
    assert running.exists() and recent.exists()
    assert not [p for p in cache.iterdir() if p.name.startswith("bronze-build-") and p != running]


def test_a_relative_cache_folder_is_where_the_process_started(tmp_path):
    # N47: it stopped caching after os.chdir.
    code = ("import bronze, os, json\n"
            "os.chdir('sub')\n"
            "bronze.compile_shader('kernel void k(device float* o) { o[0] = 1; }')\n"
            "print(json.dumps(bronze.cache_info()))\n")
    (tmp_path / "sub").mkdir()
    env = dict(os.environ, BRONZE_CACHE_DIR="relcache")
    env.pop("BRONZE_CACHE_DISABLE", None)
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                         check=True, timeout=120)
    info = json.loads(out.stdout.splitlines()[-1])
    assert info["stores"] == 2 and info["dir"] == str(tmp_path / "relcache"), info  # the unit and its object
    assert not (tmp_path / "sub" / "relcache").exists()


@pytest.mark.parametrize("how", ["dotdot", "link", "tmpdir"])
def test_standard_headers_are_found_whatever_the_build_folders_path(tmp_path, how):
    # `BRONZE_CACHE_DIR=$PWD/../cache` (the GPU check's bench run) made every
    # <metal_*> include "no such file": the front end matched build paths as text.
    (tmp_path / "sub").mkdir()
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    env = dict(os.environ)
    env.pop("BRONZE_CACHE_DISABLE", None)
    if how == "dotdot":
        env["BRONZE_CACHE_DIR"] = f"{tmp_path}/sub/../cache"
    elif how == "link":
        env["BRONZE_CACHE_DIR"] = f"{tmp_path}/link/cache"
    else:  # no cache: builds go to $TMPDIR
        env.update(BRONZE_CACHE_DISABLE="1", TMPDIR=f"{tmp_path}/sub/../real")
    src = "#include <metal_stdlib>\n#include <metal_integer>\nusing namespace metal;\n" + KERNEL % "clamp(3.0f, 0.0f, 2.0f)"
    out = subprocess.run([sys.executable, "-c", PROBE, src], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["x"] == [2.0] * 4


def compile_in_threads(n, src):
    """compile_shader(src) in n threads released together: (libraries, errors)."""
    import threading
    start, libs, errors = threading.Barrier(n), [], []

    def compile_it():
        start.wait()
        try:
            libs.append(bronze.compile_shader(src))
        except Exception as e:  # noqa: BLE001  (the caller checks them)
            errors.append(e)

    threads = [threading.Thread(target=compile_it) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return libs, errors


def test_threads_compiling_one_source_share_one_build():
    # N48: 8 threads compiling one source ran 8 compilers.
    import uuid
    src = KERNEL % f"{uuid.uuid4().int % 100000}.0f"  # a source no cache has seen
    before = bronze.cache_info()
    libs, errors = compile_in_threads(8, src)
    assert not errors and len(libs) == 8
    after = bronze.cache_info()
    if after["enabled"]:
        # Looked up once (the preprocessed unit, the unit's record, its object) and built once.
        assert after["misses"] - before["misses"] == 3 and after["stores"] - before["stores"] <= 2


def test_a_failed_compile_fails_every_thread_waiting_for_it():
    libs, errors = compile_in_threads(4, "kernel void f(device float* o) { o[0] = undefined_name_48; }")
    assert not libs and len(errors) == 4
    assert all(isinstance(e, bronze.ShaderCompileError) and "undefined_name_48" in str(e) for e in errors)


@pytest.mark.parametrize("value, works", [("-1", False), ("1e3", False), (" 5", False), ("99999999999999999999", False),
                                          ("99999999999999999", True), ("1T", True)])
def test_the_compile_time_limit_from_the_environment(value, works):
    # N30: -1, huge values and 1T made every compile fail at once ("past its
    # time limit of 18446744073709551615 s"); a bad value is an error naming it.
    code = ("import bronze\n"
            "try:\n    bronze.compile_shader('kernel void k(device float* o) { o[0] = 3; }', device='cpu'); print('ok')\n"
            "except Exception as e:\n    print(type(e).__name__, e)\n")
    env = dict(os.environ, BRONZE_COMPILE_TIMEOUT=value, BRONZE_CACHE_DISABLE="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120).stdout
    if works:
        assert out.strip() == "ok", out
    else:
        assert "BRONZE_COMPILE_TIMEOUT" in out and "ValueError" in out, out


def test_a_failed_build_leaves_no_build_folder(tmp_path):
    # N32: a failed link left bronze-build-PID-* (with the compiler's .su
    # report) in the cache for the life of the process.
    code = ("import bronze, os, sys\n"
            "for k in range(3):\n"
            "    try:\n"
            "        bronze.compile_shader('float helper%d(float);\\n"
            "kernel void f(device float* o) { o[0] = helper%d(1.0f); }' % (k, k), device='cpu')\n"
            "    except bronze.ShaderCompileError:\n"
            "        pass\n"
            "print(sorted(n for n in os.listdir(sys.argv[1]) if n.startswith('bronze-build-')))\n")
    cache = tmp_path / "cache"
    env = dict(os.environ, BRONZE_CACHE_DIR=str(cache))
    env.pop("BRONZE_CACHE_DISABLE", None)
    out = subprocess.run([sys.executable, "-c", code, str(cache)], env=env, capture_output=True, text=True,
                         check=True, timeout=120).stdout
    assert out.strip() == "[]", out


FULL_DISK = """
import bronze
try:
    bronze.compile_shader("constant float table[1 << 24] = {1.0f};\\n"
                          "kernel void k(device float* o, uint i [[thread_position_in_grid]]) { o[i] = table[i]; }")
except bronze.ShaderCompileError as e:
    print(e)
"""


def test_a_full_disk_is_reported_as_such(tmp_path):
    # N33: the cache on a nearly full disk made the link fail with "the
    # kernel signature could not be compiled: collect2: error: ld returned 1
    # exit status": the linker's own line went to a log file on that full
    # disk. Messages come through a pipe, and a failure that is no compile
    # error is shown as the tools' words. A 40 MiB file system (in a mount
    # namespace of its own; the cache builds elsewhere below 32 MiB free) is
    # too small for the kernel's 64 MiB table.
    cache = tmp_path / "small"
    cache.mkdir()
    if subprocess.run(["unshare", "-Urm", "true"], capture_output=True).returncode != 0:
        pytest.skip("no user and mount namespaces here to mount a small file system in")
    env = dict(os.environ, BRONZE_CACHE_DIR=str(cache))
    env.pop("BRONZE_CACHE_DISABLE", None)
    r = subprocess.run(["unshare", "-Urm", "sh", "-c", 'mount -t tmpfs -o size=40m,mode=700 tmpfs "$1" && exec "$2" -c "$3"',
                        "sh", str(cache), sys.executable, FULL_DISK], env=env, capture_output=True, text=True,
                       timeout=300)
    assert "No space left on device" in r.stdout, r.stdout + r.stderr
    assert "the build failed" in r.stdout and "kernel signature" not in r.stdout


INCLUDING = """
import json, sys, bronze
lib = bronze.compile_shader('#include "v.h"\\nkernel void k(device float* o, uint i [[thread_position_in_grid]]) { o[i] = V; }',
                            filename=sys.argv[1], include_dirs=sys.argv[2:])
x = bronze.zeros(2)
lib.k(x)
print(json.dumps({"x": x.numpy().tolist(), "cache": bronze.cache_info()}))
"""


def test_a_preprocessed_unit_is_taken_only_while_the_files_it_read_are_as_they_were(tmp_path):
    # The cache keeps preprocessed units (no preprocessor run for a unit seen
    # before), keyed by the source and options, with each file looked at:
    # an edited header, or one that appears earlier in the search, is read again.
    src, first, second = tmp_path / "src", tmp_path / "first", tmp_path / "second"
    for d in (src, first, second):
        d.mkdir()
    (second / "v.h").write_text("#define V 1.0f\n")
    env = dict(os.environ, BRONZE_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("BRONZE_CACHE_DISABLE", None)

    def x():
        out = subprocess.run([sys.executable, "-c", INCLUDING, str(src / "k.metal"), str(first), str(second)], env=env,
                             capture_output=True, text=True, check=True, timeout=120).stdout
        r = json.loads(out)
        return r["x"][0], r["cache"]["hits"]

    assert x() == (1.0, 0)
    assert x() == (1.0, 2)  # the preprocessed unit and the object
    (second / "v.h").write_text("#define V 2.0f\n")
    assert x()[0] == 2.0
    (first / "v.h").write_text("#define V 3.0f\n")  # found before second's now
    assert x()[0] == 3.0
