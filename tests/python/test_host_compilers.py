"""The host compiler: GCC and Clang each build and run representative kernels
($BRONZE_CXX chooses; what it is comes from running it, once per compiler
file: the disk cache keeps it), a $BRONZE_CXX that names no working compiler
is an error that says so, and `bronze info` tells.

Each compiler runs in its own process (the compiler is chosen once per
process). Compilers that are not installed are skipped: scripts/install-deps
installs g++ (12 on Debian 12), clang-15 and clang-19 (the ends of the Clang
range bronze supports); GCC 13/14 and Clang 16-18 run where installed
(`sudo scripts/host-compilers` runs this file with g++-13, g++-14,
clang++-17 and clang++-18 from a Debian trixie chroot).
"""

import json
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import bronze

ON_CUDA = bronze.current_device().type == "cuda"
pytestmark = pytest.mark.skipif(ON_CUDA, reason="the host compiler builds CPU kernels")

COMPILERS = ["g++", "g++-12", "g++-13", "g++-14", "clang++-15", "clang++-16", "clang++-17", "clang++-18",
             "clang++-19"]
CHROOTED = ["g++-13", "g++-14", "clang++-17", "clang++-18"]  # the ones scripts/host-compilers provides

# One library with the features whose code differs most between compilers:
# threadgroup barriers (fibers) and simdgroup reductions, conversions to
# half (g++ 13 and 14 refused static_cast<half>(bfloat) and found no
# is_convertible<float, half>, which MLX's complex64_t conversions rest on), numeric_limits
# specialized by the library, templates instantiated under host names,
# metal::exp10 and fast math; then a function constant through specialize,
# validate=True's checks, an error at the user's line and the stack limit.
SOURCE = """\
#include <metal_stdlib>
using namespace metal;

constant bool use_offset [[function_constant(0)]];
constant float offset = use_offset ? 10.0f : 0.0f;

template <typename T> struct tagged { uint i; T val; };
template <typename T> struct _numeric_limits_impl<tagged<T>> {
  static constexpr tagged<T> lowest() { return tagged<T>{0, numeric_limits<T>::lowest()}; }
};

kernel void tg_sum(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                   uint i [[thread_position_in_grid]], uint l [[thread_index_in_threadgroup]],
                   uint lane [[thread_index_in_simdgroup]], uint sg [[simdgroup_index_in_threadgroup]],
                   uint tg [[threadgroup_position_in_grid]]) {
  threadgroup float partial[4];
  float v = simd_sum(x[i]);
  if (lane == 0) partial[sg] = v;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (l == 0) out[tg] = partial[0] + partial[1] + partial[2] + partial[3] + offset;
}

static_assert(is_convertible_v<float, half>, "float converts to half implicitly");

kernel void convert(device const float* x [[buffer(0)]], device half* h [[buffer(1)]],
                    device bfloat* b [[buffer(2)]], device float* y [[buffer(3)]],
                    uint i [[thread_position_in_grid]]) {
  bfloat bf = bfloat(x[i]);
  b[i] = bf;
  h[i] = static_cast<half>(bf);
  y[i] = float(h[i]) + float(tagged<half>(_numeric_limits_impl<tagged<half>>::lowest()).val) * 0.0f
         + metal::exp10(0.0f) + precise::divide(x[i], 4.0f);
}

template <typename T, int K>
kernel void scale(device T* out [[buffer(0)]], device const T* in [[buffer(1)]], uint i [[thread_position_in_grid]]) {
  out[i] = in[i] * T(K);
}
template [[host_name("scale_f32")]] kernel void scale<float, 2>(device float*, device const float*, uint);
template [[host_name("scale_i32")]] kernel void scale<int, 3>(device int*, device const int*, uint);
"""

