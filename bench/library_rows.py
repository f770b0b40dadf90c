"""Real libraries' kernels through bronze, timed in the same run (bench_gpu.py
calls run()); ratio > 1: bronze's side is faster.

- MLX kernels from Apple's compiled mlx.metallib against the same kernels
  compiled from MLX's source by bronze: an elementwise kernel, a reduction
  and a GEMM (the .metallib path's goal: within 10%).
- MLX's and llama.cpp's hot kernels, compiled from their sources, against the
  torch op that does the same job: steel GEMM against cuBLAS, prefill and
  decoding attention against SDPA, argsort against torch's, 4-bit matrix-vector products against a dense
  float16 GEMV (reading 4x fewer bytes, they should be faster), rms_norm and
  softmax against torch's.

The cases, their bindings and their checks against NumPy are
scripts/real-kernels' own: each result is checked before it is timed. The
libraries are fetched as for it; rows whose library is absent are skipped
with a note:

  .corpus/mlx                          a checkout of ml-explore/mlx ($BRONZE_BENCH_MLX)
  .corpus/metallib/mlx-cases.metallib  real-kernels --subset's file, or the whole
                                       mlx.metallib ($BRONZE_BENCH_METALLIB)
  .corpus/min/ggml                     ggml-metal.metal and its headers ($BRONZE_BENCH_GGML)
"""

import importlib.machinery
import importlib.util
import os
import pathlib

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
# The sizes of the rows (the performance issue's table): rows x columns of
# the row kernels, and the GEMM's and the matrix-vector products' side.
ROWS, COLS, K = 8192, 4096, 4096


def real_kernels():
    """scripts/real-kernels as a module (a script: its name has no .py)."""
    loader = importlib.machinery.SourceFileLoader("real_kernels", str(ROOT / "scripts" / "real-kernels"))
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
    loader.exec_module(module)
    return module


def found(env, default, marker=""):
    """The library's path ($env, else default) if it holds `marker`, else None."""
    path = pathlib.Path(os.environ.get(env, ROOT / default))
    return path if (path / marker).exists() else None


def timed(rk, what, cases, case, *args):
    """Runs one case (checked, then timed each way): its {way: seconds}, or
    None, said, when it fails to build, to run or its check."""
    timings, failures = len(cases.timings), len(rk.failures)
    try:
        case(*args)
    except Exception as e:  # noqa: BLE001 - a case that fails loses its row, not the bench
        print(f"{what}: {type(e).__name__}: {str(e).splitlines()[0]}")
        return None
    if len(rk.failures) > failures or len(cases.timings) != timings + 1:
        print(f"{what}: no row (its result is off against NumPy, or it ran no kernel)")
        return None
    return cases.timings.pop()[1]


