"""The table of bad inputs: every public entry point, what a bad input gets.

test_bad_inputs.py runs each case and checks docs/bad-inputs.md against it;
regenerate the document with:  python tests/python/bad_inputs.py > docs/bad-inputs.md
"""

import hashlib
import os
import struct
import tempfile

import numpy as np

import bronze

SEED = "kernel void full(device float* out, constant float& val, uint idx [[thread_position_in_grid]]) { out[idx] = val; }"


def _lib():
    return bronze.compile_shader(SEED)


def _write_past_the_end():
    # Valid without validate=True (the grid is the caller's to guard); checked, it fails the launch.
    lib = bronze.compile_shader(SEED, validate=True)
    lib.full(bronze.ones(4), 1.0, threads=8)
    bronze.synchronize()


def _read_only_output():
    ro = np.zeros(4, dtype=np.float32)
    ro.setflags(write=False)
    _lib().full(ro, 1.0)


def _run(src, *args, validate=False, **launch):
    lib = bronze.compile_shader(src, validate=validate)
    getattr(lib, lib.kernel_names[0])(*args, **launch)
    bronze.synchronize()


def _profiler_stop_nul():
    bronze.profiler.start()
    try:
        bronze.profiler.stop("/tmp/a\0b.json")
    finally:  # still running after the refusal: stopped for real
        os.remove(bronze.profiler.stop(os.path.join(tempfile.gettempdir(), f"bronze-nul-{os.getpid()}.json")))


def _runaway():
    bronze.set_kernel_time_limit(0.2)
    try:
        _run("kernel void spin(volatile device int* f, uint i [[thread_position_in_grid]]) { while (f[0] == 0) {} }",
             bronze.zeros(1, dtype=bronze.int32))
    finally:
        bronze.set_kernel_time_limit(0)


DIVIDE = "kernel void q(device int* o, constant int& d, uint i [[thread_position_in_grid]]) { o[i] = 1 / d; }"
WILD = "kernel void w(device int* o, uint i [[thread_position_in_grid]]) { *(device int*)(16 + i) = 1; }"
PRIVATE = ("kernel void p(device float* o, device const int* idx, uint i [[thread_position_in_grid]]) "
           "{ float tmp[8] = {0}; tmp[idx[i]] = 1.0f; o[i] = tmp[0]; }")
TG = ("kernel void t(device float* o, threadgroup float* s [[threadgroup(0)]], uint l [[thread_index_in_threadgroup]], "
      "uint i [[thread_position_in_grid]]) { s[l] = i; threadgroup_barrier(mem_flags::mem_threadgroup); o[i] = s[l]; }")


def _private_index(validate):
    _run(PRIVATE, bronze.zeros(4), bronze.tensor([0, 1, 2, 20000], dtype=bronze.int32), validate=validate)


def _lib_int():
    return bronze.compile_shader("kernel void k(device int* o, constant int& a) { o[0] = a; }")


def _profiler_twice():
    bronze.profiler.start()
    try:
        bronze.profiler.start()
    finally:
        bronze.profiler.stop(os.devnull)  # not a trace file in the working directory


def _profiler_unwritable():
    bronze.profiler.start()
    try:
        bronze.profiler.stop("/nonexistent/trace.json")
    finally:
        bronze.profiler.stop(os.devnull)  # the kept trace


# (entry point, bad input, call, exception, words in the message)
def _dlpack_twice():
    cap = np.arange(6, dtype=np.float32).__dlpack__()

    class Producer:  # hands out one capsule twice
        def __dlpack__(self, **kw):
            return cap

    bronze.from_dlpack(Producer())
    bronze.from_dlpack(Producer())


def _mm_past_int():
    one = np.zeros(1, np.float32)  # stride-0 views: 2^31 + 1 columns over one float
    a = bronze.asarray(np.lib.stride_tricks.as_strided(one, (1, 2**31 + 1), (4, 0)))
    b = bronze.asarray(np.lib.stride_tricks.as_strided(one, (2**31 + 1, 1), (0, 4)))
    bronze.mm(a, b)


def _iadd_past_dtype():
    x = bronze.ones(3, dtype=bronze.int32)
    x += 2**40


def _sections(library):
    """(kind, name, body) of each section of a .bronzelib (shader/bronzelib.hpp)."""
    (count,) = struct.unpack_from("<I", library, 8)
    pos = 12
    for _ in range(count):
        kind, name_len = struct.unpack_from("<II", library, pos)
        (size,) = struct.unpack_from("<Q", library, pos + 8 + name_len)
        yield kind, library[pos + 8:pos + 8 + name_len], library[pos + 16 + name_len:pos + 16 + name_len + size]
        pos += 16 + name_len + size + 32


