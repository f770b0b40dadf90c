"""bronze.torch: bronze kernels as torch.library custom ops (eager, autograd,
torch.compile without graph breaks). Skipped where torch is not installed (as
in CI); the CUDA tests run on the GPU machine (scripts/gpu-check)."""

import os
import sysconfig
import types

import pytest

torch = pytest.importorskip("torch")

import bronze  # noqa: E402
import bronze.torch  # noqa: E402

SRC = """
kernel void scale(device float* out, device const float* x, constant float& factor,
                  uint i [[thread_position_in_grid]]) {
    out[i] = x[i] * factor;
}
kernel void square_scale(device float* out, device const float* x, constant float& factor,
                         uint i [[thread_position_in_grid]]) {
    out[i] = x[i] * x[i] * factor;
}
kernel void sum_diff(device float* s, device float* d, device const float* a, device const float* b,
                     uint i [[thread_position_in_grid]]) {
    s[i] = a[i] + b[i];
    d[i] = a[i] - b[i];
}
kernel void add_(device float* x, constant float& v, uint i [[thread_position_in_grid]]) {
    x[i] += v;
}
kernel void scatter(device float* out, device const int* index, uint i [[thread_position_in_grid]]) {
    out[index[i]] = 1.0f;
}
"""


# Inductor builds its CPU kernels with the host compiler against Python's headers.
inductor = pytest.mark.skipif(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")),
                              reason="inductor needs Python.h (python3-dev)")


@pytest.fixture(scope="module")
def ops():
    lib = bronze.compile_shader(SRC)
    checked = bronze.compile_shader(SRC, validate=True, device="cpu")  # validate is CPU-only

    @bronze.torch.custom_op("bronze_test::scale", mutates_args=(), outputs=lambda x, factor: torch.empty_like(x))
    def scale(x: torch.Tensor, factor: float, *, out):
        lib.scale(out, x, factor)

    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])
        ctx.factor = inputs[1]

    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return scale(grad * x, 2 * ctx.factor), None  # d(x*x*f)/dx = 2*x*f, by the other bronze op

    @bronze.torch.custom_op("bronze_test::square_scale", mutates_args=(), backward=backward,
                            setup_context=setup_context, outputs=lambda x, factor: torch.empty_like(x))
    def square_scale(x: torch.Tensor, factor: float, *, out):
        lib.square_scale(out, x, factor)

    @bronze.torch.custom_op("bronze_test::sum_diff", mutates_args=(),
                            outputs=lambda a, b: (torch.empty_like(a), torch.empty_like(a)))
    def sum_diff(a: torch.Tensor, b: torch.Tensor, *, s, d):
        lib.sum_diff(s, d, a, b)

    @bronze.torch.custom_op("bronze_test::add_", mutates_args=("x",))
    def add_(x: torch.Tensor, v: float) -> None:
        lib.add_(x, v)

    # Fills out[index[i]]; validate=True turns an index out of range into a DeviceError.
    @bronze.torch.custom_op("bronze_test::scatter", mutates_args=(),
                            outputs=lambda index, n: index.new_zeros(n, dtype=torch.float32))
    def scatter(index: torch.Tensor, n: int, *, out):
        checked.scatter(out, index, threads=index.numel())

    # An MLX-style kernel from a body, writing the op's output in place (outputs=).
    axpy_kernel = bronze.metal_kernel(name="axpy", input_names=["a", "x", "y"], output_names=["out"],
                                      source="uint i = thread_position_in_grid.x; out[i] = a * x[i] + y[i];")

    @bronze.torch.custom_op("bronze_test::axpy", mutates_args=(), outputs=lambda a, x, y: torch.empty_like(x))
    def axpy(a: torch.Tensor, x: torch.Tensor, y: torch.Tensor, *, out):
        axpy_kernel(inputs=[a, x, y], outputs=[out], grid=(x.numel(), 1, 1), threadgroup=(256, 1, 1))

    return types.SimpleNamespace(scale=scale, square_scale=square_scale, sum_diff=sum_diff, add_=add_,
                                 scatter=scatter, axpy=axpy)


