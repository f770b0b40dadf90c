"""bronze on CUDA against torch.cuda and CuPy in the same run (scripts/gpu-check
runs it on the GPU machine). Prints a table; ratio > 1: bronze is faster.

    python bench/bench_gpu.py [--libraries-only]
"""

import argparse
import os
import subprocess
import sys
import time

import bronze
import kernel_ports
import library_rows
import simdgroup_gemm

DEV = "cuda:0"


def best(fn, sync, repeat=5, number=1):
    """The best of `repeat` timings of `number` calls, per call (seconds)."""
    times = []
    for _ in range(repeat):
        sync()
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        sync()
        times.append((time.perf_counter() - t0) / number)
    return min(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--libraries-only", action="store_true",
                    help="only the real libraries' kernels (bench/library_rows.py): a short GPU run")
    args = ap.parse_args()
    import torch

    try:
        import cupy
    except ImportError:
        cupy = None
    bsync = lambda: bronze.synchronize(DEV)
    rows = []

    def row(name, ours, peer, peer_name, unit, higher_better=False):
        rows.append((name, ours, peer, peer_name, unit, (ours / peer) if higher_better else (peer / ours)))

    if args.libraries_only:
        library_rows.run(row, best, bsync, DEV, torch)
    else:
        all_rows(row, bsync, torch, cupy)
    print(f"\nbronze {bronze.__version__} on {bronze.get_device_properties(DEV).name}; torch {torch.__version__}"
          + (f", cupy {cupy.__version__}" if cupy else ""))
    print(f"{'benchmark':<52} {'bronze':>10} {'peer':>10}  {'unit':<8} {'ratio':>6}  peer")
    for name, ours, peer, peer_name, unit, ratio in rows:
        print(f"{name:<52} {ours:10.3f} {peer:10.3f}  {unit:<8} {ratio:6.2f}  {peer_name}")


