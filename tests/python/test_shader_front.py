"""The Metal front end from Python, as users of real kernel libraries meet it:
includes (folders, in-memory headers, torch's c10/metal), macros, the call
contract torch.mps's own tests check, libraries that follow their tensors.
Kernels here are bronze's own, written in the style of MLX, llama.cpp and
PyTorch's MPS kernels."""

import json
import os
import sys

import numpy as np
import pytest

import bronze

CUDA = bronze.is_available("cuda")


def test_include_dirs_relative_includes_and_a_header_edit_rebuilds(tmp_path):
    inc = tmp_path / "inc"
    (inc / "ops").mkdir(parents=True)
    (inc / "ops" / "unary.h").write_text('#pragma once\n#include "detail.h"\ninline float op(float v) { return SCALE * v; }\n')
    (inc / "ops" / "detail.h").write_text("#define SCALE 2.0f\n")  # found beside unary.h, not via include_dirs
    src = ('#include <metal_stdlib>\n#include "ops/unary.h"\n'
           "kernel void k(device float* x, uint i [[thread_position_in_grid]]) { x[i] = op(x[i]); }\n")
    x = bronze.ones(4)
    bronze.compile_shader(src, include_dirs=[inc]).k(x)
    assert x.numpy().tolist() == [2.0] * 4
    # An edited header is a different library: its content is part of the key.
    (inc / "ops" / "detail.h").write_text("#define SCALE 3.0f  \n")
    bronze.compile_shader(src, include_dirs=[str(inc)]).k(x)
    assert x.numpy().tolist() == [6.0] * 4


def test_the_source_files_folder_is_searched_first(tmp_path):
    (tmp_path / "common.h").write_text("constant constexpr float kBias = 5.0f;\n")
    path = tmp_path / "kernels.metal"
    path.write_text('#include "common.h"\nkernel void k(device float* x) { x[0] = kBias; }\n')
    x = bronze.zeros(1)
    bronze.compile_shader(path.read_text(), filename=str(path)).k(x)
    assert x.item() == 5.0


def test_headers_and_defines():
    headers = {"act.h": "#pragma once\ninline float act(float v) { return v > 0 ? v : ALPHA * v; }\n"}
    src = '#include "act.h"\nkernel void leaky(device float* x, uint i [[thread_position_in_grid]]) { x[i] = act(x[i]); }\n'
    x = bronze.tensor([-2.0, 4.0])
    bronze.compile_shader(src, headers=headers, defines={"ALPHA": "0.5f"}).leaky(x)
    assert x.numpy().tolist() == [-1.0, 4.0]


