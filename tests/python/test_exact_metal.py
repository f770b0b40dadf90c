"""Exact Metal: what a Mac's compiler decides of a kernel's signature, bronze
decides the same way. Indices, function-constant indices and values, and
threadgroup array extents are evaluated by the compiler that builds the
code (never read off the token text); what Apple's compiler refuses is a
ShaderCompileError at the user's line. Runs on the default device (the CPU,
or CUDA under BRONZE_DEVICE=cuda in gpu-check)."""
import itertools

import numpy as np
import pytest

import bronze

ADD = "o[i] = a[i] + 10.0f * b[i];"


def run_abo(src, *args):
    """Runs kernel f with a=1, b=2 bound as the call lists them; returns o."""
    lib = bronze.compile_shader(src)
    a, b, o = bronze.full(4, 1.0), bronze.full(4, 2.0), bronze.zeros(4)
    named = {"a": a, "b": b, "o": o}
    lib.f(*[named[n] for n in args], threads=4)
    return o.numpy()


def test_an_index_is_a_constant_expression_the_compiler_evaluates():
    # [[buffer(4-2)]] is slot 2: between a (0) and o (3); never read as 4.
    src = ("kernel void f(device float* o [[buffer(3)]], device const float* a [[buffer(0)]], "
           f"device const float* b [[buffer(4-2)]], uint i [[thread_position_in_grid]]) {{ {ADD} }}")
    assert run_abo(src, "a", "b", "o").tolist() == [21.0] * 4


def test_indices_named_by_an_enum_and_a_constexpr_in_the_kernels_namespace():
    src = ("namespace k { enum { kIn = 0, kOut = 1 }; constant constexpr int kB = kOut + 1; "
           "kernel void f(device const float* a [[buffer(kIn)]], device float* o [[buffer(kB)]], "
           f"device const float* b [[buffer(kOut)]], uint i [[thread_position_in_grid]]) {{ {ADD} }} }}")
    assert run_abo(src, "a", "b", "o").tolist() == [21.0] * 4


def test_implicit_slots_take_the_free_indices_in_declaration_order():
    src = ("kernel void f(device float* o [[buffer(1)]], device const float* a, device const float* b, "
           f"uint i [[thread_position_in_grid]]) {{ {ADD} }}")
    assert run_abo(src, "a", "o", "b").tolist() == [21.0] * 4
    params = {p["name"]: p for p in bronze.compile_shader(src).f.params}
    assert (params["a"]["index"], params["o"]["index"], params["b"]["index"]) == (0, 1, 2)


def test_a_function_constant_indexed_by_a_constexpr_name():
    src = """
    constant constexpr int kIdx = 3;
    constant bool twice [[function_constant(kIdx)]];
    kernel void f(device float* o, uint i [[thread_position_in_grid]]) { o[i] = twice ? 2.0f : 1.0f; }
    """
    for given, want in (({3: True}, 2.0), ({3: False}, 1.0), ({"twice": True}, 2.0), (None, 1.0)):
        o = bronze.zeros(2)
        bronze.compile_shader(src, constants=given).f(o)
        assert o.numpy().tolist() == [want] * 2, given
    with pytest.raises(bronze.ShaderCompileError, match="no function constant with index 4"):
        bronze.compile_shader(src, constants={4: True})


@pytest.mark.parametrize("value, kept", [(True, True), (1, True), (0, False), (0.0, False), (2.5, True), (False, False)])
def test_a_guarded_parameter_follows_the_value_the_code_sees(value, kept):
    src = """
    constant bool has_bias [[function_constant(0)]];
    kernel void f(device float* o [[buffer(0)]], device const float* bias [[buffer(1), function_constant(has_bias)]],
                  uint i [[thread_position_in_grid]]) { o[i] = has_bias ? bias[i] : -1.0f; }
    """
    lib = bronze.compile_shader(src, constants={"has_bias": value})
    o = bronze.zeros(2)
    if kept:
        lib.f(o, bronze.full(2, 7.0))
        assert o.numpy().tolist() == [7.0, 7.0]
    else:
        lib.f(o)
        assert o.numpy().tolist() == [-1.0, -1.0]