CHECKS = textwrap.dedent('''
    import json, sys, numpy as np, bronze
    src = sys.argv[1]
    r = {"compiler": bronze._C._host_compiler(check=True)}
    lib = bronze.compile_shader(src)
    x = np.arange(256, dtype=np.float32) / 8
    out = bronze.zeros(2)
    lib.specialize("tg_sum", {0: False})(bronze.tensor(x), out, threads=256, group_size=128)
    r["tg_sum"] = out.numpy().tolist()
    out = bronze.zeros(2)
    lib.specialize("tg_sum", {0: True})(bronze.tensor(x), out, threads=256, group_size=128)
    r["tg_sum_offset"] = out.numpy().tolist()
    h, b, y = bronze.zeros(256, dtype=bronze.float16), bronze.zeros(256, dtype=bronze.bfloat16), bronze.zeros(256)
    lib.convert(bronze.tensor(x), h, b, y)
    r["half"] = h.numpy().astype(np.float32).tolist()
    r["y"] = y.numpy().tolist()
    f, i = bronze.zeros(4), bronze.zeros(4, dtype=bronze.int32)
    lib.scale_f32(f, bronze.tensor(np.arange(4, dtype=np.float32)))
    lib.scale_i32(i, bronze.tensor(np.arange(4, dtype=np.int32)))
    r["scale"] = f.numpy().tolist() + i.numpy().tolist()
    v = bronze.compile_shader(
        "kernel void q(device int* o, constant int& d, uint i [[thread_position_in_grid]]) {\\n"
        "  o[i] = 10 / d;\\n}", filename="ratio.metal", validate=True)
    o = bronze.zeros(2, dtype=bronze.int32)
    v.q(o, 5)
    bronze.synchronize()
    r["validate_ok"] = o.numpy().tolist()
    try:
        v.q(o, 0)
        bronze.synchronize()
        r["validate_zero"] = "no error"
    except bronze.DeviceError as e:
        r["validate_zero"] = str(e)
    try:
        bronze.compile_shader("kernel void k(device float* o) {\\n  o[0] = 1;\\n  o[1] = undeclared_thing;\\n}",
                              filename="bad.metal")
        r["error"] = None
    except bronze.ShaderCompileError as e:
        r["error"] = [str(e), e.lineno]
    try:
        bronze.compile_shader("kernel void k(device float* out, uint i [[thread_position_in_grid]]) {\\n"
                              "  float big[300000];\\n"
                              "  for (uint j = 0; j < 300000; ++j) big[j] = float(i + j);\\n"
                              "  out[i] = big[i * 7 % 300000];\\n}", filename="stack.metal")
        r["stack"] = None
    except bronze.ShaderCompileError as e:
        r["stack"] = [str(e), e.lineno]
    print("RESULT " + json.dumps(r))
''')


def run_with(compiler, code, *args, env=None):
    e = dict(os.environ, **(env or {}))
    e.pop("CXX", None)
    if compiler is None:
        e.pop("BRONZE_CXX", None)
    else:
        e["BRONZE_CXX"] = compiler
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=600, env=e)


def require(compiler):
    if not shutil.which(compiler):
        pytest.skip(f"{compiler} is not installed" + (" (sudo scripts/host-compilers runs this file with it)"
                                                      if compiler in CHROOTED else ""))


@pytest.mark.parametrize("compiler", COMPILERS)
def test_each_compiler_builds_and_runs_representative_kernels(compiler):
    require(compiler)
    p = run_with(compiler, CHECKS, SOURCE)
    assert p.returncode == 0, p.stdout + p.stderr
    r = json.loads(p.stdout.split("RESULT ", 1)[1])
    c = r["compiler"]
    assert c["works"] and c["path"] == shutil.which(compiler) and c["chosen_by"] == "$BRONZE_CXX", c
    assert c["kind"] == ("Clang" if "clang" in compiler else "GCC")
    if compiler[-3:-2] == "-":
        assert c["version"].split(".")[0] == compiler.rsplit("-", 1)[1], c
    x = np.arange(256, dtype=np.float32) / 8
    np.testing.assert_allclose(r["tg_sum"], [x[:128].sum(), x[128:].sum()], rtol=1e-6)
    np.testing.assert_allclose(r["tg_sum_offset"], [x[:128].sum() + 10, x[128:].sum() + 10], rtol=1e-6)
    np.testing.assert_array_equal(r["half"], x)  # k / 8 for k < 256: exact in bfloat and half
    np.testing.assert_allclose(r["y"], x + 1 + x / 4, rtol=1e-6)
    assert r["scale"] == [0, 2, 4, 6, 0, 3, 6, 9]
    assert r["validate_ok"] == [2, 2]
    assert "integer division by zero at ratio.metal:2:" in r["validate_zero"], r["validate_zero"]
    msg, line = r["error"]
    assert msg.startswith("bad.metal:3:") and "undeclared_thing" in msg and line == 3, msg
    msg, line = r["stack"]
    assert msg.startswith("stack.metal:1:") and "1172 KiB of stack per thread" in msg and line == 1, msg