def test_torch_metal_headers_resolve_from_an_installed_torch(tmp_path, monkeypatch):
    # A stand-in torch package with the layout of PyTorch's wheels (include/c10/metal).
    pkg = tmp_path / "site" / "torch"
    (pkg / "include" / "c10" / "metal").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "include" / "c10" / "metal" / "utils.h").write_text(
        "#pragma once\n#include <metal_stdlib>\nnamespace c10 { namespace metal {\n"
        "template <typename T> inline T twice(T v) { return v + v; }\n}}\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setattr(bronze, "_TORCH_INCLUDE", None)
    monkeypatch.delitem(sys.modules, "torch", raising=False)  # an imported torch comes back after the test
    src = ("#include <c10/metal/utils.h>\n"
           "kernel void k(device float* x, uint i [[thread_position_in_grid]]) { x[i] = c10::metal::twice(x[i]); }\n")
    x = bronze.full((3,), 1.5)
    bronze.compile_shader(src).k(x)
    assert x.numpy().tolist() == [3.0] * 3
    # Only c10/metal is reachable, not the rest of torch's include folder.
    (pkg / "include" / "ATen.h").write_text("")
    with pytest.raises(bronze.ShaderCompileError, match="ATen.h"):
        bronze.compile_shader("#include <ATen.h>\n")


# An MLX-style library: instantiation macros that build names from adjacent
# literals, the decltype form, default template arguments, [[kernel]].
MLX_STYLE = r"""
#include <metal_stdlib>
using namespace metal;
#define instantiate_kernel(name, func, ...) \
  template [[host_name(name)]] [[kernel]] decltype(func<__VA_ARGS__>) func<__VA_ARGS__>;
template <typename T> struct Work { static constexpr int n = sizeof(T) < 4 ? 2 : 1; };
template <typename T, typename U, int N = Work<T>::n>
[[kernel]] void cast_v(device const T* in, device U* out, constant const uint& size,
                       uint index [[thread_position_in_grid]]) {
  index *= N;
  for (int i = 0; i < N && index + i < size; ++i) out[index + i] = static_cast<U>(in[index + i]);
}
#define instantiate_cast(iname, itype, oname, otype) \
  instantiate_kernel("cast_" #iname #oname, cast_v, itype, otype)
instantiate_cast(float16, half, float32, float)
instantiate_cast(float32, float, int32, int)
#if defined(__HAVE_BFLOAT__)
instantiate_cast(bfloat16, bfloat, float32, float)
#endif
"""


def test_mlx_style_instantiations():
    lib = bronze.compile_shader(MLX_STYLE)
    assert sorted(dir(lib)) == ["cast_bfloat16float32", "cast_float16float32", "cast_float32int32"]
    assert bronze.find_kernels(MLX_STYLE) == ["cast_float16float32", "cast_float32int32", "cast_bfloat16float32"]
    k = lib.cast_float16float32
    assert [p["type"] for p in k.params[:3]] == ["half", "float", "uint"]
    src = bronze.tensor(np.arange(6, dtype=np.float16))  # a copy on the current device
    out = bronze.zeros(6)
    k(src, out, 6, threads=3)  # N = 2 from the default argument: 3 threads cover 6 elements
    assert out.to("cpu").numpy().tolist() == [0, 1, 2, 3, 4, 5]
    i32 = bronze.zeros(4, dtype=bronze.int32)
    lib.cast_float32int32(bronze.tensor([1.5, -2.5, 3.0, 7.9]), i32, 4)
    assert i32.to("cpu").numpy().tolist() == [1, -2, 3, 7]


# A llama.cpp-style file: #if choices, a kernel in #if 0, a typedef'd
# kernel signature, host_name on a plain kernel, program-scope constants.
GGML_STYLE = r"""
#include <metal_stdlib>
using namespace metal;
#define N_SIMDWIDTH 32
constexpr constant static float kvalues[4] = {-2.f, -1.f, 1.f, 2.f};
typedef struct { int32_t ne00; float eps; } args_norm;
#if 0
kernel void kernel_disabled(device float* x) { x[0] = 1; }
#endif
typedef void (norm_t)(constant args_norm & args, device const float * src, device float * dst,
                      uint tpitg [[thread_position_in_threadgroup]]);
template <typename T>
kernel void kernel_scale_sq(constant args_norm & args, device const T * src, device T * dst,
                            uint tpitg [[thread_position_in_threadgroup]]) {
  for (int i = tpitg; i < args.ne00; i += N_SIMDWIDTH) dst[i] = src[i] * src[i] * args.eps + kvalues[i % 4];
}
template [[host_name("kernel_scale_sq_f32")]] kernel norm_t kernel_scale_sq<float>;
"""


def test_ggml_style_file():
    lib = bronze.compile_shader(GGML_STYLE)
    assert dir(lib) == ["kernel_scale_sq_f32"]
    src = np.arange(40, dtype=np.float32)
    dst = bronze.zeros(40)
    args = np.array([40], dtype=np.int32).tobytes() + np.array([0.5], dtype=np.float32).tobytes()
    lib.kernel_scale_sq_f32(args, bronze.tensor(src), dst, threads=32, group_size=32)
    kv = np.array([-2, -1, 1, 2], dtype=np.float32)
    np.testing.assert_allclose(dst.to("cpu").numpy(), src * src * 0.5 + kv[np.arange(40) % 4])


def test_kernels_named_like_the_generated_code_compile():
    lib = bronze.compile_shader("""
kernel void f(device float* a, uint L [[thread_position_in_grid]]) { a[L] = 1; }
kernel void id(device float* a, uint i [[thread_position_in_grid]]) { a[i] += 1; }
kernel void bronze_body(device float* a, uint g0 [[thread_position_in_grid]]) { a[g0] *= 3; }
""")
    x = bronze.zeros(3)
    lib.f(x)
    lib.id(x)
    lib.bronze_body(x)
    assert x.numpy().tolist() == [6.0] * 3


def test_a_function_declared_but_never_defined_is_an_error_at_the_call():
    src = "float helper(float v);\nkernel void k(device float* x) {\n  x[0] = helper(x[0]);\n}\n"
    with pytest.raises(bronze.ShaderCompileError, match="never defined") as info:
        bronze.compile_shader(src)  # the CPU's linker and CUDA's ptxas name it differently
    assert info.value.lineno == 3


def test_errors_inside_macros_and_headers_name_the_users_line():
    with pytest.raises(bronze.ShaderCompileError) as info:
        bronze.compile_shader("#define K(n) kernel void n(device float* x) { x[0] = nope; }\n\nK(a)\n")
    assert info.value.lineno == 3 and "shader.metal:3:" in str(info.value) and "K(a)" in str(info.value)
    with pytest.raises(bronze.ShaderCompileError) as info:
        bronze.compile_shader('#include "bad.h"\n', headers={"bad.h": "\n\ninline float g() { return nope; }\n"})
    assert "bad.h:3:" in str(info.value) and info.value.lineno == 3


def test_call_contract_of_torch_mps():
    lib = bronze.compile_shader("""
kernel void axpb(device float* y, constant float& a, constant half& b, constant int& n,
                 uint i [[thread_position_in_grid]]) { if (int(i) < n) y[i] = a * y[i] + float(b); }
""")
    y = bronze.ones(4)
    lib.axpb(y, bronze.tensor(2.0), np.float16(0.5), np.array(4))  # 0-d tensor, NumPy scalar, 0-d array
    assert y.numpy().tolist() == [2.5] * 4
    lib.axpb(y, 1.0, 1, 4, arg_casts={2: "fp16"})
    assert y.numpy().tolist() == [3.5] * 4
    with pytest.raises(ValueError, match="bytes"):  # an fp16 cast does not fit a float parameter
        lib.axpb(y, 1.0, 1, 4, arg_casts="fp16")
    with pytest.raises(RuntimeError, match="buffer") as info:
        lib.axpb([1.0], 1.0, 1, 4)
    assert isinstance(info.value, TypeError)
    # The grid rounded up to whole threadgroups, the tail guarded by the kernel.
    lib.axpb(y, 0.0, 1, 4, threads=64, group_size=32)
    assert y.numpy().tolist() == [1.0] * 4


def test_manual_seed_takes_what_int_takes():
    bronze.manual_seed(np.int64(7))
    a = bronze.rand(4).numpy()
    bronze.manual_seed(7.0)
    assert (bronze.rand(4).numpy() == a).all()
    bronze.manual_seed("7")
    assert bronze.initial_seed() == 7
    bronze.manual_seed(-1)  # as torch: negative seeds wrap to 64 bits
    assert bronze.initial_seed() == 2**64 - 1
    with pytest.raises(ValueError):
        bronze.manual_seed(2**64)
    with pytest.raises(TypeError):
        bronze.manual_seed(None)


def test_unsigned_buffers_take_unsigned_arrays():
    lib = bronze.compile_shader("""
kernel void mix(device ushort* a, device uint* b, device ulong* c, device atomic_uint* n,
                uint i [[thread_position_in_grid]]) {
  a[i] = ushort(65535 - i); b[i] = 0xffffffffu - i; c[i] = ulong(i) << 40;
  atomic_fetch_add_explicit(n, 1u, memory_order_relaxed);
}""")
    a, b, c = (bronze.zeros(4, dtype=d) for d in (bronze.uint16, bronze.uint32, bronze.uint64))
    n = bronze.zeros(1, dtype=bronze.uint32)
    lib.mix(a, b, c, n)
    assert a.to("cpu").numpy().tolist() == [65535, 65534, 65533, 65532]
    assert b.to("cpu").numpy().tolist() == [2**32 - 1 - i for i in range(4)]
    assert c.to("cpu").numpy().tolist() == [i << 40 for i in range(4)]
    assert n.to("cpu").numpy().tolist() == [4]
    assert [p["type"] for p in lib.mix.params[:4]] == ["ushort", "uint", "ulong", "atomic_uint"]


@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
def test_a_library_follows_its_tensors_to_their_device():
    lib = bronze.compile_shader("kernel void inc(device float* x, uint i [[thread_position_in_grid]]) { x[i] += 1; }",
                                device=None)
    cpu = bronze.zeros(4, device="cpu")
    gpu = bronze.zeros(4, device="cuda")
    lib.inc(cpu)
    lib.inc(gpu)
    lib.inc(gpu)
    assert cpu.numpy().tolist() == [1.0] * 4
    assert gpu.to("cpu").numpy().tolist() == [2.0] * 4
    two = bronze.compile_shader("kernel void add(device float* a, device const float* b, uint i [[thread_position_in_grid]]) { a[i] += b[i]; }")
    with pytest.raises(ValueError, match="one call runs on one device"):
        two.add(cpu, gpu)
    pinned = bronze.compile_shader("kernel void inc(device float* x) { x[0] += 1; }", device="cpu")
    with pytest.raises(ValueError, match="the library on cpu"):
        pinned.inc(gpu)
    # A specialization follows its tensors too, built for the GPU as the one
    # kernel it is, not as the library's others.
    consts = bronze.compile_shader("""
constant float amount [[function_constant(0)]];
kernel void other(device float* x, uint i [[thread_position_in_grid]]) { x[i] = -1; }
kernel void bump(device float* x, uint i [[thread_position_in_grid]]) { x[i] += amount; }
""", device=None)
    bump = consts.specialize("bump", {0: 2.5})
    bump(cpu)
    bump(gpu)
    assert cpu.numpy().tolist() == [3.5] * 4
    assert gpu.to("cpu").numpy().tolist() == [4.5] * 4


def test_a_library_compiled_for_a_device_stays_there():
    lib = bronze.compile_shader("kernel void inc(device float* x) { x[0] += 1; }", device="cpu")
    assert str(lib.device) == "cpu:0" or str(lib.device) == "cpu"
    x = bronze.zeros(1, device="cpu")
    lib.inc(x)
    assert x.item() == 1.0


def test_kernel_in_if_zero_and_defined_twice_under_else():
    lib = bronze.compile_shader("""
#if 0
kernel void k(device float* x) { x[0] = 1; }
#else
kernel void k(device float* x) { x[0] = 2; }
#endif
""")
    x = bronze.zeros(1)
    lib.k(x)
    assert x.item() == 2.0


def test_threadgroup_variable_with_initializer_and_sized_by_a_local_constant():
    lib = bronze.compile_shader("""
kernel void tg(device float* out, uint l [[thread_position_in_threadgroup]], uint g [[threadgroup_position_in_grid]]) {
  constexpr int BLOCK = 8;
  threadgroup float buf[BLOCK] = {0};
  threadgroup_barrier(mem_flags::mem_threadgroup);
  buf[l] = float(l + g);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[g * BLOCK + l] = buf[(l + 1) % BLOCK];
}""")
    out = bronze.zeros(16)
    lib.tg(out, threads=16, group_size=8)
    exp = [float((l + 1) % 8 + g) for g in range(2) for l in range(8)]
    assert out.numpy().tolist() == exp
    assert lib.tg.static_thread_group_memory_length >= 32


def test_threadgroup_arrays_sized_by_several_constants_of_one_declaration():
    lib = bronze.compile_shader("""
kernel void tg(device float* out, uint l [[thread_position_in_threadgroup]]) {
  constexpr int BM = 4, BK = BM * 2, pad[2] = {1, 2}, BN = min(BK, 6);
  threadgroup float a[BM * BK];
  threadgroup float b[BN + 1];
  a[l] = float(l);
  if (l < BN + 1) b[l] = 10.0f * l;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[l] = a[BM * BK - 1 - l] + (l < BN + 1 ? b[l] : 0.0f) + pad[1];
}""")
    out = bronze.zeros(32)
    lib.tg(out, threads=32, group_size=32)
    assert out.numpy().tolist() == [31 - l + (10.0 * l if l < 7 else 0) + 2 for l in range(32)]
    assert lib.tg.static_thread_group_memory_length >= 4 * (32 + 7)


def test_if_constexpr_and_comparisons_are_no_constants_for_threadgroup_sizes():
    # MLX's fft: `if constexpr (tg_mem_size == 4096 && ...)` before a
    # threadgroup array sized by that template parameter.
    lib = bronze.compile_shader("""
template <int tg_mem_size>
kernel void k(device float* out, uint l [[thread_position_in_threadgroup]]) {
  constexpr bool small = tg_mem_size <= 64;
  if constexpr (tg_mem_size == 64 && small) {
    out[l] = 1.0f;
  }
  threadgroup float shared[tg_mem_size];
  shared[l] = float(l);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[l] += shared[tg_mem_size - 1 - l];
}
template [[host_name("k64")]] kernel void k<64>(device float*, uint);
""")
    out = bronze.zeros(64)
    lib.k64(out, threads=64, group_size=64)
    assert out.numpy().tolist() == [1.0 + 63 - l for l in range(64)]
    assert lib.k64.static_thread_group_memory_length >= 4 * 64


def test_overloaded_kernel_templates_and_a_bool_class_into_bfloat():
    # MLX's block_masked_gemm: two kernel templates of one name with other
    # template parameters, each instantiated; a mask class assigned to a
    # bfloat through its operator bool.
    lib = bronze.compile_shader("""
struct NoMask {
  char x;
  constexpr METAL_FUNC operator bool() const thread { return true; }
};
template <typename T, typename mask_t, int N>
kernel void scale(device T* x, const device mask_t* m, uint i [[thread_position_in_grid]],
                  uint l [[thread_position_in_threadgroup]]) {
  threadgroup T s[N];
  s[l % N] = T(N);
  T on = T(0);
  on = m[0];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  x[i] = x[i] * on * s[0];
}
template <typename T, int N, bool twice = false>
kernel void scale(device T* x, uint i [[thread_position_in_grid]]) {
  threadgroup T s[N + 1];
  s[0] = T(N);
  x[i] = x[i] + s[0] * (twice ? 2 : 1);
}
#define instantiate_kernel(name, func, ...) \
  template [[host_name(name)]] [[kernel]] decltype(func<__VA_ARGS__>) func<__VA_ARGS__>;
instantiate_kernel("masked", scale, bfloat, NoMask, 4)
instantiate_kernel("plain", scale, bfloat, 3)
instantiate_kernel("plain_twice", scale, bfloat, 3, true)
""")
    x = bronze.full((4,), 1.5, dtype=bronze.bfloat16)
    lib.masked(x, bronze.zeros(1, dtype=bronze.uint8), group_size=4)
    lib.plain(x)
    lib.plain_twice(x)
    assert x.to(bronze.float32).to("cpu").numpy().tolist() == [1.5 * 4 + 3 + 6] * 4
    if bronze.current_device().type == "cpu":  # sized by the parser's expression (NVCC drops what it can)
        assert lib.masked.static_thread_group_memory_length >= 2 * 4
        assert lib.plain.static_thread_group_memory_length >= 2 * 4


def test_instantiation_named_from_the_global_namespace():
    # PyTorch's c10/metal/indexing.h: `kernel void ::c10::metal::unary_dense<...>(...)`
    # with `device ::c10::metal::result_of<...>*` parameters, `::metal::` names,
    # and a declaration that starts with `::` after its template header.
    lib = bronze.compile_shader("""
namespace c10 { namespace metal {
template <typename T>
::metal::enable_if_t<::metal::is_floating_point_v<T>, T> twice(T x) { return x + x; }
template <typename F, typename T> using result_of = decltype(F()(T()));
template <typename T, typename F>
kernel void fill(device result_of<F, T>* x, uint i [[thread_position_in_grid]]) {
  x[i] = F()(T(i) + ::metal::min(T(0.5f), T(1)));
}
}}
struct twice_functor { template <typename T> T operator()(T x) { return c10::metal::twice(x); } };
template [[host_name("fill_float")]] kernel void ::c10::metal::fill<float, twice_functor>(
    device ::c10::metal::result_of<twice_functor, float>* x, uint i);
template [[host_name("fill_half")]] kernel void c10::metal::fill<half, twice_functor>(device half* x, uint i);
""")
    x = bronze.zeros(3)
    lib.fill_float(x)
    assert x.to("cpu").numpy().tolist() == [1.0, 3.0, 5.0]
    assert sorted(lib.kernel_names) == ["fill_float", "fill_half"]


def test_library_templates_beside_metals_functions():
    # PyTorch's c10/metal/utils.h declares its own max<T>/min<T> (NaN-propagating)
    # and kernels call `max(x, y)` under `using namespace metal; using namespace
    # c10::metal;`: Metal's non-template half and float overloads win; Metal
    # has no bfloat max, so there the library's own is the one. Metal's
    # relational functions (isunordered and the rest) are per lane on vectors.
    lib = bronze.compile_shader("""
#include <metal_stdlib>
namespace lib {
template <typename T>
::metal::enable_if_t<::metal::is_floating_point_v<T>, T> max(T a, T b) {
  return ::metal::isunordered(a, b) ? NAN : ::metal::max(a, b);
}
template <>
inline bfloat max(bfloat a, bfloat b) {  // float does not convert to bfloat implicitly
  return bfloat(::metal::isunordered(a, b) ? NAN : ::metal::max(float(a), float(b)));
}
}
using namespace metal;
using namespace lib;
template <typename T>
kernel void k(device const T* x [[buffer(0)]], device float* o [[buffer(1)]], uint i [[thread_position_in_grid]]) {
  const T a = x[2 * i], b = x[2 * i + 1];
  o[8 * i + 0] = max(a, b);
  o[8 * i + 1] = lib::max(a, b);
  o[8 * i + 2] = isunordered(a, b);
  o[8 * i + 3] = isordered(a, b);
  o[8 * i + 4] = islessgreater(a, b);
  o[8 * i + 5] = isgreaterequal(a, b);
  o[8 * i + 6] = isnormal(a);
  const bool2 lt = isless(float2(a, b), float2(b, a));
  o[8 * i + 7] = lt.x + 2 * lt.y;
}
template [[host_name("k_half")]] kernel void k<half>(device const half*, device float*, uint);
template [[host_name("k_bfloat")]] kernel void k<bfloat>(device const bfloat*, device float*, uint);
template [[host_name("k_float")]] kernel void k<float>(device const float*, device float*, uint);
""")
    x = np.array([1.0, 2.0, np.nan, 3.0, -4.0, -4.0, 0.0, np.nan], dtype=np.float32)
    n = len(x) // 2
    a, b = x[0::2], x[1::2]
    propagating = np.where(np.isnan(a) | np.isnan(b), np.nan, np.fmax(a, b))
    with np.errstate(invalid="ignore"):
        want = np.stack([np.fmax(a, b), propagating,
                         np.isnan(a) | np.isnan(b), ~(np.isnan(a) | np.isnan(b)), (a < b) | (a > b), a >= b,
                         np.isfinite(a) & (np.abs(a) >= 2.0 ** -14), (a < b) + 2 * (b < a)], axis=1)
    as_bfloat = bronze.tensor(x).to(dtype=bronze.bfloat16)  # these values are exact in bfloat
    for name, data in (("k_half", bronze.tensor(x.astype(np.float16))), ("k_bfloat", as_bfloat),
                       ("k_float", bronze.tensor(x))):
        o = bronze.zeros(8 * n)
        getattr(lib, name)(data, o, threads=n)
        expected = want.copy()
        if name == "k_bfloat":
            expected[:, 0] = propagating
        np.testing.assert_array_equal(o.to("cpu").numpy().reshape(n, 8), expected, err_msg=name)


def test_library_simdgroup_templates_beside_metals_and_qualified_atomics():
    # PyTorch's c10/metal/reduction_utils.h declares simd_sum<T> and friends
    # (and a float2 overload) that kernels call unqualified under `using
    # namespace metal; using namespace c10::metal;`: Metal's per-type
    # functions win for scalars, the library's float2 overload for float2.
    # MLX's bf16_math.h adds bfloat overloads to namespace metal, which has
    # none. c10's atomic.h calls ::metal::atomic_*_explicit.
    lib = bronze.compile_shader("""
#include <metal_stdlib>
namespace metal {
inline bfloat simd_max(bfloat x) { return static_cast<bfloat>(__metal_simd_max(static_cast<float>(x)) + 64); }
}
namespace lib {
template <typename T>
inline ::metal::enable_if_t<!::metal::is_same_v<T, long>, T> simd_sum(T v) { return T(::metal::simd_sum(v) + 1000); }
inline float2 simd_sum(float2 v) { return float2(::metal::simd_sum(v.x), -::metal::simd_sum(v.y)); }
template <typename T> inline T simd_max(T v) { return T(::metal::simd_max(v) + 1000); }
}
using namespace metal;
using namespace lib;
kernel void reduce(device const float* x [[buffer(0)]], device float* o [[buffer(1)]],
                   device ::metal::atomic<int>* count [[buffer(2)]], uint i [[thread_position_in_grid]],
                   uint lane [[thread_index_in_simdgroup]]) {
  const float v = x[i];
  const float s = simd_sum(v);
  const float2 s2 = simd_sum(float2(v, 2 * v));
  const bfloat m = simd_max(bfloat(v));
  const half h = simd_broadcast(half(v), ushort(3));
  const int n = simd_sum(int(1));
  if (lane == 0) {
    device float* r = o + i / 32 * 5;
    r[0] = s; r[1] = s2.y; r[2] = m; r[3] = h; r[4] = n;
  }
  ::metal::atomic_fetch_add_explicit(count, 2, ::metal::memory_order_relaxed);
  if (::metal::atomic_load_explicit(count, metal::memory_order_relaxed) < 0) o[0] = -1;
}
""")
    x = np.arange(64, dtype=np.float32)
    o, count = bronze.zeros(10), bronze.zeros(1, dtype=bronze.int32)
    lib.reduce(bronze.tensor(x), o, count)  # on the current device, as o and count
    rows = x.reshape(2, 32)
    want = np.stack([rows.sum(1), -2 * rows.sum(1), rows.max(1) + 64, rows[:, 3], [32, 32]], axis=1)
    np.testing.assert_array_equal(o.to("cpu").numpy().reshape(2, 5), want)
    assert count.to("cpu").numpy().tolist() == [128]


def test_a_librarys_own_scalar_simd_function_beside_using_namespace_metal():
    # mistral.rs's ssm.metal defines its own float simd_sum(float) at global
    # scope after `using namespace metal`: a non-template, it is the one an
    # unqualified call takes, where Metal's per-type functions would make the
    # call ambiguous were they non-templates too. Its max over half still
    # reaches Metal's.
    lib = bronze.compile_shader("""
#include <metal_stdlib>
using namespace metal;
static inline float simd_sum(float x) {
  for (ushort offset = 16; offset > 0; offset >>= 1) x += simd_shuffle_xor(x, offset);
  return x + 0.5f;
}
kernel void reduce(device const float* x [[buffer(0)]], device float* o [[buffer(1)]],
                   uint i [[thread_position_in_grid]], uint lane [[thread_index_in_simdgroup]]) {
  const float s = simd_sum(x[i]);
  const half m = simd_max(half(x[i]));
  const int n = simd_sum(int(2));
  if (lane == 0) { o[i / 32 * 3] = s; o[i / 32 * 3 + 1] = m; o[i / 32 * 3 + 2] = n; }
}
""")
    x = np.arange(64, dtype=np.float32)
    o = bronze.zeros(6)
    lib.reduce(bronze.tensor(x), o)
    rows = x.reshape(2, 32)
    want = np.stack([rows.sum(1) + 0.5, rows.max(1), [64, 64]], axis=1)
    np.testing.assert_array_equal(o.to("cpu").numpy().reshape(2, 3), want)


def test_kernel_templates_overloaded_on_their_parameters():
    # PyTorch's FusedOptimizerOps: two kernel templates of one name and the
    # same template parameters, told apart by their parameter lists, each
    # instantiated with its list; types named from the global namespace in
    # the signature and in a threadgroup array (c10's Gemv.h).
    lib = bronze.compile_shader("""
namespace lib {
typedef float scale_t;
template <typename T> using acc_t = float;
}
template <typename T>
kernel void step(device T* p [[buffer(0)]], constant ::lib::scale_t& lr [[buffer(1)]],
                 uint i [[thread_position_in_grid]], uint l [[thread_position_in_threadgroup]]) {
  threadgroup ::lib::acc_t<T> s[4];
  s[l % 4] = lr;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  p[i] = T(p[i] - s[l % 4]);
}
template <typename T>
kernel void step(device T* p [[buffer(0)]], device T* m [[buffer(1)]], constant ::lib::scale_t& lr [[buffer(2)]],
                 uint i [[thread_position_in_grid]]) {
  m[i] = T(m[i] * 0.5f + p[i]);
  p[i] = T(p[i] - lr * m[i]);
}
#define REGISTER(T)                                                                                      \
  template [[host_name("step_" #T)]] kernel void step<T>(device T * p [[buffer(0)]],                     \
      constant ::lib::scale_t & lr [[buffer(1)]], uint i [[thread_position_in_grid]],                    \
      uint l [[thread_position_in_threadgroup]]);                                                        \
  template [[host_name("step_momentum_" #T)]] kernel void step<T>(device T * p [[buffer(0)]],            \
      device T * m [[buffer(1)]], constant ::lib::scale_t & lr [[buffer(2)]], uint i [[thread_position_in_grid]]);
REGISTER(float)
REGISTER(half)
""")
    assert sorted(lib.kernel_names) == ["step_float", "step_half", "step_momentum_float", "step_momentum_half"]
    for t, np_t in ((bronze.float32, np.float32), (bronze.float16, np.float16)):
        name = "float" if t == bronze.float32 else "half"
        p, m = bronze.full((8,), 4.0, dtype=t), bronze.full((8,), 2.0, dtype=t)
        getattr(lib, "step_" + name)(p, 0.5, group_size=4)
        getattr(lib, "step_momentum_" + name)(p, m, 2.0)
        assert m.to("cpu").numpy().tolist() == [4.5] * 8  # 2 * 0.5 + 3.5
        assert p.to("cpu").numpy().astype(np_t).tolist() == [3.5 - 2 * 4.5] * 8


def test_explicit_specializations_in_class_scope():
    # MLX's operators specialize a member template inside the class (valid
    # Metal and Clang, CWG 727); GCC takes them as overloads.
    lib = bronze.compile_shader("""
struct pair2 { float a, b; };
struct Max {
  template <typename T> T operator()(T x, T y) { return x > y ? x : y; }
  template <> pair2 operator()(pair2 x, pair2 y) { return x.a > y.a ? x : y; }
  template <typename T> static T twice(T x) { return x + x; }
  template <> static int twice(int x) { return x * 100; }
};
template <typename Op>
kernel void k(device float* out, uint i [[thread_position_in_grid]]) {
  Op op;
  pair2 p = op(pair2{float(i), 1.0f}, pair2{2.0f, 5.0f});
  out[i] = op(float(i), 1.5f) + p.b + float(Op::twice(int(i))) + Op::twice(0.25f);
}
template [[host_name("k_max")]] kernel void k<Max>(device float*, uint);
""")
    out = bronze.zeros(4)
    lib.k_max(out)
    assert out.numpy().tolist() == [max(i, 1.5) + (1.0 if i > 2 else 5.0) + 100 * i + 0.5 for i in range(4)]


def test_deduced_instantiation_runs():
    lib = bronze.compile_shader("""
template <int N> struct Dims { int shape[N]; };
template <typename T, int N>
[[kernel]] void first_dim(const device T* in [[buffer(0)]], device T* out [[buffer(1)]],
                          const constant Dims<N>* d [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  out[i] = in[i] * T(d->shape[0] + N);
}
template [[host_name("first_dim_f2")]] [[kernel]] void first_dim(const device float* in [[buffer(0)]],
    device float* out [[buffer(1)]], const constant Dims<2>* d [[buffer(2)]], uint i [[thread_position_in_grid]]);
""")
    out = bronze.zeros(3)
    lib.first_dim_f2(bronze.ones(3), out, np.array([5, 0], dtype=np.int32).tobytes())
    assert out.to("cpu").numpy().tolist() == [7.0] * 3


# Apple's internal intrinsics as MLX's headers call them, and the simdgroup
# functions they reach: bronze's own kernel in that style.
INTRINSICS = r"""
#include <metal_stdlib>
using namespace metal;
#define fwd_math(name) METAL_FUNC float my_##name(float x) { return __metal_##name(x, __METAL_MAYBE_FAST_MATH__); }
fwd_math(fabs) fwd_math(sinpi) fwd_math(cospi) fwd_math(exp10)
kernel void lanes(device float* math [[buffer(0)]], device int* shf [[buffer(1)]],
                  uint l [[thread_index_in_simdgroup]]) {
  float x = float(l) - 15.5f;
  math[l * 5 + 0] = my_fabs(x);
  math[l * 5 + 1] = my_sinpi(x / 8);
  math[l * 5 + 2] = my_cospi(x / 8);
  math[l * 5 + 3] = my_exp10(x / 16);
  math[l * 5 + 4] = __metal_fmax3(x, 2.0f, -x, __METAL_PRECISE_MATH__);
  int v = int(l), f = 100 + int(l);
  shf[l * 7 + 0] = simd_shuffle_and_fill_down(v, f, ushort(3));
  shf[l * 7 + 1] = simd_shuffle_and_fill_up(v, f, ushort(5), ushort(8));
  shf[l * 7 + 2] = simd_shuffle_rotate_up(v, ushort(2));
  shf[l * 7 + 3] = simd_and(v | 64);
  shf[l * 7 + 4] = simd_or(v);
  shf[l * 7 + 5] = simd_xor(v);
  shf[l * 7 + 6] = simd_prefix_inclusive_product(l < 4 ? 2 : 1);
}
"""


def test_metal_intrinsics_and_simdgroup_permutations():
    lib = bronze.compile_shader(INTRINSICS)
    math = bronze.zeros(32 * 5)
    shf = bronze.zeros(32 * 7, dtype=bronze.int32)
    lib.lanes(math, shf, threads=32, group_size=32)
    m = math.to("cpu").numpy().reshape(32, 5)
    s = shf.to("cpu").numpy().reshape(32, 7)
    x = np.arange(32, dtype=np.float32) - 15.5
    np.testing.assert_allclose(m[:, 0], np.abs(x))
    np.testing.assert_allclose(m[:, 1], np.sin(np.pi * x / 8), atol=2e-6)
    np.testing.assert_allclose(m[:, 2], np.cos(np.pi * x / 8), atol=2e-6)
    np.testing.assert_allclose(m[:, 3], 10 ** (x / 16), rtol=2e-6)
    np.testing.assert_allclose(m[:, 4], np.maximum(np.abs(x), 2))
    lane = np.arange(32)
    np.testing.assert_array_equal(s[:, 0], np.where(lane + 3 < 32, lane + 3, 100 + lane + 3 - 32))
    seg, j = lane // 8 * 8, lane % 8
    np.testing.assert_array_equal(s[:, 1], np.where(j >= 5, seg + j - 5, 100 + seg + j + 8 - 5))
    np.testing.assert_array_equal(s[:, 2], (lane - 2) % 32)
    assert (s[:, 3] == 64).all() and (s[:, 4] == 31).all() and (s[:, 5] == 0).all()
    np.testing.assert_array_equal(s[:, 6], 2 ** np.minimum(lane + 1, 4))


def test_a_compiled_library_carries_its_includes(tmp_path):
    inc = tmp_path / "inc"
    inc.mkdir()
    (inc / "k.h").write_text("#define V 4.0f\n")
    src = tmp_path / "k.metal"
    src.write_text('#include "k.h"\nkernel void k(device float* x) { x[0] = V; x[1] = x[1] + 0.0f; }\n')
    out = tmp_path / "k.bronzelib"
    import subprocess
    r = subprocess.run([sys.executable, "-m", "bronze", "compile", str(src), "-I", str(inc), "-o", str(out),
                        "--math-mode", "safe"], capture_output=True, text=True, env=dict(os.environ))
    assert r.returncode == 0, r.stderr
    (inc / "k.h").unlink()  # the library holds the preprocessed source
    x = bronze.full((2,), -0.0)
    bronze.load_metallib(str(out)).k(x)
    got = x.to("cpu").numpy()
    assert got[0] == 4.0
    assert not np.signbit(got[1])  # safe math: -0 + 0 is +0 (fast may fold x + 0 to x)


# llama.cpp and MLX style function constants: computed indices, a guarded
# parameter, two parameters sharing a slot under exclusive constants.
FUNCTION_CONSTANTS = r"""
#include <metal_stdlib>
using namespace metal;
#define FC_SCALE 300
constant bool has_bias [[function_constant(FC_SCALE + 0)]];
constant bool bias_is_value [[function_constant(FC_SCALE + 1)]];
constant int repeat_ [[function_constant(FC_SCALE + 2)]];
constant int repeats = is_function_constant_defined(repeat_) ? repeat_ : 1;
kernel void scale(device float* y [[buffer(0)]],
                  device const float* bias [[buffer(1), function_constant(has_bias)]],
                  constant float& bias_value [[buffer(1), function_constant(bias_is_value)]],
                  constant float& a [[buffer(2)]],
                  uint i [[thread_position_in_grid]]) {
  float b = has_bias ? bias[i] : bias_is_value ? bias_value : 0.0f;
  for (int r = 0; r < repeats; ++r) y[i] = a * y[i] + b;
}
"""


def test_function_constants_specialize_a_kernel():
    plain = bronze.compile_shader(FUNCTION_CONSTANTS)
    y = bronze.ones(4)
    plain.scale(y, 3.0)  # no bias parameter at all
    assert y.to("cpu").numpy().tolist() == [3.0] * 4
    with_bias = bronze.compile_shader(FUNCTION_CONSTANTS, constants={"has_bias": True, 302: 2})
    y = bronze.ones(4)
    with_bias.scale(y, bronze.arange(4, dtype=bronze.float32), 2.0)
    assert y.to("cpu").numpy().tolist() == [2 * (2 + i) + i for i in range(4)]
    by_value = bronze.compile_shader(FUNCTION_CONSTANTS, constants={"bias_is_value": True})
    y = bronze.ones(4)
    by_value.scale(y, 0.5, 2.0)  # slot 1 is now the value
    assert y.to("cpu").numpy().tolist() == [2.5] * 4
    assert [p["name"] for p in by_value.scale.params if p["binding"] >= 0] == ["y", "bias_value", "a"]
    with pytest.raises(ValueError, match="declares: has_bias"):
        bronze.compile_shader(FUNCTION_CONSTANTS, constants={"nope": 1})
    with pytest.raises(TypeError):
        bronze.compile_shader(FUNCTION_CONSTANTS, constants={"has_bias": "yes"})


def test_a_library_specializes_one_kernel_per_constant_set():
    # MTLLibrary newFunctionWithName:constantValues:, from a compiled library
    # and from a precompiled one (which carries its unit).
    for lib, repeats in ((bronze.compile_shader(FUNCTION_CONSTANTS), 1),
                         (bronze.load_metallib(bronze.compile_library(FUNCTION_CONSTANTS, constants={302: 3})), 3)):
        k = lib.specialize("scale", {"has_bias": True})
        assert k is not lib.scale and [p["name"] for p in k.params if p["binding"] >= 0] == ["y", "bias", "a"]
        y = bronze.ones(4)
        k(y, bronze.arange(4, dtype=bronze.float32), 1.0)
        assert y.to("cpu").numpy().tolist() == [1.0 + repeats * i for i in range(4)]
        assert lib.specialize("scale", {"has_bias": True}).params == k.params  # built once, then found
        y = bronze.ones(4)
        lib.specialize("scale", {302: 2, "bias_is_value": True})(y, 0.5, 2.0)
        assert y.to("cpu").numpy().tolist() == [2 * (2 * 1 + 0.5) + 0.5] * 4  # the set's 302 over the library's
        y = bronze.ones(4)
        lib.scale(y, 2.0)  # the library itself is unchanged
        assert y.to("cpu").numpy().tolist() == [2.0 ** repeats] * 4
    with pytest.raises(bronze.KernelNotFoundError, match="no kernel 'nope'"):
        lib.specialize("nope", {"has_bias": True})
    with pytest.raises(ValueError, match="declares no function constant 'missing'"):
        lib.specialize("scale", {"missing": 1})
    with pytest.raises(TypeError, match="a bool, int or float"):
        lib.specialize("scale", {"has_bias": [1]})
    assert lib.scale.name == "scale"


def test_a_specialization_of_one_kernel_among_several():
    # llama.cpp builds each pipeline with its own constants from a library of
    # hundreds of kernels: a specialization builds the kernel it names, not
    # the library's others, and finds it among the unit's kernels whatever
    # its place; a launch binding one buffer as both input and output (the
    # build without __restrict__ on CUDA) finds it the same way.
    lib = bronze.compile_shader("""
#include <metal_stdlib>
using namespace metal;
constant int shift [[function_constant(0)]];
constant bool twice [[function_constant(1)]];
kernel void first(device float* y, uint i [[thread_position_in_grid]]) { y[i] = 100 + shift; }
template <typename T>
kernel void add_shift(device const T* x, device T* y, uint i [[thread_position_in_grid]]) {
  T v = x[i] + T(shift);
  y[i] = twice ? v * 2 : v;
}
template [[host_name("add_shift_f")]] kernel void add_shift<float>(device const float*, device float*, uint);
template [[host_name("add_shift_i")]] kernel void add_shift<int>(device const int*, device int*, uint);
""")
    x = bronze.arange(4, dtype=bronze.int32)
    y = bronze.zeros(4, dtype=bronze.int32)
    lib.specialize("add_shift_i", {0: 3})(x, y)
    assert y.to("cpu").numpy().tolist() == [3, 4, 5, 6]
    f = bronze.arange(4, dtype=bronze.float32)
    lib.specialize("add_shift_f", {"shift": 1, "twice": True})(f, f)  # in place: input and output alias
    assert f.to("cpu").numpy().tolist() == [2.0, 4.0, 6.0, 8.0]
    y = bronze.zeros(2)
    lib.specialize("first", {0: 5})(y)
    assert y.to("cpu").numpy().tolist() == [105.0, 105.0]
    lib.add_shift_i(x, x)  # the library's own build: shift undefined, 0
    assert x.to("cpu").numpy().tolist() == [0, 1, 2, 3]


# MLX-style helpers: metal type traits selecting overloads, constexpr limits
# and bfloat constants, functions overloaded on address spaces.
TRAITS = r"""
#include <metal_stdlib>
using namespace metal;
template <typename T> struct Acc { using type = conditional_t<is_floating_point_v<T>, float, int>; };
template <typename T, enable_if_t<is_integral_v<T>, bool> = true> METAL_FUNC int kind(T) { return 1; }
template <typename T, enable_if_t<is_floating_point_v<T>, bool> = true> METAL_FUNC int kind(T) { return 2; }
struct Box {
  float v;
  constexpr Box() thread : v(1) {}
  constexpr Box() threadgroup : v(1) {}
  float get() const thread { return v; }
  float get() const device { return v; }
};
inline void bump(thread float& x) { x += 1; }
inline void bump(threadgroup float& x) { x += 1; }
kernel void traits(device float* out, uint i [[thread_position_in_grid]]) {
  constexpr float lo = numeric_limits<float>::lowest();
  constexpr int imax = numeric_limits<int>::max();
  constexpr bfloat half_b = bfloat(0.5f);
  static_assert(is_same_v<typename Acc<half>::type, float> && is_same_v<typename Acc<short>::type, int>, "acc");
  static_assert(is_convertible_v<int, float> && !is_convertible_v<float, bfloat> && is_convertible_v<int, bfloat>,
                "conv");  // as Metal: bfloat from integers implicitly, from float explicitly
  static_assert(is_signed_v<int> && is_unsigned_v<uint> && !is_floating_point_v<int>, "sign");
  static_assert(is_same_v<make_unsigned_t<int>, uint> && is_same_v<remove_cv_t<const volatile int>, int>, "make");
  static_assert(vec_elements<float4>::value == 4 && is_vector_v<half2> && !is_vector_v<float>, "vec");
  Box b;
  float x = b.get();
  bump(x);
  out[i] = (lo < 0 ? 1 : 0) + (imax == 2147483647 ? 10 : 0) + kind(i) * 100 + kind(x) * 1000 +
           float(half_b) * 10000 + x * 100000 + numeric_limits<half>::epsilon() * 0;
}
"""


def test_type_traits_limits_and_address_space_overloads():
    lib = bronze.compile_shader(TRAITS)
    out = bronze.zeros(2)
    lib.traits(out)
    assert out.to("cpu").numpy().tolist() == [1 + 10 + 100 + 2000 + 5000 + 200000] * 2


def test_includes_stay_inside_their_roots_and_other_files_are_never_echoed():
    with pytest.raises(bronze.ShaderCompileError, match="reaches outside") as info:
        bronze.compile_shader('kernel void k(device float* x) {}\n#include "/etc/passwd"\n')
    assert info.value.lineno == 2 and "root:" not in str(info.value)
    with pytest.raises(bronze.ShaderCompileError) as info:  # a #line naming another file: named, never read
        bronze.compile_shader('#line 1 "/etc/passwd"\nkernel void k(device float* x) { x[0] = nope; }\n', device="cpu")
    assert "root:" not in str(info.value)


def test_a_file_of_kernel_templates_alone_is_a_library_without_kernels():
    # mistral.rs keeps its kernel templates in copy_impl.metal, which
    # copy.metal includes and instantiates; alone it compiles, as Metal does,
    # to no kernels, and a lookup says why.
    impl = ("template <typename T>\n"
            "kernel void copy_g(device const T* src, device T* dst, uint i [[thread_position_in_grid]]) { dst[i] = src[i]; }\n")
    alone = bronze.compile_shader(impl, filename="copy_impl.metal")
    assert alone.kernel_names == []
    with pytest.raises(bronze.KernelNotFoundError, match="defines the kernel template 'copy_g' but instantiates none"):
        alone.copy_g
    lib = bronze.compile_shader('#include "copy_impl.metal"\n'
                                'template [[host_name("copy_float")]] kernel void copy_g<float>('
                                'device const float*, device float*, uint);\n', headers={"copy_impl.metal": impl})
    x = bronze.tensor(np.arange(8, dtype=np.float32))
    y = bronze.zeros(8)
    lib.copy_float(x, y)
    assert y.numpy().tolist() == list(range(8))


@pytest.mark.parametrize("header", ["metal_tensor", "MetalPerformancePrimitives/MetalPerformancePrimitives.h"])
def test_metal_4_headers_are_not_supported_at_the_users_include(header):
    kernel = "kernel void k(device float* x, uint i [[thread_position_in_grid]]) { x[i] = 1; }\n"
    # MLX's _nax kernels include Metal 4's headers only where the Metal
    # version has them: under bronze's Metal 3.2 that branch drops out.
    guarded = f"#include <metal_stdlib>\n#if __METAL_VERSION__ >= 400\n#include <{header}>\n#endif\n" + kernel
    assert bronze.compile_shader(guarded).kernel_names == ["k"]
    with pytest.raises(bronze.ShaderNotSupportedError, match=r"shader\.metal:2: error: bronze does not support <") as info:
        bronze.compile_shader(f"#include <metal_stdlib>\n#include <{header}>\n" + kernel)
    assert isinstance(info.value, bronze.NotSupportedError) and isinstance(info.value, bronze.ShaderCompileError)
    assert info.value.lineno == 2
    assert bronze.compile_shader(kernel).kernel_names == ["k"]


@pytest.mark.parametrize("case", ["dev-zero", "macro-bomb", "fifo"])
def test_the_compiler_runs_bounded(case, tmp_path):
    import subprocess
    env, inc = {}, str(tmp_path)
    if case == "dev-zero":  # GCC reads on until its memory limit; Clang reads it as empty, then it is outside
        src, words = '#include "/dev/zero"\n', ("memory limit", "reaches outside")
    elif case == "macro-bomb":
        src, words = "#define A(x) x x x x x x x x\n#define B(x) A(A(A(x)))\n#define C(x) B(B(B(x)))\nC(C(1))\n", ("memory limit",)
    else:  # N10: an include nobody ever writes to blocked the preprocessor until the time limit (600 s)
        os.mkfifo(tmp_path / "pipe.h")
        src, words = '#include "pipe.h"\n', ('shader.metal:1:10: error: cannot include "pipe.h"',)
    code = ("import bronze, sys\n"
            "try:\n    bronze.compile_shader(sys.argv[1], include_dirs=[sys.argv[2]])\n"
            "except bronze.ShaderCompileError as e:\n    print(e)\n"
            "bronze.compile_shader('kernel void k(device float* x) { x[0] = 1; }')\nprint('usable')\n")
    r = subprocess.run([sys.executable, "-c", code, src, inc], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, **env))
    assert any(w in r.stdout for w in words) and "usable" in r.stdout, r.stdout + r.stderr
    if case == "fifo":
        assert "it is a FIFO; bronze includes regular files only" in r.stdout