def test_two_parameters_share_an_index_when_their_constants_choose_one():
    src = """
    constant bool use_tensor [[function_constant(0)]];
    constant bool use_value = !use_tensor;
    kernel void f(device float* o [[buffer(0)]],
                  device const float* t [[buffer(1), function_constant(use_tensor)]],
                  constant float& v [[buffer(1), function_constant(use_value)]],
                  uint i [[thread_position_in_grid]]) { o[i] = use_tensor ? t[i] : v; }
    """
    o = bronze.zeros(2)
    bronze.compile_shader(src, constants={0: True}).f(o, bronze.full(2, 3.0))
    assert o.numpy().tolist() == [3.0, 3.0]
    bronze.compile_shader(src, constants={0: False}).f(o, 5.0)
    assert o.numpy().tolist() == [5.0, 5.0]


def test_is_function_constant_defined_of_a_qualified_constant():
    src = """
    namespace p { constant int reps [[function_constant(7)]]; }
    kernel void f(device float* o, uint i [[thread_position_in_grid]]) {
        o[i] = is_function_constant_defined(p::reps) ? float(p::reps) : -1.0f;
    }
    """
    o = bronze.zeros(1)
    bronze.compile_shader(src, constants={7: 4}).f(o)
    assert o.numpy().tolist() == [4.0]
    bronze.compile_shader(src).f(o)
    assert o.numpy().tolist() == [-1.0]


def test_a_shadowing_inner_constant_does_not_size_an_outer_threadgroup_array():
    lib = bronze.compile_shader("""
    constant constexpr int N = 64;
    kernel void f(device float* o, uint l [[thread_index_in_threadgroup]], uint i [[thread_position_in_grid]]) {
        threadgroup float a[N];
        { constexpr int N = 4; o[i] = N; }
        a[l] = 1.0f;
        threadgroup_barrier(mem_flags::mem_threadgroup);
        o[i] += a[0];
    }""")
    assert lib.f.static_thread_group_memory_length == 256


def test_names_that_only_look_like_metals_are_the_users():
    # A struct named texture_info is not a texture; a helper named simd_* is
    # no collective.
    lib = bronze.compile_shader("""
    struct texture_info { float scale; };
    inline float simd_twice(float x) { return 2.0f * x; }
    kernel void f(device float* o, constant texture_info& t, uint i [[thread_position_in_grid]]) {
        o[i] = simd_twice(t.scale);
    }""")
    o = bronze.zeros(3)
    lib.f(o, np.array([1.5], np.float32).tobytes())
    assert o.numpy().tolist() == [3.0] * 3


def test_quadgroup_and_dispatch_count_attributes():
    lib = bronze.compile_shader("""
    kernel void f(device uint* o, uint q [[thread_index_in_quadgroup]], uint g [[quadgroup_index_in_threadgroup]],
                  uint i [[thread_position_in_grid]]) { o[i] = g * 10 + q; }
    kernel void counts(device uint* o, uint sg [[dispatch_simdgroups_per_threadgroup]],
                       ushort qg [[quadgroups_per_threadgroup]], uint dqg [[dispatch_quadgroups_per_threadgroup]],
                       uint i [[thread_position_in_grid]]) { o[i] = sg * 10000 + qg * 100 + dqg; }""")
    o = bronze.zeros(8, dtype=bronze.uint32)
    lib.f(o, group_size=8)
    assert o.numpy().tolist() == [0, 1, 2, 3, 10, 11, 12, 13]
    c = bronze.zeros(70, dtype=bronze.uint32)
    lib.counts(c, group_size=40)  # groups of 40 (2 simdgroups, 10 quadgroups), the last one of 30 (8 quadgroups)
    got = c.numpy().tolist()
    assert got[:40] == [2 * 10000 + 10 * 100 + 10] * 40
    assert got[40:] == [2 * 10000 + 8 * 100 + 10] * 30