# A class that converts to float only, as MLX's fp8_e8m0 (2^(bits - 127)),
# into half: Metal converts float to half implicitly, so casts reach half
# through operator float. GCC 13 and later take float -> _Float16 (a lower
# rank, C++23's rule, which no option turns off) as no implicit conversion:
# the rewrite gives the class an explicit way to half (a cast builds with
# every compiler), considered by casts only, so pick(e) still takes the float
# overload as Metal does; an implicit conversion (`half h = e;`) stays GCC
# 13's error, with a note.
FLOAT_ONLY = """\
#include <metal_stdlib>
using namespace metal;
struct e8m0 {
  uchar bits;
  operator float() thread { return as_type<float>(uint(bits) << 23); }
};
template <typename T> T scale_of(uchar s) { return T(*(thread e8m0*)&s); }
float pick(float) { return 1; }
float pick(half) { return 2; }
kernel void k(device half* o [[buffer(0)]], device float* p [[buffer(1)]], uint i [[thread_position_in_grid]]) {
  e8m0 e{uchar(127 + i)};
  o[i] = scale_of<half>(126 + i);
  p[i] = pick(e) + 10 * float(static_cast<half>(e)) + 100 * float((half)e);
}
"""
IMPLICIT = "kernel void k2(device half* o [[buffer(0)]]) { half h = e8m0{uchar(127)}; o[0] = h; }\n"

FLOAT_ONLY_RUN = textwrap.dedent('''
    import json, sys, bronze
    r = {"compiler": bronze._C._host_compiler(check=True)}
    o, p = bronze.zeros(4, dtype=bronze.float16), bronze.zeros(4)
    bronze.compile_shader(sys.argv[1]).k(o, p)
    r["out"] = [o.numpy().astype(float).tolist(), p.numpy().tolist()]
    try:
        bronze.compile_shader(sys.argv[1] + sys.argv[2]).k2(o)
        r["implicit"] = float(o.numpy()[0])
    except bronze.ShaderCompileError as e:
        r["implicit"] = str(e)
    print("RESULT " + json.dumps(r))
''')


@pytest.mark.parametrize("compiler", COMPILERS)
def test_a_class_with_only_operator_float_casts_to_half(compiler):
    require(compiler)
    p = run_with(compiler, FLOAT_ONLY_RUN, FLOAT_ONLY, IMPLICIT)
    assert p.returncode == 0, p.stdout + p.stderr
    r = json.loads(p.stdout.split("RESULT ", 1)[1])
    assert r["out"] == [[0.5, 1, 2, 4], [111, 221, 441, 881]], r
    c = r["compiler"]
    if c["kind"] == "GCC" and int(c["version"].split(".")[0]) >= 13:
        assert "shader.metal:15:" in r["implicit"] and "GCC 13 and later convert float to half (_Float16) only " \
            "explicitly" in r["implicit"], r
    else:
        assert r["implicit"] == 1, r


INFO = "import bronze.__main__ as m, sys; sys.exit(m.main(['info']))"
COMPILE = "import bronze; bronze.compile_shader('kernel void k(device float* o) { o[0] = 1; }')"


def test_a_bronze_cxx_that_names_nothing_is_an_error_that_says_so(tmp_path):
    for value, words in [("/nonexistent/c++", "$BRONZE_CXX='/nonexistent/c++' names no executable file"),
                         ("g++ -O0", "without options"),
                         (str(tmp_path), "names no executable file")]:
        p = run_with(value, COMPILE)
        assert p.returncode != 0 and "ValueError" in p.stderr and words in p.stderr, p.stderr
        info = run_with(value, INFO)
        assert "does NOT work" in info.stdout and words in info.stdout, info.stdout