def run(row, best, bsync, dev, torch):
    rk = real_kernels()
    timer = lambda launch: best(launch, bsync, repeat=5, number=10)
    tsync = torch.cuda.synchronize
    peer = lambda fn: best(fn, tsync, repeat=5, number=10)
    mlx = found("BRONZE_BENCH_MLX", ".corpus/mlx", "mlx/backend/metal/kernels")
    metallib = found("BRONZE_BENCH_METALLIB", ".corpus/metallib/mlx-cases.metallib")
    ggml = found("BRONZE_BENCH_GGML", ".corpus/min/ggml", "ggml-metal.metal")
    rows, cols, k = ROWS, COLS, K

    if mlx and metallib:
        both = rk.Mlx(mlx, metallib, dev, False, timer)
        for what, unit, amount, case, args in (  # amount: the unit's work per call
                ("MLX vvn_Add 64M float32", "GB/s", 12 * (1 << 26) / 1e9, both.binary_op, ("Add", np.float32, 1 << 26)),
                (f"MLX rms_norm {rows}x{cols} float32", "GB/s", 8 * rows * cols / 1e9, both.rms_norm,
                 (np.float32, rows, cols)),
                (f"MLX steel GEMM {k}^3 float32", "TFLOP/s", 2 * k ** 3 / 1e12, both.gemm,
                 ("nn", np.float32, k, k, k, 64, 64, 16, 2, 2))):
            t = timed(rk, what, both, case, *args)
            if t:
                row(f"{what} (metallib)", amount / t["metallib"], amount / t["source"], "the same from source", unit,
                    True)
    else:
        print("metallib rows skipped: need MLX's source (.corpus/mlx) and its metallib "
              "(.corpus/metallib/mlx-cases.metallib: scripts/real-kernels --subset makes it)")

    F = torch.nn.functional
    t16 = lambda *shape, dtype=torch.float16: torch.randn(*shape, device="cuda", dtype=dtype)
    if mlx:
        src = rk.Mlx(mlx, None, dev, False, timer)
        torch.backends.cuda.matmul.allow_tf32 = False  # float32 GEMM as Metal computes it: FP32, not TF32
        for dt, tdt in ((np.float16, torch.float16), (rk.BFLOAT16, torch.bfloat16), (np.float32, torch.float32)):
            name = rk.DTYPES[dt].name
            t = timed(rk, f"MLX steel GEMM {name}", src, src.gemm, "nn", dt, k, k, k, 64, 64, 16, 2, 2)
            if t:
                a, b = t16(k, k, dtype=tdt), t16(k, k, dtype=tdt)
                row(f"MLX steel GEMM {k}^3 {name}", 2 * k ** 3 / t["source"] / 1e12,
                    2 * k ** 3 / peer(lambda: a @ b) / 1e12, "torch mm (cuBLAS)", "TFLOP/s", True)
        # Prefill: 4,096 tokens over themselves, 8 heads, D = 128.
        t = timed(rk, "MLX steel attention", src, src.steel_attention, np.float16, 128, 8, 1, 4096, False)
        if t:
            q, kk, v = (t16(1, 8, 4096, 128) for _ in range(3))
            flops = 4 * 8 * 4096 * 4096 * 128
            row("MLX steel attention D128 8 heads 4096 tokens f16", flops / t["source"] / 1e12,
                flops / peer(lambda: F.scaled_dot_product_attention(q, kk, v)) / 1e12, "torch SDPA (flash)",
                "TFLOP/s", True)
        # Decoding: one query token, 32 query heads over 8 key/value heads, D =
        # 128. MLX takes its two-pass kernel from 1,024 keys on a Max or Ultra
        # (blocks as on a Max: 128) and from 4,096 with GQA on any chip; the
        # one-pass kernel below that.
        for n, how, case, args in ((8192, "2pass", src.sdpa_vector_2pass, (np.float16, 128, 32, 4, 8192, 128)),
                                   (1024, "2pass", src.sdpa_vector_2pass, (np.float16, 128, 32, 4, 1024, 128)),
                                   (1024, "1pass", src.sdpa_vector, (np.float16, 128, 32, 4, 1, 1024, False))):
            t = timed(rk, f"MLX sdpa_vector {how} {n} keys", src, case, *args)
            if t:
                q, kv = t16(1, 32, 1, 128), (t16(1, 8, n, 128), t16(1, 8, n, 128))
                nbytes = 2 * 8 * n * 128 * 2  # keys and values, read once
                row(f"MLX sdpa_vector {how} D128 32/8 heads {n} keys f16", nbytes / t["source"] / 1e9,
                    nbytes / peer(lambda: F.scaled_dot_product_attention(q, *kv, enable_gqa=True)) / 1e9,
                    "torch SDPA", "GB/s", True)
        t = timed(rk, "MLX affine_qmv_fast", src, src.qmv, "affine_qmv_fast", np.float16, 4, 64, 1, k, k)
        if t:
            x, w = t16(1, k), t16(k, k)
            row(f"MLX affine_qmv_fast 4-bit {k}x{k} f16", t["source"] * 1e6, peer(lambda: F.linear(x, w)) * 1e6,
                "torch dense f16 GEMV", "us")
        for dt, tdt in ((np.float16, torch.float16), (np.float32, torch.float32)):
            name, nbytes = np.dtype(dt).name, 2 * rows * cols * np.dtype(dt).itemsize
            x, w = t16(rows, cols, dtype=tdt), t16(cols, dtype=tdt)
            t = timed(rk, f"MLX rms_norm {name}", src, src.rms_norm, dt, rows, cols)
            if t:
                row(f"MLX rms_norm {rows}x{cols} {name}", nbytes / t["source"] / 1e9,
                    nbytes / peer(lambda: F.rms_norm(x, (cols,), w, 1e-5)) / 1e9, "torch rms_norm", "GB/s", True)
            t = timed(rk, f"MLX block softmax {name}", src, src.softmax, "block", dt, rows, cols)
            if t:
                row(f"MLX block softmax {rows}x{cols} {name}", nbytes / t["source"] / 1e9,
                    nbytes / peer(lambda: torch.softmax(x, -1)) / 1e9, "torch softmax", "GB/s", True)
    else:
        print("MLX rows against torch skipped: no MLX source (.corpus/mlx)")

    if ggml:
        lib = rk.Ggml(ggml, dev, False, timer)
        nbytes = 2 * rows * cols * 4
        x = t16(rows, cols, dtype=torch.float32)
        w = t16(cols, dtype=torch.float32)
        # As ggml-metal-ops.cpp dispatches them at this size: rms_norm a thread
        # per float4 up to 1,024; soft_max one simdgroup a row (many rows).
        t = timed(rk, "llama.cpp rms_norm", lib, lib.rms_norm_mul, "kernel_rms_norm_mul_f32_4", rows, cols, 1024)
        if t:
            row(f"llama.cpp rms_norm_mul_f32_4 {rows}x{cols}", nbytes / t["source"] / 1e9,
                nbytes / peer(lambda: F.rms_norm(x, (cols,), w, 1e-6)) / 1e9, "torch rms_norm", "GB/s", True)
        t = timed(rk, "llama.cpp soft_max", lib, lib.soft_max, "kernel_soft_max_f32_4", rows, 1, cols, False, 32)
        if t:
            row(f"llama.cpp soft_max_f32_4 {rows}x{cols}", nbytes / t["source"] / 1e9,
                nbytes / peer(lambda: torch.softmax(x, -1)) / 1e9, "torch softmax", "GB/s", True)
        t = timed(rk, "llama.cpp argsort", lib, lib.argsort, rows, 1024)
        if t:
            xs = t16(rows, 1024, dtype=torch.float32)
            row(f"llama.cpp argsort_f32_i32 {rows}x1024", t["source"] * 1e6,
                peer(lambda: torch.argsort(xs, -1)) * 1e6, "torch argsort", "us")
        t = timed(rk, "llama.cpp mul_mv_q4_0_f32", lib, lib.mul_mv, "q4_0", k, 1, k)
        if t:
            xv, wd = t16(1, k), t16(k, k)
            row(f"llama.cpp mul_mv_q4_0_f32 {k}x{k}", t["source"] * 1e6, peer(lambda: F.linear(xv, wd)) * 1e6,
                "torch dense f16 GEMV", "us")
    else:
        print("llama.cpp rows skipped: no ggml-metal.metal (.corpus/min/ggml)")
    if rk.failures:
        print(f"library rows: results off against NumPy: {', '.join(rk.failures)}")