# What Apple's compiler refuses, refused at the line it names (1-based, in
# the source below) with the words a user needs.
REFUSED = [
    ("kernel void f(device float* o,\n uint i [[thread_positon_in_grid]]) {}", 2,
     "did you mean [[thread_position_in_grid]]"),
    ("kernel void f(device float* o [[bufer(0)]]) {}", 1, "did you mean [[buffer]]"),
    ("kernel void f(device float* o [[buffer]]) {}", 1, "needs an argument"),
    ("kernel void f(device float* o [[frobnicate]]) {}", 1, "unknown attribute [[frobnicate]]"),
    ("kernel int f(device float* o) { return 0; }", 1, "returns void"),
    ("kernel void f(float* o) {}", 1, "without an address space"),
    ("kernel void f(device float* o [[thread_position_in_grid]]) {}", 1, "is not one"),
    ("kernel void f(device float* o [[threadgroup(0)]]) {}", 1, "is not one"),
    ("kernel void f(threadgroup float* s [[buffer(0)]]) {}", 1, "not [[buffer(n)]]"),
    ("kernel void f(device float* o,\n float i [[thread_position_in_grid]]) {}", 2, "takes a uint or ushort"),
    ("kernel void f(device float* o [[buffer(0)]],\n device float* p [[buffer(1-1)]]) {}", 1, "another parameter's too"),
    ("kernel void f(device float* o [[buffer(31)]]) {}", 1, "0 to 30"),
    ("kernel void f(device float* o [[buffer(-1)]]) {}", 1, "0 to 30"),
    ("kernel void f(\n device float* o [[buffer(kMissing)]]) {}", 2, "kMissing"),
    ("kernel void f(threadgroup float* a [[threadgroup(0)]],\n threadgroup float* b [[threadgroup(0)]]) {}", 1,
     "another parameter's too"),
    ("kernel void f(device float* o [[stage_in]]) {}", 1, "not a compute-kernel parameter bronze supports"),
]


@pytest.mark.parametrize("src, line, words", REFUSED)
def test_what_apples_compiler_refuses_is_refused_at_the_users_line(src, line, words):
    with pytest.raises(bronze.ShaderCompileError, match=pytest.importorskip("re").escape(words)) as e:
        bronze.compile_shader(src)
    assert e.value.lineno == line, str(e.value)


def test_a_kernel_takes_at_most_31_buffers():
    params = ", ".join(f"device float* p{k}" for k in range(32))
    with pytest.raises(bronze.ShaderCompileError, match="at most 31 buffers"):
        bronze.compile_shader(f"kernel void f({params}) {{}}")


# A generated conformance set: each way of giving an index, each kind of
# parameter that takes one, each form of function constant. Every
# combination must bind exactly as Metal binds it: the argument for slot s
# is the s-th of the call.
INDEX_FORMS = {"literal": "{n}", "sum": "({n} - 1) + 1", "enum": "kSlot{n}", "constexpr": "kC{n}", "macro": "SLOT({n})"}
PARAM_FORMS = {
    "buffer": ("device const float* {name} [[buffer({index})]]", lambda v: bronze.full(1, v), "{name}[0]"),
    "reference": ("constant float& {name} [[buffer({index})]]", lambda v: v, "{name}"),
    "struct": ("constant Box& {name} [[buffer({index})]]", lambda v: np.array([v], np.float32).tobytes(), "{name}.v"),
}
PRELUDE = """
struct Box { float v; };
enum { kSlot1 = 1, kSlot2 = 2 };
constant constexpr int kC1 = 1, kC2 = 2;
#define SLOT(n) (n)
"""


@pytest.mark.parametrize("index_form, first, second",
                         [(i, f, s) for i in INDEX_FORMS for f, s in itertools.product(PARAM_FORMS, repeat=2)])
def test_conformance_of_indices_and_parameter_kinds(index_form, first, second):
    # Declared in the reverse of slot order: a (slot 2) before b (slot 1).
    decl_a, make_a, use_a = PARAM_FORMS[first]
    decl_b, make_b, use_b = PARAM_FORMS[second]
    sig = ", ".join([
        "device float* o [[buffer(0)]]",
        decl_a.format(name="a", index=INDEX_FORMS[index_form].format(n=2)),
        decl_b.format(name="b", index=INDEX_FORMS[index_form].format(n=1)),
        "uint i [[thread_position_in_grid]]"])
    body = f"o[i] = {use_a.format(name='a')} + 10.0f * {use_b.format(name='b')};"
    lib = bronze.compile_shader(PRELUDE + f"kernel void f({sig}) {{ {body} }}")
    o = bronze.zeros(1)
    lib.f(o, make_b(2.0), make_a(1.0))  # slot order: o, b, a
    assert o.numpy().tolist() == [21.0]