def test_a_program_that_is_not_a_cxx_compiler_is_refused(tmp_path):
    fake = tmp_path / "fake-c++"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    p = run_with(str(fake), COMPILE)
    assert p.returncode != 0 and "is not a C++ compiler bronze can use" in p.stderr, p.stderr
    if shutil.which("cpp"):  # GCC's preprocessor preprocesses, but builds nothing
        p = run_with("cpp", COMPILE)
        assert p.returncode != 0 and "NotSupportedError" in p.stderr and "cannot build bronze's kernels" in p.stderr, \
            p.stderr


def test_a_compiler_killed_by_a_signal_is_named_with_the_signal(tmp_path):
    # A crash (here: SIGSEGV while building the kernel's shared object) is
    # the build's error, naming the program and the signal, not a bare
    # "the compiler was killed"; bronze's helpers (bronze-air) run the same way.
    gxx = shutil.which("g++")
    if not gxx:
        pytest.skip("g++ is not installed")
    crashing = tmp_path / "crashing-g++"
    crashing.write_text('#!/bin/sh\ncase " $* " in *" -shared "*kernel.cpp*) kill -SEGV $$;; esac\n'
                        f'exec {gxx} "$@"\n')
    crashing.chmod(0o755)
    p = run_with(str(crashing), "import bronze\ntry:\n    " + COMPILE.split("; ", 1)[1] +
                 "\nexcept bronze.ShaderCompileError as e:\n    print('ERROR', e)\n",
                 env={"BRONZE_CACHE_DIR": str(tmp_path / "cache")})
    assert p.returncode == 0, p.stderr
    assert "crashing-g++ was killed by signal 11 (Segmentation fault; its memory limit is" in p.stdout, p.stdout


@pytest.mark.skipif(not shutil.which("clang++-14"), reason="clang++-14 is not installed")
def test_clang_14_is_refused_for_what_it_lacks():
    p = run_with("clang++-14", COMPILE)
    assert p.returncode != 0 and "_Float16" in p.stderr and "Clang 15 or newer" in p.stderr, p.stderr


def test_the_kind_comes_from_running_the_compiler_not_its_name(tmp_path):
    gxx = shutil.which("g++")
    if not gxx:
        pytest.skip("g++ is not installed")
    disguised = tmp_path / "clang++"
    disguised.symlink_to(gxx)
    p = run_with(str(disguised), INFO)
    assert p.returncode == 0 and f"{disguised} (GCC " in p.stdout and "from $BRONZE_CXX): works" in p.stdout, \
        p.stdout + p.stderr


def test_what_a_compiler_is_is_learnt_once_per_file(tmp_path):
    # Running the compiler to tell its kind was most of a later process's
    # first call: the disk cache keeps it, per file (a replaced one is run again).
    gxx = shutil.which("g++")
    if not gxx:
        pytest.skip("g++ is not installed")
    runs = tmp_path / "runs"
    wrapper = tmp_path / "g++"
    wrapper.write_text(f'#!/bin/sh\necho "$*" >> {runs}\nexec {gxx} "$@"\n')
    wrapper.chmod(0o755)
    env = {"BRONZE_CACHE_DIR": str(tmp_path / "cache")}

    def probes():
        return runs.read_text().splitlines().count("-E -x c++ probe.cpp")

    for expected in [1, 1]:
        p = run_with(str(wrapper), INFO, env=env)
        assert p.returncode == 0 and f"{wrapper} (GCC " in p.stdout and ": works" in p.stdout, p.stdout + p.stderr
        assert probes() == expected, runs.read_text()
    later = wrapper.stat().st_mtime + 10
    os.utime(wrapper, (later, later))
    p = run_with(str(wrapper), INFO, env=env)
    assert p.returncode == 0 and probes() == 2, runs.read_text()


def test_info_names_the_default_compiler_and_says_it_works():
    p = run_with(None, INFO)
    assert p.returncode == 0, p.stderr
    line = next(l for l in p.stdout.splitlines() if "shader compiler (CPU)" in l)
    assert ("(GCC " in line or "(Clang " in line) and line.endswith(": works"), line