def test_includes_are_regular_files_found_by_bronze(tmp_path):
    # N10: only regular files are read, looked at before they are opened
    # (a FIFO blocks its reader, a device may act on its opening); a folder
    # of an include's name is passed over, as the preprocessor's search does.
    import subprocess
    src_dir, inc = tmp_path / "src", tmp_path / "inc"
    src_dir.mkdir(), inc.mkdir()
    os.mkfifo(src_dir / "fifo.h")
    (inc / "null.h").symlink_to("/dev/null")
    (src_dir / "v.h").mkdir()
    (inc / "v.h").write_text("#define V 3.0f\n")
    kernel = "kernel void k(device float* o) { o[0] = V; }\n"
    code = ("import bronze, sys, json\nout = []\n"
            "for src in json.loads(sys.argv[1]):\n"
            "    try:\n        lib = bronze.compile_shader(src, filename=sys.argv[2], include_dirs=[sys.argv[3]])\n"
            "        out.append('ok')\n"
            "    except bronze.ShaderCompileError as e:\n        out.append(str(e).splitlines()[0])\n"
            "print(json.dumps(out))\n")
    sources = ['#include "fifo.h"\n' + kernel, '\n#include <null.h>\n' + kernel,
               '#if __has_include("fifo.h")\n#error found\n#endif\n#include "v.h"\n' + kernel]
    r = subprocess.run([sys.executable, "-c", code, json.dumps(sources), str(src_dir / "k.metal"), str(inc)],
                       capture_output=True, text=True, timeout=120)  # each would block for 600 s
    assert r.returncode == 0, r.stderr
    fifo, device, has_include = json.loads(r.stdout)
    assert fifo == f'{src_dir}/k.metal:1:10: error: cannot include "fifo.h" ({src_dir}/fifo.h): it is a FIFO; ' \
                   "bronze includes regular files only"
    assert device.startswith(f"{src_dir}/k.metal:2:10: error: cannot include <null.h> ({inc}/null.h): it is a "
                             "character device")
    assert has_include == "ok"  # the FIFO is no file to include; the folder v.h is passed over for inc/v.h