CONSTANT_FORMS = {"by name": lambda v: {"on": v}, "by index": lambda v: {5: v}}


@pytest.mark.parametrize("form", CONSTANT_FORMS)
@pytest.mark.parametrize("index", ["5", "kFive", "(2 + 3)"])
def test_conformance_of_function_constant_indices_and_forms(form, index):
    src = f"""
    constant constexpr int kFive = 5;
    constant bool on [[function_constant({index})]];
    kernel void f(device float* o [[buffer(0)]], constant float& v [[buffer(1), function_constant(on)]],
                  uint i [[thread_position_in_grid]]) {{ o[i] = on ? v : -1.0f; }}
    """
    o = bronze.zeros(1)
    bronze.compile_shader(src, constants=CONSTANT_FORMS[form](True)).f(o, 4.0)
    assert o.numpy().tolist() == [4.0]
    bronze.compile_shader(src, constants=CONSTANT_FORMS[form](False)).f(o)
    assert o.numpy().tolist() == [-1.0]


def test_kernel_calls_bind_as_torch_mps_binds(recwarn):
    # Any tensor to any buffer (its bytes), warned once per kernel argument;
    # a tensor or an array to `constant T&` (Metal binds that as a buffer).
    lib = bronze.compile_shader("""
    struct Params { float scale; int bias; };
    kernel void f(device float* o, device const uint* bits, constant Params& p, uint i [[thread_position_in_grid]]) {
        o[i] = as_type<float>(bits[i]) * p.scale + p.bias;
    }""")
    params = np.zeros(2, np.float32)
    params[0], params.view(np.int32)[1] = 2.0, 1
    o = bronze.zeros(3)
    floats = bronze.full(3, 1.5)  # float32 into `device const uint*`: its bits
    lib.f(o, floats, bronze.asarray(params))
    lib.f(o, floats, params)
    bronze.synchronize()
    assert o.numpy().tolist() == [4.0] * 3
    warned = [str(w.message) for w in recwarn if "bytes are bound as uint" in str(w.message)]
    assert len(warned) == 1, warned
    with pytest.raises(ValueError, match="takes 8 bytes; the tensor has 4"):
        lib.f(o, floats, bronze.zeros(1))
    checked = bronze.compile_shader("kernel void f(device uint* o, uint i [[thread_position_in_grid]]) { o[i] = 1; }",
                                    validate=True, device="cpu")  # validate=True is the CPU backend's
    with pytest.raises(TypeError, match="validate=True refuses it"):
        checked.f(bronze.zeros(2, device="cpu"))


def test_a_warp_scan_of_shuffles_under_branches_reads_inactive_lanes_as_apple_gpus_do():
    # Hillis-Steele scan as numerical libraries write it: lane 0 takes no
    # branch, yet lane 1 reads its value (the lanes run in lockstep).
    lib = bronze.compile_shader("""
    kernel void scan(device float* o, device const float* a, uint lane [[thread_index_in_simdgroup]],
                     uint i [[thread_position_in_grid]]) {
        float x = a[i];
        if (lane >= 1) x += simd_shuffle_up(x, 1);
        if (lane >= 2) x += simd_shuffle_up(x, 2);
        if (lane >= 4) { x += simd_shuffle_up(x, 4); }
        if (lane >= 8) x += simd_shuffle_up(x, 8);
        if (lane >= 16) x += simd_shuffle_up(x, 16);
        o[i] = x;
    }""")
    a = np.arange(1, 129, dtype=np.float32)
    o = bronze.zeros(128)
    lib.scan(o, bronze.tensor(a), group_size=64)
    want = np.concatenate([np.cumsum(a[k:k + 32]) for k in range(0, 128, 32)])
    np.testing.assert_array_equal(o.numpy(), want)


