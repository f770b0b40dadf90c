"""bronze's Python-level benchmarks on the CPU backend, each against a peer
measured in the same run (NumPy, PoCL when installed). Prints a table.

    scripts/bench            # installs PoCL/pyopencl, builds, runs this and bench_runtime
    python bench/bench_python.py [--quick]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

import bronze

SAXPY = """
kernel void saxpy(device float* y, device const float* x, constant float& a, uint i [[thread_position_in_grid]]) {
  y[i] = a * x[i] + y[i];
}
kernel void noop(device float* y, constant float& a, uint i [[thread_position_in_grid]]) {}
kernel void reduce(device const float* x, device atomic_float* out, constant uint& n,
                   uint i [[thread_position_in_grid]], uint lane [[thread_index_in_simdgroup]],
                   uint sg [[simdgroup_index_in_threadgroup]], uint tid [[thread_index_in_threadgroup]],
                   uint nsg [[simdgroups_per_threadgroup]]) {
  threadgroup float part[32];
  float v = 0.0f;
  for (uint k = i; k < n; k += 1024 * 64) v += x[k];
  v = simd_sum(v);
  if (lane == 0) part[sg] = v;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (sg == 0) {
    v = simd_sum(lane < nsg ? part[lane] : 0.0f);
    if (lane == 0) atomic_fetch_add_explicit(out, v, memory_order_relaxed);
  }
}
kernel void barriers(device float* y, constant uint& n, uint i [[thread_position_in_grid]]) {
  float v = i;
  for (uint k = 0; k < n; ++k) {
    v = v * 0.5f + 1.0f;
    threadgroup_barrier(mem_flags::mem_none);
  }
  y[i] = v;
}
"""

OPENCL = """
__kernel void saxpy(__global float* y, __global const float* x, const float a) {
  size_t i = get_global_id(0); y[i] = a * x[i] + y[i];
}
__kernel void reduce(__global const float* x, __global float* out, const uint n, __local float* buf) {
  size_t i = get_global_id(0), tid = get_local_id(0), tpg = get_local_size(0);
  float v = 0.0f;
  for (size_t k = i; k < n; k += get_global_size(0)) v += x[k];
  buf[tid] = v; barrier(CLK_LOCAL_MEM_FENCE);
  for (size_t s = tpg / 2; s > 0; s >>= 1) { if (tid < s) buf[tid] += buf[tid + s]; barrier(CLK_LOCAL_MEM_FENCE); }
  if (tid == 0) out[get_group_id(0)] = buf[0];
}
"""


def best(fn, repeat=5, number=1):
    """Best seconds per call over `repeat` rounds of `number` calls."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - t0) / number)
    return min(times)


ROWS = []


def row(name, ours, peer, peer_name, unit, higher_is_better=False):
    ratio = (ours / peer if higher_is_better else peer / ours) if peer else float("nan")
    ROWS.append((name, ours, peer, peer_name, unit, ratio))


def bench_alloc(quick):
    n = 2000 if quick else 20000
    for size in (1024, 1 << 20, 64 << 20):
        elems = size // 4
        ours = best(lambda: bronze.empty(elems), number=n)
        peer = best(lambda: np.empty(elems, dtype=np.float32), number=n)
        row(f"alloc+free {size // 1024} KiB", ours * 1e6, peer * 1e6, "np.empty", "us")


def bench_launch(lib, quick):
    n = 2000 if quick else 20000
    x = bronze.empty(1)
    a = np.empty(1, dtype=np.float32)
    lib.noop(x, 1.0)
    bronze.synchronize()
    ours = best(lambda: lib.noop(x, 1.0), number=n)
    bronze.synchronize()
    peer = best(lambda: np.add(a, 1.0, out=a), number=n)
    row("call overhead lib.k(x, 1.0)", ours * 1e6, peer * 1e6, "NumPy ufunc call", "us")

    def launch_sync():
        lib.noop(x, 1.0)
        bronze.synchronize()

    ours = best(launch_sync, number=n // 4)
    row("launch + synchronize", ours * 1e6, peer * 1e6, "NumPy ufunc call", "us")


def bench_compile(quick):
    probe = "import sys, time, bronze; t=time.perf_counter(); bronze.compile_shader(sys.argv[1]); print(time.perf_counter()-t)"
    src = SAXPY + f"\n// {time.time()}\n"  # unique: a cold compile
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, BRONZE_CACHE_DIR=d)
        run = lambda: float(subprocess.run([sys.executable, "-c", probe, src], env=env, capture_output=True,
                                           text=True, check=True).stdout)
        cold, warm = run(), run()
    lib_src = SAXPY + f"\n// hot {time.time()}\n"
    held = bronze.compile_shader(lib_src)  # the memo finds a library while one lives
    hot = best(lambda: bronze.compile_shader(lib_src), number=1000)
    del held
    row("compile_shader cold (host C++ compiler)", cold * 1e3, None, "-", "ms")
    row("compile_shader warm (disk cache)", warm * 1e3, cold * 1e3, "cold compile", "ms")
    row("compile_shader hot (in-process)", hot * 1e6, warm * 1e6, "warm compile", "us")


def bench_random(quick):
    """Philox normals (bit-identical to the CUDA backend's) against NumPy's PCG64 + ziggurat."""
    n = (1 << 22) if quick else (1 << 24)
    gen = np.random.default_rng(0)
    bronze.randn(n)
    bronze.synchronize()

    def ours():
        bronze.randn(n)
        bronze.synchronize()

    t_ours = best(ours)
    t_np = best(lambda: gen.standard_normal(n, dtype=np.float32))
    gbs = lambda t: 4 * n / t / 1e9
    row(f"randn {n >> 20}M float32", gbs(t_ours), gbs(t_np), "np.random standard_normal", "GB/s", higher_is_better=True)