def all_rows(row, bsync, torch, cupy):
    tsync = torch.cuda.synchronize
    n = 20000
    ours = best(lambda: bronze.empty(256, device=DEV), bsync, number=n)
    row("alloc+free 1 KiB", ours * 1e6, best(lambda: torch.empty(256, device="cuda"), tsync, number=n) * 1e6,
        "torch.empty", "us")
    if cupy is not None:
        row("alloc+free 1 KiB", ours * 1e6, best(lambda: cupy.empty(256, dtype=cupy.float32), cupy.cuda.Device().synchronize,
                                                 number=n) * 1e6, "cupy.empty", "us")

    m = 1 << 26  # 64M floats, 256 MiB
    bytes_out = 4 * m
    # Bandwidth rows time 10 launches between synchronizations, as
    # kernel_ports does: what is measured is the device's work, not each
    # library's synchronize latency (tens of microseconds against 0.2 ms).
    bw = dict(repeat=7, number=10)
    randn = best(lambda: bronze.randn(m, device=DEV), bsync, **bw)
    peer = best(lambda: torch.randn(m, device="cuda"), tsync, **bw)
    row("randn 64M float32", bytes_out / randn / 1e9, bytes_out / peer / 1e9, "torch.randn", "GB/s", True)
    uniform = best(lambda: bronze.rand(m, device=DEV), bsync, **bw)
    peer = best(lambda: torch.rand(m, device="cuda"), tsync, **bw)
    row("rand 64M float32", bytes_out / uniform / 1e9, bytes_out / peer / 1e9, "torch.rand", "GB/s", True)
    ours = best(lambda: bronze.randn(m // 2, dtype=bronze.float64, device=DEV), bsync, **bw)
    peer = best(lambda: torch.randn(m // 2, dtype=torch.float64, device="cuda"), tsync, **bw)
    row("randn 32M float64", bytes_out / ours / 1e9, bytes_out / peer / 1e9, "torch.randn", "GB/s", True)

    a, b = bronze.randn(m, device=DEV), bronze.randn(m, device=DEV)
    ta, tb = torch.randn(m, device="cuda"), torch.randn(m, device="cuda")
    ours = best(lambda: a + b, bsync, **bw)
    peer = best(lambda: ta + tb, tsync, **bw)
    copy = best(lambda: ta.clone(), tsync, **bw)
    row("a + b, 64M float32", 3 * bytes_out / ours / 1e9, 3 * bytes_out / peer / 1e9, "torch a + b", "GB/s", True)
    row("a + b vs copy bandwidth", 3 * bytes_out / ours / 1e9, 2 * bytes_out / copy / 1e9, "torch clone (D2D copy)", "GB/s", True)
    row("randn float32 vs copy bandwidth", bytes_out / randn / 1e9, 2 * bytes_out / copy / 1e9, "torch clone (D2D copy)",
        "GB/s", True)
    # The same Philox blocks with the cheapest transform: how much of randn's gap is the ziggurat.
    row("rand float32 vs copy bandwidth", bytes_out / uniform / 1e9, 2 * bytes_out / copy / 1e9, "torch clone (D2D copy)",
        "GB/s", True)

    # An elementwise Metal kernel (float4 loads) against the copy bandwidth.
    add = bronze.compile_shader("""
    kernel void add4(device const float4* a, device const float4* b, device float4* c,
                     uint i [[thread_position_in_grid]]) { c[i] = a[i] + b[i]; }""", device=DEV)
    c = bronze.empty(m, device=DEV)
    ours = best(lambda: add.add4(a, b, c, threads=m // 4, group_size=256), bsync, **bw)
    row("MSL add4 kernel vs copy bandwidth", 3 * bytes_out / ours / 1e9, 2 * bytes_out / copy / 1e9,
        "torch clone (D2D copy)", "GB/s", True)

    # Metal written like real libraries' kernels against line-by-line CUDA C++ ports.
    del a, b, c, ta, tb
    kernel_ports.run(row, best, bsync, 2 * bytes_out / copy / 1e9, DEV)

    launch_overheads(row, bsync, tsync, cupy, torch)
    compile_times(row, cupy, torch)

    k = 4096
    x, tx = bronze.randn(k, k, device=DEV), torch.randn(k, k, device="cuda")
    ours = best(lambda: x @ x, bsync)
    peer = best(lambda: tx @ tx, tsync)
    flops = 2 * k ** 3
    row("mm 4096^2 float32 (cuBLAS)", flops / ours / 1e12, flops / peer / 1e12, "torch mm", "TFLOP/s", True)
    del x, tx
    simdgroup_gemm.run(row, best, bsync, DEV)
    library_rows.run(row, best, bsync, DEV, torch)

    e0, e1 = bronze.Event(enable_timing=True), bronze.Event(enable_timing=True)
    t0, t1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    def bev():
        e0.record()
        e1.record()
        e0.elapsed_time(e1)

    def tev():
        t0.record()
        t1.record()
        t1.synchronize()
        t0.elapsed_time(t1)

    row("event record x2 + elapsed_time", best(bev, bsync, number=2000) * 1e6, best(tev, tsync, number=2000) * 1e6,
        "torch.cuda.Event", "us")


NOOP_CUDA = 'extern "C" __global__ void noop(float* x) {}'


def launch_overheads(row, bsync, tsync, cupy, torch):
    """Python call to kernel launch of a trivial kernel, back to back (queue throughput)."""
    n = 20000
    x = bronze.empty(1, device=DEV)
    metal = bronze.compile_shader("kernel void noop(device float* x, uint i [[thread_position_in_grid]]) {}", device=DEV)
    cuda = bronze.compile_shader(NOOP_CUDA, language="cuda", device=DEV)
    ours_metal = best(lambda: metal.noop(x), bsync, number=n) * 1e6
    ours_cuda = best(lambda: cuda.noop(x, threads=1), bsync, number=n) * 1e6
    if cupy is not None:
        k = cupy.RawKernel(NOOP_CUDA, "noop")
        cx = cupy.empty(1, dtype=cupy.float32)
        peer = best(lambda: k((1,), (1,), (cx,)), cupy.cuda.Device().synchronize, number=n) * 1e6
        row("launch trivial MSL kernel", ours_metal, peer, "cupy.RawKernel", "us")
        row("launch trivial CUDA C++ kernel", ours_cuda, peer, "cupy.RawKernel", "us")
    compile_kernel = getattr(torch.cuda, "_compile_kernel", None)
    if compile_kernel is not None:
        tk = compile_kernel(NOOP_CUDA, "noop")
        tx = torch.empty(1, device="cuda")
        peer = best(lambda: tk(grid=(1, 1, 1), block=(1, 1, 1), args=[tx]), tsync, number=n) * 1e6
        row("launch trivial CUDA C++ kernel", ours_cuda, peer, "torch.cuda._compile_kernel", "us")


def compile_times(row, cupy, torch):
    """cold: a source never seen (NVRTC); warm: a fresh process, disk cache; hot: in-process."""
    tag = f"{os.getpid()}_{time.time_ns()}"
    src = f'extern "C" __global__ void scale_{tag}(float* y, float a, int n) {{' \
          ' int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] *= a; }'
    t0 = time.perf_counter()
    bronze.compile_shader(src, language="cuda", device=DEV)
    cold = time.perf_counter() - t0
    hot = best(lambda: bronze.compile_shader(src, language="cuda", device=DEV), lambda: None, number=1000)
    child = ("import time, bronze; bronze.empty(1, device='cuda:0'); src = open(0).read(); t = time.perf_counter(); "
             "bronze.compile_shader(src, language='cuda', device='cuda:0'); print(time.perf_counter() - t)")
    warm = float(subprocess.run([sys.executable, "-c", child], input=src, capture_output=True, text=True,
                                check=True).stdout)
    if cupy is not None:
        csrc = src.replace(tag, tag + "_cupy")
        t0 = time.perf_counter()
        cupy.RawKernel(csrc, f"scale_{tag}_cupy").compile()
        row("compile CUDA C++ cold (NVRTC)", cold * 1e3, (time.perf_counter() - t0) * 1e3, "cupy.RawKernel", "ms")
    compile_kernel = getattr(torch.cuda, "_compile_kernel", None)
    if compile_kernel is not None:
        tsrc = src.replace(tag, tag + "_torch")
        t0 = time.perf_counter()
        compile_kernel(tsrc, f"scale_{tag}_torch")
        row("compile CUDA C++ cold (NVRTC)", cold * 1e3, (time.perf_counter() - t0) * 1e3,
            "torch.cuda._compile_kernel", "ms")
    metal = f"kernel void m_{tag}(device float* o, uint i [[thread_position_in_grid]]) {{ o[i] = 1; }}"
    t0 = time.perf_counter()
    bronze.compile_shader(metal, device=DEV)
    print(f"compile times: CUDA C++ cold {cold * 1e3:.1f} ms, warm (disk, new process) {warm * 1e3:.2f} ms, "
          f"hot {hot * 1e6:.2f} us; Metal cold {(time.perf_counter() - t0) * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