def test_an_op_runs_eagerly_and_is_a_torch_op(ops):
    x = torch.arange(1 << 22, dtype=torch.float32)
    y = ops.scale(x, 2.5)
    # Read at once, as torch reads any CPU op's output: the op waited for its kernel.
    assert torch.equal(y, x * 2.5)
    assert torch.equal(torch.ops.bronze_test.scale(x, 0.5), x * 0.5)
    assert str(torch.ops.bronze_test.scale.default._schema) == "bronze_test::scale(Tensor x, float factor) -> Tensor"


def test_several_outputs_and_an_in_place_op(ops):
    a, b = torch.arange(64, dtype=torch.float32), torch.full((64,), 3.0)
    s, d = ops.sum_diff(a, b)
    assert torch.equal(s, a + b) and torch.equal(d, a - b)
    x = torch.zeros(64)
    assert ops.add_(x, 1.5) is None
    assert torch.equal(x, torch.full((64,), 1.5))


def test_a_metal_kernel_op(ops):
    x, y = torch.randn(1000), torch.randn(1000)
    torch.testing.assert_close(ops.axpy(torch.tensor(2.0), x, y), 2.0 * x + y)


@pytest.mark.parametrize("name", ["scale", "square_scale", "sum_diff", "axpy"])
def test_opcheck(ops, name):
    x = torch.randn(33)
    args = {"sum_diff": (x, torch.randn(33)), "axpy": (torch.tensor(0.5), x, torch.randn(33))}.get(name, (x, 1.25))
    torch.library.opcheck(getattr(ops, name), args)  # schema, fake vs real, autograd registration, AOT dispatch


def test_opcheck_in_place(ops):
    torch.library.opcheck(ops.add_, (torch.randn(17), 2.0))


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_compiles_whole_graph(ops, backend):
    torch._dynamo.reset()

    def f(x, y):
        s, d = ops.sum_diff(x.sin(), y)
        ops.add_(d, 1.0)
        return ops.axpy(torch.tensor(1.0), ops.scale(s * d, 3.0), x).cos()

    compiled = torch.compile(f, fullgraph=True, backend=backend)  # a graph break would raise
    for n in (64, 100):  # a second shape: the fake implementation traces shapes from the inputs
        x, y = torch.randn(n), torch.randn(n)
        torch.testing.assert_close(compiled(x, y), f(x, y))
        s, d = x.sin() + y, x.sin() - y + 1.0
        torch.testing.assert_close(compiled(x, y), (s * d * 3.0 + x).cos())


@inductor
def test_compiles_with_inductor(ops):
    torch._dynamo.reset()

    def f(x):
        return ops.scale(x + 1.0, 2.0) * x

    x = torch.randn(256)
    torch.testing.assert_close(torch.compile(f, fullgraph=True)(x), (x + 1.0) * 2.0 * x)


def test_autograd_with_the_given_backward(ops):
    x = torch.randn(1000, requires_grad=True)
    y = ops.square_scale(x, 1.5)
    torch.testing.assert_close(y, x.detach() ** 2 * 1.5)
    y.backward(torch.linspace(-1, 1, 1000))
    torch.testing.assert_close(x.grad, torch.linspace(-1, 1, 1000) * 2 * x.detach() * 1.5)


@pytest.mark.parametrize("backend", ["aot_eager", pytest.param("inductor", marks=inductor)])
def test_autograd_under_compile(ops, backend):
    torch._dynamo.reset()
    x = torch.randn(100, requires_grad=True)
    loss = torch.compile(lambda x: ops.square_scale(x.sin(), 2.0).sum(), fullgraph=True, backend=backend)(x)
    (g,) = torch.autograd.grad(loss, x)
    torch.testing.assert_close(g, 2 * x.detach().sin() * 2.0 * x.detach().cos())