def bench_throughput(lib, quick, cl):
    n = (1 << 22) if quick else (1 << 24)
    xs = np.random.default_rng(0).random(n, dtype=np.float32)
    x, y = bronze.asarray(xs.copy()), bronze.asarray(np.zeros(n, dtype=np.float32))
    yn = np.zeros(n, dtype=np.float32)

    def ours():
        lib.saxpy(y, x, 2.0)
        bronze.synchronize()

    ours(), ours()
    gbs = lambda t: 3 * 4 * n / t / 1e9
    t_ours = best(ours)

    def numpy_saxpy():
        yn[:] += np.float32(2.0) * xs

    t_np = best(numpy_saxpy)
    row(f"saxpy {n >> 20}M floats", gbs(t_ours), gbs(t_np), "NumPy y += a*x", "GB/s", higher_is_better=True)
    if cl:
        t_cl = cl.saxpy(xs, n)
        row(f"saxpy {n >> 20}M floats vs OpenCL", gbs(t_ours), gbs(t_cl), "PoCL (same kernel, OpenCL C)", "GB/s", True)

    out = bronze.zeros(1)

    def ours_red():
        out.zero_()
        lib.reduce(x, out, n, threads=1024 * 64, group_size=1024)
        bronze.synchronize()

    ours_red()
    assert abs(out.item() - float(xs.sum(dtype=np.float64))) < 1e-3 * n
    t_red = best(ours_red)
    t_np = best(lambda: xs.sum())
    row(f"sum {n >> 20}M floats", 4 * n / t_red / 1e9, 4 * n / t_np / 1e9, "np.sum", "GB/s", True)
    if cl:
        t_cl = cl.reduce(xs, n)
        row(f"sum {n >> 20}M floats vs OpenCL", 4 * n / t_red / 1e9, 4 * n / t_cl / 1e9, "PoCL (OpenCL C)", "GB/s", True)


def bench_barrier(lib, quick):
    """What a threadgroup_barrier costs each thread: the CPU runs a group's
    threads as fibers, so this is about two fiber switches. One group on one
    core, so the figure is the switch, not the thread pool."""
    group, n = 1024, 200 if quick else 1000
    y = bronze.empty(group)

    def run():
        lib.barriers(y, n, threads=group, group_size=group)
        bronze.synchronize()

    run()
    t = best(run, repeat=10)
    row("threadgroup_barrier, 1024-thread group", t / (group * n) * 1e9, None, "-", "ns/thread")


class OpenCLPeer:
    """The same kernels in OpenCL C on PoCL (Debian's pocl-opencl-icd)."""

    def __init__(self):
        import pyopencl as cl

        platforms = [p for p in cl.get_platforms() if "Portable" in p.name or "pocl" in p.name.lower()]
        if not platforms:
            raise RuntimeError("no PoCL platform")
        self.cl = cl
        self.ctx = cl.Context(platforms[0].get_devices())
        self.q = cl.CommandQueue(self.ctx)
        self.prg = cl.Program(self.ctx, OPENCL).build()

    def saxpy(self, xs, n):
        cl = self.cl
        mf = cl.mem_flags
        x = cl.Buffer(self.ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=xs)
        y = cl.Buffer(self.ctx, mf.READ_WRITE, size=4 * n)
        k = self.prg.saxpy

        def run():
            k(self.q, (n,), None, y, x, np.float32(2.0))
            self.q.finish()

        run()
        return best(run)

    def reduce(self, xs, n):
        cl = self.cl
        mf = cl.mem_flags
        x = cl.Buffer(self.ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=xs)
        out = cl.Buffer(self.ctx, mf.WRITE_ONLY, size=4 * 64)
        k = self.prg.reduce

        def run():
            k(self.q, (1024 * 64,), (1024,), x, out, np.uint32(n), cl.LocalMemory(4 * 1024))
            self.q.finish()

        run()
        return best(run)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer iterations and smaller arrays")
    ap.add_argument("--json", help="also write the rows as JSON here")
    args = ap.parse_args()
    try:
        cl = OpenCLPeer()
    except Exception as e:  # PoCL is optional: scripts/bench installs it
        print(f"(PoCL peer unavailable: {e})")
        cl = None
    lib = bronze.compile_shader(SAXPY)
    bench_alloc(args.quick)
    bench_launch(lib, args.quick)
    bench_compile(args.quick)
    bench_throughput(lib, args.quick, cl)
    bench_random(args.quick)
    bench_barrier(lib, args.quick)

    print(f"\nbronze {bronze.__version__} on {bronze.get_device_properties().name}, "
          f"{bronze.get_device_properties().multi_processor_count} threads")
    print(f"{'benchmark':<42} {'bronze':>10} {'peer':>10}  {'unit':<5} {'ratio':>6}  peer")
    for name, ours, peer, peer_name, unit, ratio in ROWS:
        p = f"{peer:10.3f}" if peer else f"{'-':>10}"
        r = f"{ratio:6.2f}" if peer else f"{'-':>6}"
        print(f"{name:<42} {ours:10.3f} {p}  {unit:<5} {r}  {peer_name}")
    print("ratio > 1: bronze is faster (for times: peer/bronze; for GB/s: bronze/peer)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump([dict(zip(("name", "bronze", "peer", "peer_name", "unit", "ratio"), r)) for r in ROWS], f, indent=1)


if __name__ == "__main__":
    main()
