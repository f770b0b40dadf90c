"""bronze on CUDA against torch.cuda and CuPy in the same run (scripts/gpu-check
runs it on the GPU machine). Prints a table; ratio > 1: bronze is faster.

    python bench/bench_gpu.py
"""

import time

import bronze

DEV = "cuda:0"


def best(fn, sync, repeat=5, number=1):
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
    import torch

    try:
        import cupy
    except ImportError:
        cupy = None
    bsync = lambda: bronze.synchronize(DEV)
    tsync = torch.cuda.synchronize
    rows = []

    def row(name, ours, peer, peer_name, unit, higher_better=False):
        rows.append((name, ours, peer, peer_name, unit, (ours / peer) if higher_better else (peer / ours)))

    n = 20000
    ours = best(lambda: bronze.empty(256, device=DEV), bsync, number=n)
    row("alloc+free 1 KiB", ours * 1e6, best(lambda: torch.empty(256, device="cuda"), tsync, number=n) * 1e6,
        "torch.empty", "us")
    if cupy is not None:
        row("alloc+free 1 KiB", ours * 1e6, best(lambda: cupy.empty(256, dtype=cupy.float32), cupy.cuda.Device().synchronize,
                                                 number=n) * 1e6, "cupy.empty", "us")

    m = 1 << 26  # 64M floats, 256 MiB
    bytes_out = 4 * m
    ours = best(lambda: bronze.randn(m, device=DEV), bsync)
    peer = best(lambda: torch.randn(m, device="cuda"), tsync)
    row("randn 64M float32", bytes_out / ours / 1e9, bytes_out / peer / 1e9, "torch.randn", "GB/s", True)

    a, b = bronze.randn(m, device=DEV), bronze.randn(m, device=DEV)
    ta, tb = torch.randn(m, device="cuda"), torch.randn(m, device="cuda")
    ours = best(lambda: a + b, bsync)
    peer = best(lambda: ta + tb, tsync)
    copy = best(lambda: ta.clone(), tsync)
    row("a + b, 64M float32", 3 * bytes_out / ours / 1e9, 3 * bytes_out / peer / 1e9, "torch a + b", "GB/s", True)
    row("a + b vs copy bandwidth", 3 * bytes_out / ours / 1e9, 2 * bytes_out / copy / 1e9, "torch clone (D2D copy)", "GB/s", True)

    k = 4096
    x, tx = bronze.randn(k, k, device=DEV), torch.randn(k, k, device="cuda")
    ours = best(lambda: x @ x, bsync)
    peer = best(lambda: tx @ tx, tsync)
    flops = 2 * k ** 3
    row("mm 4096^2 float32 (cuBLAS)", flops / ours / 1e12, flops / peer / 1e12, "torch mm", "TFLOP/s", True)

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

    print(f"\nbronze {bronze.__version__} on {bronze.get_device_properties(DEV).name}; torch {torch.__version__}"
          + (f", cupy {cupy.__version__}" if cupy else ""))
    print(f"{'benchmark':<34} {'bronze':>10} {'peer':>10}  {'unit':<8} {'ratio':>6}  peer")
    for name, ours, peer, peer_name, unit, ratio in rows:
        print(f"{name:<34} {ours:10.3f} {peer:10.3f}  {unit:<8} {ratio:6.2f}  {peer_name}")


if __name__ == "__main__":
    main()