def test_reductions_under_a_branch_are_over_its_active_lanes():
    lib = bronze.compile_shader("""
    kernel void part(device float* o, uint lane [[thread_index_in_simdgroup]], uint i [[thread_position_in_grid]]) {
        float v = float(lane);
        if (lane < 8) v = simd_sum(v);
        if (lane >= 24) v = simd_max(v) + simd_shuffle_down(v, 1);
        o[i] = v;
    }""")
    o = bronze.zeros(32)
    lib.part(o, group_size=32)
    got = o.numpy().tolist()
    assert got[:8] == [28.0] * 8  # 0 + 1 + ... + 7
    assert got[8:24] == [float(k) for k in range(8, 24)]
    # max of the active lanes 24..31 is 31, plus the next lane's value (lane 31: its own)
    assert got[24:] == [31.0 + k + 1 for k in range(24, 31)] + [31.0 + 31.0]


def test_one_helper_reached_from_divergent_calls_runs_once_per_call():
    # A helper holding a collective, called from both sides of a branch and
    # then by every lane: each call is its own collective over the lanes that
    # make it, as on a GPU (the CPU's lanes are told apart by their calls).
    lib = bronze.compile_shader("""
    float total(float v) { return simd_sum(v); }
    float twice(float v) { return 2.0f * total(v); }
    struct Acc { float lanes_max(float v) { return simd_max(v); } };
    kernel void f(device float* o, uint lane [[thread_index_in_simdgroup]], uint i [[thread_position_in_grid]]) {
        float v = float(lane), a, b;
        if (lane < 8) a = total(v);
        else a = total(v + 100.0f);
        if (lane >= 30) b = twice(v);
        else b = 0.0f;
        Acc acc;
        float m = lane % 2 == 0 ? acc.lanes_max(v) : -1.0f;
        o[i * 4 + 0] = a;
        o[i * 4 + 1] = b;
        o[i * 4 + 2] = total(v);
        o[i * 4 + 3] = m;
    }""")
    o = bronze.zeros(32 * 4)
    lib.f(o, threads=32, group_size=32)
    got = o.numpy().reshape(32, 4)
    lanes = np.arange(32, dtype=np.float32)
    low, high = lanes[:8].sum(), (lanes[8:] + 100).sum()
    np.testing.assert_array_equal(got[:, 0], np.where(lanes < 8, low, high))
    np.testing.assert_array_equal(got[:, 1], np.where(lanes >= 30, 2 * (30 + 31), 0))
    np.testing.assert_array_equal(got[:, 2], np.full(32, lanes.sum()))
    np.testing.assert_array_equal(got[:, 3], np.where(lanes % 2 == 0, 30, -1))


def test_function_constants_take_nan_and_infinities():
    lib_src = """
    constant float v [[function_constant(0)]];
    kernel void f(device float* o, uint i [[thread_position_in_grid]]) { o[i] = v; }
    """
    for value in (float("nan"), float("inf"), -float("inf"), 0.25):
        o = bronze.zeros(1)
        bronze.compile_shader(lib_src, constants={0: value}).f(o)
        np.testing.assert_array_equal(o.numpy(), np.float32([value]))


def test_a_removed_parameter_without_an_index_leaves_the_free_slots():
    # Implicit slots with a function constant removing one between them (a
    # slot of a removed parameter once ran off its table as the module loaded).
    src = """
    constant bool has_mask [[function_constant(0)]];
    kernel void f(device float* o, device const float* mask [[function_constant(has_mask)]],
                  constant float& v, uint i [[thread_position_in_grid]]) { o[i] = has_mask ? mask[i] * v : v; }
    """
    o = bronze.zeros(2)
    bronze.compile_shader(src, constants={"has_mask": False}).f(o, 3.0)
    assert o.numpy().tolist() == [3.0, 3.0]
    bronze.compile_shader(src, constants={"has_mask": True}).f(o, bronze.full(2, 2.0), 3.0)
    assert o.numpy().tolist() == [6.0, 6.0]
