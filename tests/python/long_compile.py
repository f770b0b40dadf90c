"""A Metal source whose host compile takes minutes, for tests that stop a compile.

Its time is spent in many constant expressions, each well under GCC's and
Clang's per-expression limits (-fconstexpr-ops-limit, -fconstexpr-steps):
one long expression would fail at the limit after a few seconds, and a
loaded machine could then see the compile end before the test stops it.
About 0.13 s each with GCC 12 and 0.25 s with Clang 19 on this project's
machine: 2,000 of them are minutes with either.
"""

LONG_COMPILE = (
    "constexpr long spin(long k) { long s = 0; for (long i = 0; i < 300; ++i)\n"
    "  for (long j = 0; j < 300; ++j) s += (i ^ j ^ k) & 1; return s; }\n"
    + "".join(f"static_assert(spin({k}) >= 0, \"\");\n" for k in range(2000))
    + "kernel void k(device float* o) { o[0] = 1; }\n")