SECRET = "#SECRET_TOKEN_sk_live_12345\nint leak;\n"


def test_files_outside_the_roots_are_never_read_nor_looked_at(tmp_path):
    # N14, N36: the preprocessor read an include outside the roots before
    # bronze checked it, and its error echoed the file's first bad
    # directive; __has_include and #pragma GCC dependency told whether any
    # path exists. bronze resolves every name itself: a name that leaves
    # the roots is refused (or not there, for __has_include) whether or not
    # the file exists.
    secret = tmp_path / "secret" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text(SECRET)
    user = tmp_path / "src" / "k.metal"
    user.parent.mkdir()
    kernel = "kernel void k(device float* o) { o[0] = 1; }\n"
    for src, kw in [(f'#include "{secret}"\n', {}), ('#include "../secret/secret.txt"\n', {"filename": str(user)}),
                    (f'#include_next "{secret}"\n', {}), ('#include <../secret/secret.txt>\n', {"include_dirs": [user.parent]}),
                    # Directives as the preprocessor reads them: a line splice in the name, the
                    # digraph %:, a byte order mark, a string that is no raw string (a8R"(...)
                    (f'#inc\\\nlude "{secret}"\n', {}), (f'%:include "{secret}"\n', {}),
                    (f'\ufeff#include "{secret}"\n', {}), (f'int a8R"(\n#include "{secret}"\n)";\n', {})]:
        for find in (bronze.find_kernels, bronze.compile_shader):
            with pytest.raises(bronze.ShaderCompileError, match="reaches outside the source's folder") as info:
                find(src + kernel, **kw)
            assert "SECRET" not in str(info.value) and info.value.lineno in (1, 2), src
    # What bronze answers about a path outside is the same whether it exists or not.
    def answer(src):
        try:
            return bronze.compile_shader(src + kernel).kernel_names
        except bronze.ShaderCompileError as e:
            return str(e).replace(str(secret), "X").replace(str(tmp_path / "absent"), "X")
    for probe in ['#if __has_include("{}")\n#error it exists\n#endif\n', '#pragma GCC dependency "{}"\n']:
        assert answer(probe.format(secret)) == answer(probe.format(tmp_path / "absent"))
    assert answer('#if __has_include("{}")\n#error it exists\n#endif\n'.format(secret)) == ["k"]
    for src in [f'_Pragma("GCC dependency \\"{secret}\\"")\n', f'#define P(x) _Pragma(#x)\nP(GCC dependency "{secret}")\n']:
        with pytest.raises(bronze.ShaderCompileError, match="'GCC dependency' outside a '#pragma GCC dependency' line"):
            bronze.compile_shader(src + kernel)
    # Names inside the roots still go up and down between folders.
    (tmp_path / "src" / "sub").mkdir()
    (tmp_path / "src" / "sub" / "a.h").write_text('#include "../b.h"\n')
    (tmp_path / "src" / "b.h").write_text("#define B 2.0f\n")
    lib = bronze.compile_shader('#include "sub/a.h"\n#pragma GCC dependency "b.h"\n'
                                "kernel void k(device float* o) { o[0] = B; }\n", filename=str(user))
    o = bronze.zeros(1)
    lib.k(o)
    assert o.item() == 2.0
    # A source in a folder of an include folder reaches its siblings by "..",
    # as kernels-community's attention/paged_attention.metal includes "../utils.metal".
    (tmp_path / "src" / "sub" / "k2.metal").write_text('#include "../b.h"\nkernel void k(device float* o) { o[0] = B; }\n')
    lib = bronze.compile_shader((tmp_path / "src" / "sub" / "k2.metal").read_text(),
                                filename=str(tmp_path / "src" / "sub" / "k2.metal"), include_dirs=[user.parent])
    lib.k(o)
    assert o.item() == 2.0