def _host_object(kind, name):
    return kind == 3 and name.startswith(b"cpu-")


def with_host_object(library, obj):
    """The .bronzelib `library` with `obj` for its host objects, checksums made to match."""
    sections = [(k, n, obj if _host_object(k, n) else b) for k, n, b in _sections(library)]
    out = library[:8] + struct.pack("<I", len(sections))
    for kind, name, body in sections:
        out += struct.pack("<II", kind, len(name)) + name + struct.pack("<Q", len(body)) + body
        out += hashlib.sha256(body).digest()
    return out


def _foreign_object():
    # Another library's object, of another signature: refused before it is
    # loaded (test_resources.py: a refused object never ran).
    other = bronze.compile_library("kernel void full(device float* out, device float* more) { out[0] = 1; }")
    obj = next(b for k, n, b in _sections(other) if _host_object(k, n))
    bronze.load_metallib(with_host_object(bronze.compile_library(SEED), obj))


def _tiny_fraction():
    bronze.empty_cache()
    bronze.set_per_process_memory_fraction(1e-300)
    try:
        bronze.empty(1000)
    finally:
        bronze.set_per_process_memory_fraction(0.0)


def _fifo_include():
    with tempfile.TemporaryDirectory() as d:
        os.mkfifo(os.path.join(d, "pipe.h"))
        bronze.compile_shader('#include "pipe.h"\n', filename=os.path.join(d, "k.metal"))


def _object_without_entries():
    """A .bronzelib whose CPU object is one without bronze's entries (with a valid checksum)."""
    other = bronze.compile_library("")  # no kernels
    obj = next(b for k, n, b in _sections(other) if _host_object(k, n))
    bronze.load_metallib(with_host_object(bronze.compile_library(SEED), obj))


