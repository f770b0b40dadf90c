"""Compile time as a kernel library's user meets it, each file in fresh
processes with an empty compile cache: how long compile_shader takes (it
checks the whole unit and builds no kernel), how long the first call of one
kernel adds (that kernel's build), and how long a second process takes to
reach its first call (everything from the disk cache); against the peer
measured in the same run, the whole build (every kernel, in parts over the
machine's cores: Library.warmup, what compile_library and `bronze compile`
do, and what compile_shader did before it built kernels on first use).
Each process starts its device before the clock starts.

    python bench/bench_compile.py [FILE.metal ...] [-I DIR] [--device cpu|cuda] [--no-peer]

--no-peer leaves the whole build out (minutes for a big library on few cores).

Without files it measures a generated library in the style of MLX's (one
kernel template instantiated for many types and tile sizes). Real libraries
are kept outside the repository (scripts/corpus-check's .corpus folder).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

CHILD = r"""
import json, sys, time
t0 = time.time()
import bronze
path, device, dirs, whole = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4] == "1"
src = open(path, encoding="utf-8").read()
r = {"import": time.time() - t0}
bronze.zeros(1, device=device)  # the device started (a CUDA context: 0.2 s) before the clock
t = time.time()
lib = bronze.compile_shader(src, filename=path, device=device, include_dirs=dirs)
r["compile"] = time.time() - t
r["kernels"] = len(lib.kernel_names)
t = time.time()
if whole:
    lib.warmup()
else:
    lib._kernel(lib.kernel_names[0]).warmup()
r["build"] = time.time() - t
print(json.dumps(r))
"""

# A library in the style of MLX's: a tiled reduction kernel template with
# threadgroup memory, simdgroup functions and barriers, instantiated for
# types x tile sizes x vector widths.
TEMPLATE = """
#include <metal_stdlib>
using namespace metal;
template <typename T, int TILE, int VEC>
kernel void tiled_sum(device const T* x [[buffer(0)]], device float* out [[buffer(1)]],
                      constant uint& n [[buffer(2)]], uint gid [[threadgroup_position_in_grid]],
                      uint tid [[thread_index_in_threadgroup]], uint lane [[thread_index_in_simdgroup]],
                      uint sg [[simdgroup_index_in_threadgroup]]) {
  threadgroup float part[TILE / 32];
  float acc = 0.0f;
  for (uint i = (gid * TILE + tid) * VEC; i < n; i += TILE * VEC * 64) {
    for (int v = 0; v < VEC; ++v) acc += (i + v < n) ? static_cast<float>(x[i + v]) : 0.0f;
  }
  acc = simd_sum(acc);
  if (lane == 0) part[sg] = acc;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (sg == 0) {
    float p = lane < TILE / 32 ? part[lane] : 0.0f;
    p = simd_sum(p);
    if (lane == 0) out[gid] = p;
  }
}
"""


def generated_library(folder):
    types = ["float", "half", "bfloat", "int", "uint", "short", "char", "uchar"]
    lines = [TEMPLATE]
    for t in types:
        for tile in (64, 128, 256, 512, 1024):
            for vec in (1, 2, 4, 8):
                name = f"tiled_sum_{t}_{tile}_{vec}"
                lines.append(f'template [[host_name("{name}")]] kernel void tiled_sum<{t}, {tile}, {vec}>('
                             f"device const {t}*, device float*, constant uint&, uint, uint, uint, uint);")
    path = os.path.join(folder, "generated_tiled_sum.metal")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def measure(path, device, dirs, cache, whole):
    env = dict(os.environ, BRONZE_CACHE_DIR=cache)
    env.pop("BRONZE_CACHE_DISABLE", None)
    p = subprocess.run([sys.executable, "-c", CHILD, path, device, json.dumps(dirs), "1" if whole else "0"],
                       env=env, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"bench_compile: {path}: {p.stderr.strip()[-2000:]}")
    return json.loads(p.stdout.splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*")
    ap.add_argument("-I", dest="include", action="append", default=[])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--no-peer", action="store_true", help="leave the whole build (the peer) out")
    args = ap.parse_args()
    dirs = [os.path.abspath(d) for d in args.include]
    with tempfile.TemporaryDirectory() as tmp:
        files = args.files or [generated_library(tmp)]
        print(f"compile time on {args.device}, {os.cpu_count()} CPUs, cold cache per row (seconds)\n")
        print("| file | kernels | compile_shader | + first call | = first call | second process | "
              "whole build (peer) | whole / first call |")
        print("|---|---|---|---|---|---|---|---|")
        for i, path in enumerate(files):
            lazy_cache, whole_cache = os.path.join(tmp, f"lazy{i}"), os.path.join(tmp, f"whole{i}")
            cold = measure(path, args.device, dirs, lazy_cache, whole=False)
            warm = measure(path, args.device, dirs, lazy_cache, whole=False)
            first = cold["compile"] + cold["build"]
            peer = "| - | - |"
            if not args.no_peer:
                whole = measure(path, args.device, dirs, whole_cache, whole=True)
                whole = whole["compile"] + whole["build"]
                peer = f"| {whole:.1f} | {whole / first:.1f}x |"
            print(f"| {os.path.basename(path)} | {cold['kernels']} | {cold['compile']:.2f} | {cold['build']:.2f} | "
                  f"{first:.2f} | {warm['compile'] + warm['build']:.3f} {peer}", flush=True)


if __name__ == "__main__":
    main()
