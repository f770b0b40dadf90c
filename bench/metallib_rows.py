"""MLX kernels from Apple's compiled mlx.metallib against the same kernels
compiled from MLX's source by bronze, in the same run (bench_gpu.py calls
run()): an elementwise kernel, a reduction and a GEMM. Ratio > 1: the
metallib's build is faster. The cases, their bindings and their checks
against NumPy are scripts/real-kernels' (each result is checked before it is
timed); the libraries are fetched as for it, and the rows are skipped with a
note where they are absent:

  .corpus/mlx                          a checkout of ml-explore/mlx ($BRONZE_BENCH_MLX)
  .corpus/metallib/mlx-cases.metallib  real-kernels --subset's file, or the whole
                                       mlx.metallib ($BRONZE_BENCH_METALLIB)
"""

import importlib.machinery
import importlib.util
import os
import pathlib

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent


def real_kernels():
    """scripts/real-kernels as a module (a script: its name has no .py)."""
    loader = importlib.machinery.SourceFileLoader("real_kernels", str(ROOT / "scripts" / "real-kernels"))
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
    loader.exec_module(module)
    return module


def run(row, best, bsync, dev):
    mlx = pathlib.Path(os.environ.get("BRONZE_BENCH_MLX", ROOT / ".corpus" / "mlx"))
    metallib = pathlib.Path(os.environ.get("BRONZE_BENCH_METALLIB", ROOT / ".corpus" / "metallib" / "mlx-cases.metallib"))
    if not (mlx / "mlx" / "backend" / "metal" / "kernels").is_dir() or not metallib.is_file():
        print(f"metallib rows skipped: need MLX's source at {mlx} and its metallib at {metallib} "
              "(scripts/real-kernels --subset makes the second)")
        return
    rk = real_kernels()
    cases = rk.Mlx(mlx, metallib, dev, False, timer=lambda launch: best(launch, bsync, repeat=5, number=10))
    n, rows, cols, k = 1 << 26, 8192, 4096, 4096
    for what, unit, amount, case, args in (
            ("MLX vvn_Add 64M float32", "GB/s", 12 * n / 1e9, cases.binary_op, ("Add", np.float32, n)),
            (f"MLX rms_norm {rows}x{cols} float32", "GB/s", 8 * rows * cols / 1e9, cases.rms_norm,
             (np.float32, rows, cols)),
            (f"MLX steel GEMM {k}^3 float32", "TFLOP/s", 2 * k ** 3 / 1e12, cases.gemm,
             ("nn", np.float32, k, k, k, 64, 64, 16, 2, 2))):
        try:
            case(*args)
        except Exception as e:  # noqa: BLE001 - a case that fails to build or run loses its row, not the bench
            print(f"{what}: {type(e).__name__}: {str(e).splitlines()[0]}")
            continue
        times = cases.timings.pop()[1]
        row(f"{what} (metallib)", amount / times["metallib"], amount / times["source"], "the same from source", unit,
            True)
    if rk.failures:
        print(f"metallib rows: results off against NumPy: {', '.join(rk.failures)}")