CASES = [
    ("device(spec)", "unknown device type", lambda: bronze.device("tpu"), ValueError, "expected 'cpu'"),
    ("device(spec)", "non-numeric index", lambda: bronze.device("cuda:x"), ValueError, "index must be a number"),
    ("device(spec)", "a lone surrogate (no UTF-8 form)", lambda: bronze.device("\udcff"), ValueError, "device is not valid text"),
    ("device(type, index)", "an index past int64", lambda: bronze.device("cuda", 2**64), ValueError, "device index = 18446744073709551616 does not fit in int64"),
    ("is_available(device_type)", "a lone surrogate", lambda: bronze.is_available("\udcff"), ValueError, "is_available(): argument 1 is not valid text"),
    ("set_device(d)", "absent CUDA device", lambda: bronze.set_device("cuda:7"), bronze.NotSupportedError, "no CUDA device cuda:7"),
    ("get_device_properties(d)", "CPU index other than 0", lambda: bronze.get_device_properties("cpu:1"), ValueError, "one CPU device"),
    ("set_per_process_memory_fraction(f)", "an int", lambda: bronze.set_per_process_memory_fraction(1), TypeError, "must be `float`"),
    ("set_per_process_memory_fraction(f)", "below 0", lambda: bronze.set_per_process_memory_fraction(-0.1), ValueError, "between 0 and 2"),
    ("set_per_process_memory_fraction(f)", "above 2", lambda: bronze.set_per_process_memory_fraction(2.5), ValueError, "between 0 and 2"),
    ("empty(*size)", "negative size", lambda: bronze.empty(-1), ValueError, "negative dimension"),
    ("empty(*size)", "non-int size", lambda: bronze.empty(2.5), TypeError, "must be ints"),
    ("empty(*size)", "more than 2^63 bytes", lambda: bronze.empty(2**62), ValueError, "more than 2^63 bytes"),
    ("empty(*size)", "more than 2^63 elements", lambda: bronze.empty(2**32, 2**32), ValueError, "more than 2^63 elements"),
    ("zeros / rand / randn / arange", "more than 2^63 bytes", lambda: bronze.randn(2**62), ValueError, "more than 2^63 bytes"),
    ("empty(*size)", "more than the device holds", lambda: bronze.empty(1 << 59), bronze.OutOfMemoryError, "tried to allocate"),
    ("empty(dtype=)", "unknown dtype", lambda: bronze.empty(2, dtype="complex64"), TypeError, "unsupported dtype"),
    ("empty(device=)", "unknown device name", lambda: bronze.empty(2, device="gpu"), ValueError, "invalid device 'gpu'"),
    ("empty(device=)", "an int", lambda: bronze.empty(2, device=5), TypeError, "device must be a bronze.device, a str"),
    ("synchronize(device)", "an int", lambda: bronze.synchronize(5), TypeError, "device must be a bronze.device, a str"),
    ("empty_cache(device)", "unknown device name", lambda: bronze.empty_cache("a"), ValueError, "invalid device 'a'"),
    ("set_device(d)", "None", lambda: bronze.set_device(None), TypeError, "needs a device"),
    ("Stream(device)", "a float", lambda: bronze.Stream(1.0), TypeError, "got float"),
    ("Stream(device)", "two arguments", lambda: bronze.Stream("cpu", 1), TypeError, "Stream() takes (device=None); got (str, int)"),
    ("device(spec)", "an int", lambda: bronze.device(5), TypeError, "device() takes a str"),
    ("synchronize(device)", "two arguments", lambda: bronze.synchronize("cpu", 1), TypeError, "synchronize() takes (device: bronze.device | str | None = None); got (str, int)"),
    ("Tensor.numel()", "an argument", lambda: bronze.ones(2).numel(1), TypeError, "Tensor.numel() takes (); got (int)"),
    ("Event(enable_timing)", "a str", lambda: bronze.Event(enable_timing="yes"), TypeError, "True or False"),
    ("Tensor.fill_(v)", "a str", lambda: bronze.ones(2).fill_("a"), TypeError, "takes a number"),
    ("Tensor.reshape(*shape)", "a str", lambda: bronze.ones(4).reshape("a"), TypeError, "shape entries must be ints"),
    ("Tensor.view(*shape)", "a float", lambda: bronze.ones(4).view(2.0, 2), TypeError, "shape entries must be ints"),
    ("Tensor.reshape(*shape)", "past int64", lambda: bronze.ones(4).reshape(2**70), ValueError, "out of range"),
    ("Tensor.copy_(src)", "an int", lambda: bronze.ones(2).copy_(5), TypeError, "must be a bronze.Tensor"),
    ("Tensor.size(dim)", "past the last dimension", lambda: bronze.ones(2, 3).size(2), IndexError, "dimension 2 is out of range for a 2-d tensor"),
    ("Tensor.stride(dim)", "a str", lambda: bronze.ones(2).stride("a"), TypeError, "must be an int"),
    ("mm(a, b)", "an int", lambda: bronze.mm(bronze.ones(2, 2), 5), TypeError, "b must be a bronze.Tensor"),
    ("Tensor.normal_(mean, std)", "a str", lambda: bronze.ones(2).normal_("a"), TypeError, "must be a number"),
    ("Tensor.random_(from, to)", "past int64", lambda: bronze.ones(2, dtype=bronze.int64).random_(0, 2**70), ValueError, "does not fit in int64"),
    ("Tensor.record_stream(s)", "an int", lambda: bronze.ones(2).record_stream(5), TypeError, "must be a bronze.Stream"),
    ("arange(start, end, step)", "zero step", lambda: bronze.arange(0, 1, 0), ValueError, "step must be nonzero"),
    ("arange(start, end, step)", "values its dtype cannot hold", lambda: bronze.arange(250, 260, dtype=bronze.uint8),
     ValueError, "259 does not fit uint8"),
    ("arange(start, end, step)", "an infinite end", lambda: bronze.arange(0, float("inf")), ValueError, "finite"),
    ("arange(start, end, step)", "a str", lambda: bronze.arange("3"), TypeError, "arange end must be a number"),
    ("tensor(data)", "non-numeric elements", lambda: bronze.tensor([object()]), TypeError, "cannot make a tensor"),
    ("from_dlpack(obj)", "no __dlpack__", lambda: bronze.from_dlpack([1, 2]), TypeError, "needs an object with __dlpack__"),
    ("Tensor + Tensor", "shapes that do not broadcast", lambda: bronze.ones(3) + bronze.ones(4), ValueError, "do not broadcast"),
    ("Tensor @ Tensor", "inner sizes differ", lambda: bronze.ones(2, 3) @ bronze.ones(2, 3), ValueError, "cannot be multiplied"),
    ("Tensor @ Tensor", "integer tensors", lambda: bronze.ones(2, 2, dtype=bronze.int32) @ bronze.ones(2, 2, dtype=bronze.int32), TypeError, "floating"),
    ("Tensor.item()", "more than one element", lambda: bronze.ones(2).item(), ValueError, "one element"),
    ("Tensor.numpy()", "bfloat16", lambda: bronze.ones(2, dtype=bronze.bfloat16).numpy(), TypeError, "NumPy has no bfloat16"),
    ("Tensor.copy_(src)", "source that does not broadcast", lambda: bronze.ones(3).copy_(bronze.ones(2)), ValueError, "does not broadcast"),
    ("Tensor.normal_(mean, std)", "integer tensor", lambda: bronze.ones(2, dtype=bronze.int32).normal_(), TypeError, "floating tensor"),
    ("Tensor.normal_(mean, std)", "negative std", lambda: bronze.ones(2).normal_(0, -1), ValueError, "std >= 0"),
    ("randint(low, high)", "empty range", lambda: bronze.randint(3, 3, (2,)), ValueError, "low < high"),
    ("randint(low, high)", "high past int64", lambda: bronze.randint(0, 2**63), ValueError, "randint high = 9223372036854775808 does not fit in int64"),
    ("randint(low, high)", "a float", lambda: bronze.randint(0, 2.5), TypeError, "randint high must be an int, got float"),
    ("rand(*size)", "a size past int64", lambda: bronze.rand(2**70), ValueError, "shape entry 1180591620717411303424 is out of range"),
    ("set_rng_state(state)", "not a tensor", lambda: bronze.set_rng_state(b"x" * 44), TypeError, "bronze.Tensor"),
    ("set_rng_state(state)", "not uint8", lambda: bronze.set_rng_state(bronze.zeros(44)), TypeError, "uint8"),
    ("set_rng_state(state)", "wrong size", lambda: bronze.set_rng_state(bronze.zeros(10, dtype=bronze.uint8)), RuntimeError, "must be 44 bytes"),
    ("compile_shader(source)", "not a str", lambda: bronze.compile_shader(b"kernel"), TypeError, "source as str"),
    ("compile_shader(source)", "an error in the shader", lambda: bronze.compile_shader("kernel void f(device float* o) {\n  o[0] = nope;\n}"), bronze.ShaderCompileError, "shader.metal:2:10"),
    ("compile_shader(source)", "Metal's library used wrongly (as_type between sizes)", lambda: bronze.compile_shader("kernel void f(device uint4* u, device half4* o) {\n  o[0] = as_type<half4>(u[0]);\n}"), bronze.ShaderCompileError, "static assertion failed: as_type needs types of one size"),
    ("compile_shader(source)", "a texture parameter", lambda: bronze.compile_shader("kernel void f(texture2d<float> t) {}"), bronze.ShaderCompileError, "textures"),
    ("compile_shader(source)", "a misspelled position attribute", lambda: bronze.compile_shader("kernel void f(device float* o, uint i [[thread_position_in_thread_group]]) {}"), bronze.ShaderCompileError, "did you mean [[thread_position_in_threadgroup]]"),
    ("compile_shader(source)", "an unknown attribute", lambda: bronze.compile_shader("kernel void f(device float* o [[bufer(0)]]) {}"), bronze.ShaderCompileError, "shader.metal:1:33: error: unknown attribute [[bufer]] on parameter 'o'; did you mean [[buffer]]?"),
    ("compile_shader(source)", "an attribute on the wrong kind of parameter", lambda: bronze.compile_shader("kernel void f(device float* o [[thread_position_in_grid]]) {}"), bronze.ShaderCompileError, "is an attribute of a value (uint, ushort2, uint3, ...)"),
    ("compile_shader(source)", "a thread position of a type Metal refuses", lambda: bronze.compile_shader("kernel void f(device float* o,\n float i [[thread_position_in_grid]]) {}"), bronze.ShaderCompileError, "shader.metal:2:2: error: static assertion failed: [[thread_position_in_grid]] takes a uint or ushort"),
    ("compile_shader(source)", "a kernel that returns a value", lambda: bronze.compile_shader("kernel int f(device float* o) { return 0; }"), bronze.ShaderCompileError, "a kernel function returns void"),
    ("compile_shader(source)", "a pointer without an address space", lambda: bronze.compile_shader("kernel void f(float* o) {}"), bronze.ShaderCompileError, "without an address space"),
    ("compile_shader(source)", "one buffer index twice (as the compiler evaluates them)", lambda: bronze.compile_shader("kernel void f(device float* a [[buffer(0)]],\n device float* b [[buffer(1 - 1)]]) {}"), bronze.ShaderCompileError, "shader.metal:1:15: error: static assertion failed: parameter 'a': its [[buffer(n)]] index is another parameter's too"),
    ("compile_shader(source)", "a buffer index past Metal's 30", lambda: bronze.compile_shader("kernel void f(device float* a [[buffer(31)]]) {}"), bronze.ShaderCompileError, "a [[buffer(n)]] index is 0 to 30"),
    ("compile_shader(source)", "more than 31 buffers", lambda: bronze.compile_shader("kernel void f(" + ", ".join(f"device float* p{k}" for k in range(32)) + ") {}"), bronze.ShaderCompileError, "a kernel has at most 31 buffers"),
    ("compile_shader(source)", "an index that is no constant", lambda: bronze.compile_shader("kernel void f(device float* a [[buffer(kNope)]]) {}"), bronze.ShaderCompileError, "kNope"),
    ("compile_shader(constants=)", "an index no function constant has", lambda: bronze.compile_shader("constant bool b [[function_constant(0)]];\n" + SEED, constants={1: True}), bronze.ShaderCompileError, "the source declares no function constant with index 1"),
    ("compile_shader(source)", "a missing include", lambda: bronze.compile_shader('#include "absent.h"\n'), bronze.ShaderCompileError, "absent.h"),
    ("compile_shader(source)", "Metal 4 tensors", lambda: bronze.compile_shader("#include <metal_tensor>\n"), bronze.ShaderNotSupportedError, "Metal 4"),
    ("compile_shader(source)", "an include outside its roots", lambda: bronze.compile_shader('#include "/etc/passwd"\n'), bronze.ShaderCompileError, "reaches outside"),
    ("compile_shader(source)", "an #include of a FIFO (or a device, anything not a regular file)", _fifo_include, bronze.ShaderCompileError, "it is a FIFO; bronze includes regular files only"),
    ("compile_shader(source)", "`#pragma GCC dependency` of a file outside its roots", lambda: bronze.compile_shader('#pragma GCC dependency "/etc/shadow"\n'), bronze.ShaderCompileError, "reaches outside"),
    ("compile_shader(source)", "an #include of a computed name (`#include MACRO`)", lambda: bronze.compile_shader('#define F "x.h"\n#include F\n'), bronze.ShaderCompileError, "computed name (a macro): bronze resolves file names written out in the source only"),
    ("compile_shader(source)", "`#line` past 2^31 - 1", lambda: bronze.compile_shader("#line 2147483647\nint a;\nint b;\n"), bronze.ShaderCompileError, "line 2147483648 is past the last line number"),
    ("compile_shader(filename=)", "a name with a newline (shown escaped)", lambda: bronze.compile_shader("kernel void k(device float* o) { o[0] = nope; }", filename="a\nb.metal"), bronze.ShaderCompileError, "a\\nb.metal:1:"),
    ("compile_shader(headers=)", "a name leaving the folder", lambda: bronze.compile_shader("", headers={"../x.h": ""}), ValueError, "not a relative file name"),
    ("compile_shader(headers=)", "not a dict", lambda: bronze.compile_shader("", headers=["x.h"]), TypeError, "dict of str"),
    ("compile_shader(include_dirs=)", "a missing folder", lambda: bronze.compile_shader("", include_dirs=["/nonexistent"]), ValueError, "no folder"),
    ("compile_shader(defines=)", "not a macro name", lambda: bronze.compile_shader("", defines={"1X": "2"}), ValueError, "not a macro name"),
    ("compile_shader(defines=)", "a value of two lines", lambda: bronze.compile_shader("", defines={"X": "1\n2"}), ValueError, "more than one line"),
    ("compile_library(archs=)", "one str that names no architecture", lambda: bronze.compile_library(SEED, archs="sm_x"), ValueError, "got 'sm_x'"),
    ("compile_library(archs=)", "a negative number", lambda: bronze.compile_library(SEED, archs=[-5]), ValueError, "got -5"),
    ("compile_shader(language=)", "unknown language", lambda: bronze.compile_shader(SEED, language="glsl"), ValueError, "unknown shader language"),
    ("compile_shader(language=)", "None", lambda: bronze.compile_shader(SEED, language=None), TypeError, "language must be 'metal' or 'cuda', got NoneType"),
    ("compile_shader(source)", "a lone surrogate (no UTF-8 form)", lambda: bronze.compile_shader(SEED + "// \udcff"), ValueError, "the source is not valid text: it holds a lone surrogate"),
    ("compile_shader(headers=)", "a lone surrogate", lambda: bronze.compile_shader(SEED, headers={"a.h": "\udcff"}), ValueError, "headers['a.h'] is not valid text"),
    ("compile_shader(filename=)", "bytes", lambda: bronze.compile_shader(SEED, filename=b"x.metal"), TypeError, "filename must be a str or os.PathLike, got bytes"),
    ("compile_shader(validate=)", "a str", lambda: bronze.compile_shader(SEED, validate="yes"), TypeError, "validate must be True or False, got str"),
    ("lib.<name>", "unknown kernel", lambda: _lib().nope, bronze.KernelNotFoundError, "its kernels: full"),
    ("lib.<name>", "a kernel template the source never instantiates", lambda: bronze.compile_shader("template <typename T>\nkernel void k(device T* x) {}\n").k, bronze.KernelNotFoundError, "instantiates none; add an instantiation"),
    ("lib.k(*args)", "wrong argument count", lambda: _lib().full(bronze.ones(4)), TypeError, "takes 2 arguments"),
    ("lib.k(*args)", "tensor of another dtype, validate=True (without: its bytes, one warning, as torch.mps)", lambda: bronze.compile_shader(SEED, validate=True).full(bronze.ones(4, dtype=bronze.float64), 1.0), TypeError, "got a tensor of float64 (validate=True refuses it"),
    ("lib.k(arg_casts=)", "a negative index", lambda: _lib().full(bronze.ones(4), 1.0, arg_casts={-1: "fp16"}), ValueError, "an argument index is 0 to 30, got -1"),
    ("lib.k(*args)", "a writable NumPy view that is not contiguous", lambda: _lib().full(np.zeros(8, np.float32)[::2], 1.0), ValueError, "is not contiguous"),
    ("lib.k(*args)", "number for a buffer", lambda: _lib().full(1.0, 1.0), bronze.KernelArgumentError, "is a buffer"),
    ("lib.k(*args)", "tensor smaller than its constant T&", lambda: _lib().full(bronze.ones(4), bronze.ones(1, dtype=bronze.float16)), ValueError, "takes 4 bytes; the tensor has 2"),
    ("lib.k(arg_casts=)", "unknown cast", lambda: _lib().full(bronze.ones(4), 1.0, arg_casts="fp8"), ValueError, "unsupported cast"),
    ("lib.k(*args)", "a value its parameter cannot hold", lambda: _lib_int().k(bronze.zeros(1, dtype=bronze.int32), 2**40), ValueError, "does not fit int32"),
    ("lib.k(*args)", "NaN for an integer parameter", lambda: _lib_int().k(bronze.zeros(1, dtype=bronze.int32), float("nan")), ValueError, "nan does not fit int32"),
    ("full(size, value)", "a value the dtype cannot hold", lambda: bronze.full((3,), 300, dtype=bronze.uint8), ValueError, "300 does not fit uint8"),
    ("lib.k(*args)", "string for a scalar", lambda: _lib().full(bronze.ones(4), "x"), TypeError, "expected a number"),
    ("lib.k(threads=)", "a grid past the buffer, validate=True", _write_past_the_end, bronze.DeviceError, "out-of-bounds access to 'out' at index 4"),
    ("lib.k(*args)", "a read-only NumPy array for a written buffer", _read_only_output, bronze.KernelArgumentError, "is a read-only array"),
    ("lib.k(*args)", "a division by zero, validate=True", lambda: _run(DIVIDE, bronze.zeros(2, dtype=bronze.int32), 0, validate=True), bronze.DeviceError, "integer division by zero at shader.metal:1:"),
    ("lib.k(*args)", "an invalid memory access in the kernel", lambda: _run(WILD, bronze.zeros(2, dtype=bronze.int32)), bronze.DeviceError, "invalid memory access at 0x10 (SIGSEGV)"),
    ("lib.k(threads=)", "a grid past its buffer", lambda: _run(SEED, bronze.zeros(16), 1.0, threads=1 << 22), bronze.DeviceError, "a write past the end of the memory of 'out' (64 bytes from where it starts"),
    ("lib.k(*args)", "an index past a private array", lambda: _private_index(False), bronze.DeviceError, "wrote past the top of its stack"),
    ("lib.k(*args)", "an index past a private array, validate=True", lambda: _private_index(True), bronze.DeviceError, "out-of-bounds index 20000 into an array 'float[8]'"),
    ("lib.k(threadgroup_memory=)", "smaller than the kernel uses", lambda: _run(TG, bronze.zeros(4096), threadgroup_memory=4, group_size=64), bronze.DeviceError, "kernel 't' stopped at an invalid memory access"),
    ("lib.k(*args)", "a kernel past the time limit", _runaway, bronze.DeviceError, "ran past the kernel time limit of 0.2 s"),
    ("set_kernel_time_limit(s)", "negative", lambda: bronze.set_kernel_time_limit(-1), ValueError, "seconds >= 0"),
    ("lib.k(threads=)", "a bool", lambda: _lib().full(bronze.ones(4), 1.0, threads=True), TypeError, "an int or a tuple"),
    ("lib.k(threads=)", "2**64", lambda: _lib().full(bronze.ones(4), 1.0, threads=2**64), ValueError, "in [0, 2^32)"),
    ("lib.k(threads=)", "four dimensions", lambda: _lib().full(bronze.ones(4), 1.0, threads=(1, 1, 1, 1)), ValueError, "1 to 3 dimensions"),
    ("lib.k(group_size=)", "over 1024 threads", lambda: _lib().full(bronze.ones(4), 1.0, group_size=2048), ValueError, "over the kernel's limit"),
    ("lib.k(threadgroup_memory=)", "a str", lambda: _lib().full(bronze.ones(4), 1.0, threadgroup_memory="64"), TypeError, "must be an int (bytes at [[threadgroup(0)]])"),
    ("lib.k(threadgroup_memory=)", "a negative size", lambda: _lib().full(bronze.ones(4), 1.0, threadgroup_memory=[-1]), ValueError, "byte counts >= 0"),
    ("lib.k(stream=)", "not a Stream", lambda: _lib().full(bronze.ones(4), 1.0, stream=0), TypeError, "must be a bronze.Stream, got int"),
    ("lib.k(**kwargs)", "unknown keyword", lambda: _lib().full(bronze.ones(4), 1.0, thread=4), TypeError, "unexpected keyword"),
    ("load_metallib(x)", "an int", lambda: bronze.load_metallib(3), TypeError, "bytes, bytearray, str or os.PathLike"),
    ("load_metallib(x)", "a truncated Apple .metallib", lambda: bronze.load_metallib(b"MTLB" + bytes(28)), ValueError, "not a valid .metallib: the function list's size at byte 32 runs past the end"),
    ("load_metallib(x)", "other bytes", lambda: bronze.load_metallib(b"\x00garbage"), ValueError, "not a bronze library"),
    ("load_metallib(x)", "a cubin on the CPU device", lambda: bronze.load_metallib(b"\x7fELF" + bytes(60), device="cpu"), bronze.NotSupportedError, "loads on a CUDA device"),
    ("load_metallib(x)", "another library's object (refused before it is loaded)", _foreign_object, ValueError, "does not match its source"),
    ("load_metallib(x)", "a missing file", lambda: bronze.load_metallib("/nonexistent.bronzelib"), FileNotFoundError, "nonexistent"),
    ("load_metallib(x)", "a .bronzelib whose object has no entries", _object_without_entries, ValueError, "the .bronzelib's compiled object for this CPU is corrupt or not bronze's"),
    ("load_metallib(x, rebuild=r)", "an int for rebuild", lambda: bronze.load_metallib(b"BRZL", rebuild=1), TypeError, "True or False"),
    ("load_metallib(x, rebuild=r)", "a raw CUDA module", lambda: bronze.load_metallib(b"\x7fELF" + bytes(60), rebuild=True), ValueError, "carries no source"),
    ("profiler.start(mode)", "unknown mode", lambda: bronze.profiler.start("intervals"), bronze.ProfilerError, "invalid profiler mode"),
    ("profiler.start()", "already running", _profiler_twice, bronze.ProfilerError, "already running"),
    ("profiler.stop(path)", "a name with a NUL", _profiler_stop_nul, ValueError, "is not a file name"),
    ("metal_capture(fname)", "None", lambda: bronze.profiler.metal_capture(None).__enter__(), TypeError, "is a file name (str or os.PathLike), got NoneType"),
    ("profiler.stop()", "not running", lambda: bronze.profiler.stop(), bronze.ProfilerError, "not running"),
    ("profiler.stop(path)", "a path it cannot write", _profiler_unwritable, bronze.BronzeError, "cannot write the trace to '/nonexistent/trace.json'"),
    ("Event.elapsed_time(end)", "events not recorded", lambda: bronze.Event(enable_timing=True).elapsed_time(bronze.Event(enable_timing=True)), RuntimeError, "recorded first"),
    ("Event.elapsed_time(end)", "without enable_timing", lambda: bronze.Event().elapsed_time(bronze.Event()), RuntimeError, "enable_timing=True"),
    ("host_alias(t)", "not a tensor", lambda: bronze.host_alias(np.ones(2)), TypeError, "needs a bronze.Tensor"),
    ("stream(s)", "not a stream", lambda: bronze.stream(3).__enter__(), TypeError, "needs a bronze.Stream"),
    ("full(size, value)", "an int past uint64", lambda: bronze.full(2, 2**64, dtype=bronze.uint64), ValueError, "out of the int64 and uint64 ranges"),
    ("full(size, value)", "int64's max + 1", lambda: bronze.full(2, 2**63, dtype=bronze.int64), ValueError, "9223372036854775808 does not fit int64"),
    ("Tensor.copy_(src)", "a source overlapping the destination", lambda: (lambda x: x.copy_(x.t()))(bronze.arange(4).reshape(2, 2)),
     ValueError, "refer to a single memory location"),
    ("from_dlpack(obj)", "one capsule imported twice", _dlpack_twice, ValueError, "already imported"),
    ("empty(*size)", "more than 64 dimensions", lambda: bronze.empty(*[1] * 65), ValueError, "at most 64 dimensions"),
    ("Tensor.random_(from, to)", "a range its dtype cannot hold", lambda: bronze.zeros(3, dtype=bronze.int32).random_(0, 2**40), ValueError, "to - 1 is out of bounds for int32"),
    ("randint(low, high)", "a negative low for uint8", lambda: bronze.randint(-5, 0, (5,), dtype=bronze.uint8), ValueError, "from is out of bounds for uint8"),
    ("Tensor.uniform_(from, to)", "a bound past float16's range", lambda: bronze.zeros(3, dtype=bronze.float16).uniform_(0, 1e6), ValueError, "to is out of bounds for float16"),
    ("Tensor.uniform_(from, to)", "infinite bounds", lambda: bronze.zeros(3).uniform_(-float("inf"), float("inf")), ValueError, "from is out of bounds for float32"),
    ("mm(a, b)", "a size over 2^31 - 1", _mm_past_int, ValueError, "over 2^31 - 1"),
    ("Tensor += n", "an int its dtype cannot hold", _iadd_past_dtype, ValueError, "1099511627776 does not fit int32"),
    ("Tensor + n", "an int past int64", lambda: bronze.ones(2) + 2**70, ValueError, "out of the int64 range"),
    ("set_per_process_memory_fraction(f)", "1e-300 (a limit of 1 byte), then an allocation", _tiny_fraction, bronze.OutOfMemoryError, "limit 1 B"),
    ("bool(t)", "more than one element", lambda: bool(bronze.ones(2)), RuntimeError, "more than one value is ambiguous"),
]