def test_no_backward_is_an_error_on_backward(ops):
    x = torch.randn(8, requires_grad=True)
    with pytest.raises(RuntimeError, match="autograd"):
        ops.scale(x, 2.0).sum().backward()


def test_a_kernel_fault_is_the_op_error(ops):
    ok = ops.scatter(torch.tensor([0, 3], dtype=torch.int32), 4)
    assert ok.tolist() == [1.0, 0.0, 0.0, 1.0]
    with pytest.raises(bronze.DeviceError, match="out"):
        ops.scatter(torch.tensor([0, 9], dtype=torch.int32), 4)


def test_bad_definitions_are_clear_errors():
    with pytest.raises(TypeError, match="outputs="):
        @bronze.torch.custom_op("bronze_test::bad1", mutates_args=())
        def bad1(x: torch.Tensor, *, out):
            pass
    with pytest.raises(TypeError, match="keyword-only"):
        @bronze.torch.custom_op("bronze_test::bad2", mutates_args=(), outputs=lambda x: torch.empty_like(x))
        def bad2(x: torch.Tensor) -> torch.Tensor:
            pass
    with pytest.raises(TypeError, match="setup_context"):
        bronze.torch.custom_op("bronze_test::bad3", mutates_args=(), setup_context=lambda *a: None)


def test_outputs_must_match_the_keyword_only_parameters():
    @bronze.torch.custom_op("bronze_test::two_outs", mutates_args=(), outputs=lambda x: torch.empty_like(x))
    def two_outs(x: torch.Tensor, *, a, b):
        pass

    with pytest.raises(TypeError, match=r"must return 2 tensors \(for a, b\)"):
        two_outs(torch.zeros(4))


cuda = pytest.mark.skipif(not (torch.cuda.is_available() and bronze.is_available("cuda")),
                          reason="needs torch with CUDA and a GPU bronze can use")


@cuda
def test_cuda_op_runs_on_torchs_current_stream(ops):
    x = torch.ones(1 << 20, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        torch.cuda._sleep(100_000_000)  # the side stream is busy for tens of milliseconds
        x.fill_(2.0)  # runs after the sleep
        y = ops.scale(x, 3.0)  # must read 2.0: on the side stream, after fill_
        z = ops.scale(y, 0.5)
    side.synchronize()
    assert torch.equal(y, torch.full_like(x, 6.0))
    assert torch.equal(z, torch.full_like(x, 3.0))


@cuda
def test_cuda_op_compiles_and_differentiates(ops):
    torch._dynamo.reset()
    x = torch.randn(4096, device="cuda", requires_grad=True)
    # scale has no backward (test_no_backward_is_an_error_on_backward): torch's multiply before it.
    loss = torch.compile(lambda x: ops.square_scale(x * 2.0, 0.5).sum(), fullgraph=True, backend="aot_eager")(x)
    (g,) = torch.autograd.grad(loss, x)
    torch.testing.assert_close(loss, (0.5 * (2.0 * x.detach()) ** 2).sum())
    torch.testing.assert_close(g, 4.0 * x.detach())
    torch.library.opcheck(ops.sum_diff, (torch.randn(33, device="cuda"), torch.randn(33, device="cuda")))


@cuda
def test_cuda_op_body_runs_on_torchs_stream_as_bronzes_current():
    seen = []

    @bronze.torch.custom_op("bronze_test::probe", mutates_args=("x",))
    def probe(x: torch.Tensor) -> None:
        seen.append(bronze.current_stream(f"cuda:{x.device.index}"))

    x = torch.zeros(1, device="cuda")
    probe(x)
    probe(x)
    with torch.cuda.stream(torch.cuda.Stream()):
        probe(x)
    assert seen[0] == seen[1]  # one bronze stream per torch stream, whatever the calls
    assert seen[2] != seen[0]
    assert bronze.current_stream(f"cuda:{x.device.index}") not in seen  # bronze's own again after the op
