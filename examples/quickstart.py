"""bronze quick start: compile a Metal kernel, run it, profile it, read the
memory figures. Runs on the CPU backend anywhere (and on CUDA when present).

    python examples/quickstart.py
"""

import json
import os
import tempfile

import numpy as np

import bronze

SOURCE = """
#include <metal_stdlib>
using namespace metal;

kernel void full(device float* out, constant float& val, uint idx [[thread_position_in_grid]]) {
    out[idx] = val;
}
"""


def main():
    print(f"bronze {bronze.__version__} on {bronze.current_device()} "
          f"({bronze.get_device_properties().name})")

    lib = bronze.compile_shader(SOURCE)
    print("compiled kernels:", lib.kernel_names)

    x = bronze.empty(1 << 20)
    trace = os.path.join(tempfile.gettempdir(), "bronze-quickstart-trace.json")
    with bronze.profiler.profile("interval,event", path=trace):
        start, end = bronze.Event(enable_timing=True), bronze.Event(enable_timing=True)
        start.record()
        lib.full(x, 3.14)
        end.record()
        bronze.synchronize()

    values = x.numpy()
    assert np.allclose(values, 3.14), "the kernel did not fill the tensor"
    print(f"lib.full(x, 3.14) filled {values.size} floats: x[:4] = {values[:4]}")
    print(f"kernel time (events): {start.elapsed_time(end):.3f} ms")

    events = json.load(open(trace))["traceEvents"]
    spans = [e for e in events if e.get("ph") == "X"]
    print(f"profile: {len(spans)} intervals written to {trace} (open it in ui.perfetto.dev)")
    for e in spans:
        print(f"  {e['name']:<10} {e['cat']:<8} {e['dur']:9.1f} us")

    stats = bronze.memory_stats()
    print("memory:")
    print(f"  current_allocated_memory  {bronze.current_allocated_memory():>12,} bytes")
    print(f"  driver_allocated_memory   {bronze.driver_allocated_memory():>12,} bytes")
    print(f"  recommended_max_memory    {bronze.recommended_max_memory():>12,} bytes")
    print(f"  allocations {stats['num_allocs']}, cache hits {stats['cache_hits']}, "
          f"peak allocated {stats['allocated_bytes.peak']:,} bytes")
    del x, values
    bronze.empty_cache()
    print(f"after del + empty_cache: allocated {bronze.current_allocated_memory()}, "
          f"reserved {bronze.driver_allocated_memory()}")


if __name__ == "__main__":
    main()