# Inputs that look wrong but are bronze's intended behaviour: (entry point, input, what happens, why).
BY_DESIGN = [
    ("compile_shader(source)", "`__has_include(\"/etc/shadow\")`, a file outside the roots",
     "false, whether the file exists or not (issue #34, N36)",
     "bronze reads and looks at no file outside the source's folder, include_dirs, headers and torch's Metal "
     "headers: for the source there is nothing else to include"),
    ("Tensor == Tensor", "two tensors", "identity (`t == t` is True, equal values in two tensors False)",
     "bronze has no elementwise comparison ops and no bool tensor results to give; `==` is Python's "
     "default object identity, so tensors stay usable as dict keys and in sets (`__hash__`). torch compares "
     "elementwise; compare values with `a.numpy() == b.numpy()` (issue #34, N46)"),
    ("import bronze", "in a subinterpreter", "`ImportError` (bronze runs in the main interpreter only); the main "
     "interpreter's bronze goes on working",
     "its C++ core keeps one state per process (nanobind's type registry), as NumPy, which it uses, does; "
     "executed again in a subinterpreter it would replace the main interpreter's (issue #34, N21)"),
]


def render():
    lines = [
        "# What bad input gets",
        "",
        "Every public entry point and the exception a bad input raises (checked by",
        "`tests/python/test_bad_inputs.py`; regenerate with",
        "`python tests/python/bad_inputs.py > docs/bad-inputs.md`). After each, the",
        "runtime stays usable. bronze's own classes: `BronzeError` (a `RuntimeError`),",
        "`OutOfMemoryError`, `DeviceError` (queued work failed, raised at the next",
        "synchronize), `NotSupportedError`, `ShaderCompileError` (also a `SyntaxError`),",
        "`ShaderNotSupportedError` (a `ShaderCompileError` and a `NotSupportedError`: a",
        "Metal 4 header), `KernelNotFoundError` (also an `AttributeError`),",
        "`KernelArgumentError` (also a `TypeError`), `ProfilerError` (also a `ValueError`).",
        "",
        "| entry point | bad input | raises | message includes |",
        "|---|---|---|---|",
    ]
    for entry, what, _, exc, words in CASES:
        name = exc.__name__ if exc.__module__ == "builtins" else f"bronze.{exc.__name__}"
        lines.append(f"| `{entry}` | {what} | `{name}` | {words.replace('|', '/')} |")
    lines += [
        "",
        "## By design",
        "",
        "Inputs that may look wrong but give what bronze means them to give:",
        "",
        "| entry point | input | what happens | why |",
        "|---|---|---|---|",
    ]
    for entry, what, result, why in BY_DESIGN:
        lines.append(f"| `{entry}` | {what} | {result} | {why} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(render(), end="")