def test_a_computed_include_name_is_refused_at_its_line():
    # A name made by a macro would be resolved by the preprocessor, out of
    # bronze's sight (it could name any path): refused, saying so.
    with pytest.raises(bronze.ShaderCompileError, match=r"shader.metal:2:10: error: #include of a computed name"):
        bronze.compile_shader('#define F "/etc/passwd"\n#include F\n')
    with pytest.raises(bronze.ShaderCompileError, match=r"shader.metal:1:30: error: __has_include of a computed name"):
        bronze.compile_shader('#define HAS(x) __has_include(x)\n#if HAS("/etc/shadow")\n#endif\n')


def test_an_edited_header_with_its_size_and_mtime_kept_is_rebuilt(tmp_path):
    # N45: the in-process memo compared size and mtime: an edit that kept
    # both served the stale kernel. It compares contents.
    header = tmp_path / "val.h"
    header.write_text("#define VAL 4.0f\n")
    src = '#include "val.h"\nkernel void k(device float* o) { o[0] = VAL; }\n'
    o = bronze.zeros(1)
    bronze.compile_shader(src, include_dirs=[tmp_path]).k(o)
    assert o.item() == 4.0
    st = os.stat(header)
    header.write_text("#define VAL 5.0f\n")
    os.utime(header, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(header).st_size == st.st_size and os.stat(header).st_mtime_ns == st.st_mtime_ns
    bronze.compile_shader(src, include_dirs=[tmp_path]).k(o)
    assert o.item() == 5.0
    # A header put where the search now finds it first is an edit too.
    (tmp_path / "first").mkdir()
    bronze.compile_shader(src, include_dirs=[tmp_path / "first", tmp_path]).k(o)
    assert o.item() == 5.0
    (tmp_path / "first" / "val.h").write_text("#define VAL 6.0f\n")
    bronze.compile_shader(src, include_dirs=[tmp_path / "first", tmp_path]).k(o)
    assert o.item() == 6.0


# bfloat as Metal mixes it: with integers it stays bfloat, with float it is
# float, integers convert to it implicitly, a float only explicitly.
BFLOAT_MIX = r"""
#include <metal_stdlib>
using namespace metal;
template <typename T> METAL_FUNC T sign_of(T x) { return (x > T(0)) - (x < T(0)); }
kernel void mix(device bfloat* out, device float* f, constant const bfloat& step, uint i [[thread_position_in_grid]]) {
  static_assert(is_same_v<decltype(step * i), bfloat> && is_same_v<decltype(step * 2.0f), float>, "mix");
  out[i] = step + i * step;      // bfloat op integer: bfloat
  bfloat z = 0;                  // an integer converts implicitly
  z += 1;
  f[i] = step * 0.5f + float(z) + sign_of(bfloat(-3.0f));
}
"""


def test_bfloat_mixes_as_metal():
    lib = bronze.compile_shader(BFLOAT_MIX)
    out = bronze.zeros(3, dtype=bronze.bfloat16)
    f = bronze.zeros(3)
    lib.mix(out, f, 1.5)
    assert out.to("cpu").to(bronze.float32).numpy().tolist() == [1.5, 3.0, 4.5]
    assert f.to("cpu").numpy().tolist() == [0.75] * 3


def test_simd_bitwise_functions_combine_float_bits():
    lib = bronze.compile_shader("""
kernel void bits(device float* out, uint l [[thread_index_in_simdgroup]]) {
  out[l] = simd_or(l == 3 ? -0.0f : 0.0f) + simd_and(1.5f) + simd_xor(l < 2 ? 2.0f : 0.0f);
}""")
    out = bronze.zeros(32)
    lib.bits(out, threads=32, group_size=32)
    # -0 | 0 is -0; 1.5 & 1.5 is 1.5; 2.0 ^ 2.0 ^ 0... is 0
    assert out.to("cpu").numpy().tolist() == [1.5] * 32


def test_partial_specializations_on_address_spaces_collapse():
    lib = bronze.compile_shader("""
template <typename T> struct elem;
template <typename T> struct elem<thread T*> { using type = T; };
template <typename T> struct elem<device T*> { using type = T; };
template <typename T> struct elem<threadgroup T*> { using type = T; };
template <typename T> struct elem<constant T*> { using type = T; };
kernel void k(device float* x, uint i [[thread_position_in_grid]]) {
  typename elem<device float*>::type v = 2;
  typename elem<constant float*>::type w = 3;
  x[i] = v + w;
}""")
    x = bronze.zeros(2)
    lib.k(x)
    assert x.to("cpu").numpy().tolist() == [5.0, 5.0]


def test_a_class_specialization_keeps_members_named_like_the_primarys():
    # MLX's BlockMMA<complex64_t, ...>: a partial specialization whose
    # constructor and methods have the primary template's signatures.
    lib = bronze.compile_shader("""
template <typename T, int N> struct Acc {
  T v;
  METAL_FUNC Acc(ushort a) thread : v(T(a * N)) {}
  METAL_FUNC T get() const thread { return v; }
};
template <int N> struct Acc<float2, N> {
  float2 v;
  METAL_FUNC Acc(ushort a) thread : v(float(a), -float(a * N)) {}
  METAL_FUNC float2 get() const thread { return v; }
  METAL_FUNC float imag() const thread { return v.y; }
};
kernel void k(device float* x, uint i [[thread_position_in_grid]]) {
  thread Acc<float, 3> a(ushort(i + 1));
  thread Acc<float2, 3> c(ushort(i + 1));
  x[i] = a.get() + c.get().x + 10 * c.imag();
}""")
    x = bronze.zeros(3)
    lib.k(x)
    assert x.to("cpu").numpy().tolist() == [3 * n + n - 30 * n for n in (1, 2, 3)]


def test_metal_vec_uniform_and_bfloat_from_half():
    lib = bronze.compile_shader("""
kernel void k(device bfloat* o, device const half* h, uint i [[thread_position_in_grid]]) {
  metal::vec<float, 2> v = metal::vec<float, 2>(1.0f, 2.0f);
  uniform<int> u = 3;
  o[i] = bfloat(h[i]) + bfloat(v.y) + bfloat(u);
}""")
    o = bronze.zeros(2, dtype=bronze.bfloat16)
    lib.k(o, bronze.full((2,), 0.5, dtype=bronze.float16))
    assert o.to("cpu").to(bronze.float32).numpy().tolist() == [5.5, 5.5]


def test_numpy_integers_size_the_grid():
    lib = bronze.compile_shader("kernel void k(device float* o, uint i [[thread_position_in_grid]]) { o[i] = 1; }")
    o = bronze.zeros(8)
    lib.k(o, threads=np.int64(8), group_size=(np.int32(4),))
    assert o.to("cpu").numpy().tolist() == [1.0] * 8


def test_const_and_non_const_overloads_on_the_address_space_of_this():
    # MLX's masks: `operator bool() thread` beside `operator bool() const device`
    # and `const constant`; a const object takes a const one.
    lib = bronze.compile_shader("""
struct NoMask {
  char x;
  constexpr METAL_FUNC operator bool() thread { return true; }
  constexpr METAL_FUNC operator bool() const threadgroup { return true; }
  constexpr METAL_FUNC operator bool() const device { return true; }
  constexpr METAL_FUNC operator bool() const constant { return true; }
};
struct Mask {
  bool on;
  bool get() thread { return on; }
  bool get() const device { return !on; }
};
struct Zero {  // constructors per address space: one constructor here
  float v;
  constexpr Zero() : v(0) {}
  constexpr Zero() threadgroup : v(0) {}
  constexpr Zero() constant : v(0) {}
};
template <typename M>
kernel void k(device float* out, const constant M* m [[buffer(1)]], device const Mask* q [[buffer(2)]],
              uint i [[thread_position_in_grid]]) {
  Mask local = {true};
  Zero z;
  out[i] = z.v + float(bool(m[0])) + 2.0f * float(local.get()) + 4.0f * float(q[0].get());
}
template [[host_name("k")]] kernel void k<NoMask>(device float*, const constant NoMask*, device const Mask*, uint);
""")
    out = bronze.zeros(2)
    lib.k(out, b"\0", bronze.tensor(np.zeros(1, np.uint8)))
    assert out.numpy().tolist() == [7.0, 7.0]


@pytest.mark.parametrize("name", ["--help", "-E.metal", "-o"])
def test_a_file_named_like_a_compiler_option_is_a_file(name):
    lib = bronze.compile_shader("kernel void f(device float* o, uint i [[thread_position_in_grid]]) { o[i] = 2; }",
                                filename=name)
    o = bronze.zeros(2)
    lib.f(o)
    assert o.numpy().tolist() == [2.0, 2.0]
    with pytest.raises(bronze.ShaderCompileError, match=f"{name}:1:"):
        bronze.compile_shader("kernel void f(device float* o) { o[0] = nope; }", filename=name)


def test_unicode_kernel_names_and_no_build_folder_in_messages():
    # N41: GCC's preprocessor writes a Unicode identifier as a universal
    # character name (\U00006838), which bronze read as 'U00006838' inside
    # its generated code; and a failure in generated code quoted the build
    # folder's paths.
    lib = bronze.compile_shader("kernel void 核(device float* o, uint i [[thread_position_in_grid]]) { o[i] = 2; }\n"
                                "template <typename T> kernel void τ(device T* o) { o[0] = 3; }\n"
                                'template [[host_name("τ_f")]] kernel void τ<float>(device float*);\n')
    assert lib.kernel_names == ["核", "τ_f"]
    o = bronze.zeros(2)
    getattr(lib, "核")(o)
    lib.τ_f(o)
    assert o.numpy().tolist() == [3.0, 2.0]
    with pytest.raises(bronze.ShaderCompileError) as info:  # an error the generated entry exposes
        bronze.compile_shader("struct S;\nkernel void k(constant S& s, device float* o) { o[0] = 1; }\n")
    message = str(info.value)
    assert "incomplete type" in message
    assert "bronze-build" not in message and bronze.cache_info()["dir"] not in message, message


def test_many_defines_and_file_names_with_escapes():
    # N50: 100,000 defines as -D options were past the command line's limit
    # ("cannot start the compiler"): they go to the preprocessor in a file.
    defines = {f"D{i}": str(i) for i in range(100000)}
    o = bronze.zeros(1)
    bronze.compile_shader("kernel void k(device float* o) { o[0] = D99999; }", defines=defines).k(o)
    assert o.item() == 99999.0
    # A #line name with escapes was shown without its backslashes ('anb"c').
    with pytest.raises(bronze.ShaderCompileError, match=r'^a\\nb"c:5:41: error: .*nope'):
        bronze.compile_shader('#line 5 "a\\nb\\"c"\nkernel void k(device float* o) { o[0] = nope; }\n')


def test_an_unknown_kernel_of_a_large_library_names_the_nearest_few():
    # Every name of a small library, the nearest five of a large one (a
    # lookup in MLX's .metallib listed all 17,248).
    names = [f"gemm_{t}_bm{bm}" for t in ("float", "half", "bfloat") for bm in (16, 32, 64, 128, 256, 512, 1024)]
    lib = bronze.compile_shader("".join(f"kernel void {n}(device float* x) {{ x[0] = 1; }}\n" for n in names))
    with pytest.raises(bronze.KernelNotFoundError) as e:
        lib.gemm_half_bm63
    message = str(e.value)
    assert "the nearest of its 21 kernels: gemm_half_bm64, " in message and "(dir(lib) lists them all)" in message
    assert sum(n in message.split("kernels: ")[1] for n in names) == 5
    with pytest.raises(bronze.KernelNotFoundError, match=r"its kernels: a, b$"):
        bronze.compile_shader("kernel void a(device float* x) {}\nkernel void b(device float* x) {}\n").c
