"""The on-disk compile cache, exercised in fresh processes (the cache
directory is chosen once per process)."""

import json
import os
import subprocess
import sys

import bronze

KERNEL = "kernel void k(device float* o, uint i [[thread_position_in_grid]]) { o[i] = %s; }"

PROBE = """
import json, sys, bronze
lib = bronze.compile_shader(sys.argv[1])
x = bronze.empty(4)
lib.k(x)
print(json.dumps({"cache": bronze.cache_info(), "x": x.numpy().tolist()}))
"""


def run(cache_dir, value):
    env = dict(os.environ, BRONZE_CACHE_DIR=str(cache_dir))
    env.pop("BRONZE_CACHE_DISABLE", None)
    out = subprocess.run([sys.executable, "-c", PROBE, KERNEL % value], env=env, capture_output=True, text=True,
                         check=True, timeout=120)
    return json.loads(out.stdout)


def test_cold_then_warm_across_processes(tmp_path):
    cache = tmp_path / "cache"
    first = run(cache, "7.0f")
    assert first["cache"]["enabled"] and first["cache"]["stores"] == 1 and first["cache"]["hits"] == 0
    assert (cache.stat().st_mode & 0o777) == 0o700
    second = run(cache, "7.0f")
    assert second["cache"]["hits"] == 1 and second["cache"]["stores"] == 0
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
