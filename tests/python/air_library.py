"""Apple-format .metallib files made here, for the tests: AIR modules written
as LLVM IR text in the shape Apple's compiler gives them (address spaces 1,
2 and 3, air.* intrinsics, !air.kernel and !air.function_constants
metadata), assembled to bitcode with the libLLVM bronze loads (its C API,
through ctypes), and packed in the .metallib container: header, function
list (NAME, TYPE, HASH, MDSZ, OFFT, VERS), bitcode modules in their
wrappers. No Apple file is committed; these are written in the style of
real ones."""

from __future__ import annotations

import ctypes
import struct

from bronze import _metallib

_LIB_NAMES = [f"libLLVM.so.{v}.1" for v in range(22, 16, -1)] + [f"libLLVM-{v}.so" for v in range(22, 16, -1)]


def _llvm():
    for name in _LIB_NAMES:
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        lib.LLVMContextCreate.restype = ctypes.c_void_p
        lib.LLVMCreateMemoryBufferWithMemoryRangeCopy.restype = ctypes.c_void_p
        lib.LLVMCreateMemoryBufferWithMemoryRangeCopy.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p]
        lib.LLVMParseIRInContext.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p),
                                             ctypes.POINTER(ctypes.c_char_p)]
        lib.LLVMWriteBitcodeToMemoryBuffer.restype = ctypes.c_void_p
        lib.LLVMWriteBitcodeToMemoryBuffer.argtypes = [ctypes.c_void_p]
        lib.LLVMGetBufferStart.restype = ctypes.c_void_p
        lib.LLVMGetBufferStart.argtypes = [ctypes.c_void_p]
        lib.LLVMGetBufferSize.restype = ctypes.c_size_t
        lib.LLVMGetBufferSize.argtypes = [ctypes.c_void_p]
        lib.LLVMDisposeMemoryBuffer.argtypes = [ctypes.c_void_p]
        lib.LLVMDisposeModule.argtypes = [ctypes.c_void_p]
        lib.LLVMContextDispose.argtypes = [ctypes.c_void_p]
        return lib
    return None


LLVM = _llvm()


def assemble(ir: str) -> bytes:
    """LLVM IR text -> bitcode (ValueError with LLVM's message if it refuses)."""
    ctx = LLVM.LLVMContextCreate()
    try:
        text = ir.encode()
        buf = LLVM.LLVMCreateMemoryBufferWithMemoryRangeCopy(text, len(text), b"test.ll")
        mod, err = ctypes.c_void_p(), ctypes.c_char_p()
        if LLVM.LLVMParseIRInContext(ctx, buf, ctypes.byref(mod), ctypes.byref(err)):  # takes the buffer
            raise ValueError(f"LLVM refused the test's IR: {err.value.decode()}")
        out = LLVM.LLVMWriteBitcodeToMemoryBuffer(mod)
        data = ctypes.string_at(LLVM.LLVMGetBufferStart(out), LLVM.LLVMGetBufferSize(out))
        LLVM.LLVMDisposeMemoryBuffer(out)
        LLVM.LLVMDisposeModule(mod)
        return data
    finally:
        LLVM.LLVMContextDispose(ctx)


pack = _metallib.pack


def fat(*slices: bytes) -> bytes:
    """A Mach-O universal file holding the slices (as a fat .metallib)."""
    out = struct.pack(">2I", 0xCAFEBABE, len(slices))
    offset = 8 + 20 * len(slices)
    offset = (offset + 4095) // 4096 * 4096
    body = b""
    for s in slices:
        out += struct.pack(">5I", 0x01000013, 0, offset + len(body), len(s), 12)
        body += s + b"\0" * (-len(s) % 4096)
    return out + b"\0" * (offset - len(out)) + body


# AIR as Apple's compiler writes it (opaque pointers, as LLVM 17+ reads it).
# An elementwise kernel: device buffers, a constant reference, the thread's
# position; named and indexed as MLX's binary kernels are.
AXPBY = r"""
target datalayout = "e-p:64:64:64-i1:8:8-i8:8:8-i16:16:16-i32:32:32-i64:64:64-f32:32:32-f64:64:64-v16:16:16-v24:32:32-v32:32:32-v48:64:64-v64:64:64-v96:128:128-v128:128:128-v192:256:256-v256:256:256-v512:512:512-v1024:1024:1024-n8:16:32"
target triple = "air64_v26-apple-macosx14.0.0"

define void @axpby_float(ptr addrspace(1) noundef "air-buffer-no-alias" %x, ptr addrspace(1) noundef "air-buffer-no-alias" %y, ptr addrspace(2) noundef align 4 dereferenceable(8) "air-buffer-no-alias" %ab, i32 noundef %i) {
  %idx = zext i32 %i to i64
  %px = getelementptr inbounds float, ptr addrspace(1) %x, i64 %idx
  %vx = load float, ptr addrspace(1) %px, align 4
  %py = getelementptr inbounds float, ptr addrspace(1) %y, i64 %idx
  %vy = load float, ptr addrspace(1) %py, align 4
  %a = load float, ptr addrspace(2) %ab, align 4
  %pb = getelementptr inbounds i8, ptr addrspace(2) %ab, i64 4
  %b = load float, ptr addrspace(2) %pb, align 4
  %ax = fmul float %a, %vx
  %by = fmul float %b, %vy
  %r = fadd float %ax, %by
  store float %r, ptr addrspace(1) %py, align 4
  ret void
}

!air.kernel = !{!0}
!0 = !{ptr @axpby_float, !1, !2}
!1 = !{}
!2 = !{!3, !4, !5, !6}
!3 = !{i32 0, !"air.buffer", !"air.location_index", i32 0, i32 1, !"air.read", !"air.address_space", i32 1, !"air.arg_type_size", i32 4, !"air.arg_type_align_size", i32 4, !"air.arg_type_name", !"float", !"air.arg_name", !"x"}
!4 = !{i32 1, !"air.buffer", !"air.location_index", i32 1, i32 1, !"air.read_write", !"air.address_space", i32 1, !"air.arg_type_size", i32 4, !"air.arg_type_align_size", i32 4, !"air.arg_type_name", !"float", !"air.arg_name", !"y"}
!5 = !{i32 2, !"air.buffer", !"air.buffer_size", i32 8, !"air.location_index", i32 2, i32 1, !"air.read", !"air.address_space", i32 2, !"air.arg_type_size", i32 8, !"air.arg_type_align_size", i32 4, !"air.arg_type_name", !"float2", !"air.arg_name", !"ab"}
!6 = !{i32 3, !"air.thread_position_in_grid", !"air.arg_type_name", !"uint", !"air.arg_name", !"i"}
"""

# A reduction over a threadgroup in the shape of MLX's row kernels: a
# threadgroup array, barriers, simd_sum, a buffer a function constant keeps,
# [[buffer(n)]] indices out of declaration order.
ROW_SUM = r"""
target datalayout = "e-p:64:64:64-i1:8:8-i8:8:8-i16:16:16-i32:32:32-i64:64:64-f32:32:32-f64:64:64-v16:16:16-v24:32:32-v32:32:32-v48:64:64-v64:64:64-v96:128:128-v128:128:128-v192:256:256-v256:256:256-v512:512:512-v1024:1024:1024-n8:16:32"
target triple = "air64_v26-apple-macosx14.0.0"

@partial = internal addrspace(3) global [32 x float] undef, align 4
@has_bias.MTL_FC_INIT_7_b = internal unnamed_addr addrspace(2) externally_initialized constant i8 undef, section "air.fc_initializer", align 1
@fc_pred = internal addrspace(2) global i8 0, align 1

declare float @air.simd_sum.f32(float)
declare void @air.wg.barrier(i32, i32)

define void @row_sum_float(ptr addrspace(1) noundef %out, ptr addrspace(1) noundef %in, ptr addrspace(1) noundef %bias, i32 noundef %lid, i32 noundef %lane, i32 noundef %sg, <3 x i32> noundef %gid) {
  %row = extractelement <3 x i32> %gid, i64 0
  %r64 = zext i32 %row to i64
  %l64 = zext i32 %lid to i64
  %off = mul i64 %r64, 1024
  %at = add i64 %off, %l64
  %p = getelementptr inbounds float, ptr addrspace(1) %in, i64 %at
  %v = load float, ptr addrspace(1) %p, align 4
  %s = call float @air.simd_sum.f32(float %v)
  %first = icmp eq i32 %lane, 0
  br i1 %first, label %keep, label %wait
keep:
  %sg64 = zext i32 %sg to i64
  %slot = getelementptr inbounds [32 x float], ptr addrspace(3) @partial, i64 0, i64 %sg64
  store float %s, ptr addrspace(3) %slot, align 4
  br label %wait
wait:
  call void @air.wg.barrier(i32 2, i32 1)
  %lead = icmp eq i32 %lid, 0
  br i1 %lead, label %total, label %done
total:
  %t0 = load float, ptr addrspace(3) @partial, align 4
  %po = getelementptr inbounds float, ptr addrspace(1) %out, i64 %r64
  store float %t0, ptr addrspace(1) %po, align 4
  br label %done
done:
  ret void
}

!air.kernel = !{!0}
!air.function_constants = !{!20}
!0 = !{ptr @row_sum_float, !1, !2}
!1 = !{}
!2 = !{!3, !4, !5, !7, !8, !9, !10}
!3 = !{i32 0, !"air.buffer", !"air.location_index", i32 1, i32 1, !"air.read_write", !"air.address_space", i32 1, !"air.arg_type_size", i32 4, !"air.arg_type_align_size", i32 4, !"air.arg_type_name", !"float", !"air.arg_name", !"out"}
!4 = !{i32 1, !"air.buffer", !"air.location_index", i32 0, i32 1, !"air.read", !"air.address_space", i32 1, !"air.arg_type_size", i32 4, !"air.arg_type_align_size", i32 4, !"air.arg_type_name", !"float", !"air.arg_name", !"in"}
!5 = !{i32 2, !"air.function_constant", !6, !"air.buffer", !"air.location_index", i32 2, i32 1, !"air.read", !"air.address_space", i32 1, !"air.arg_type_size", i32 4, !"air.arg_type_align_size", i32 4, !"air.arg_type_name", !"float", !"air.arg_name", !"bias"}
!6 = !{ptr addrspace(2) @fc_pred, !"bool", !"has_bias"}
!7 = !{i32 3, !"air.thread_position_in_threadgroup", !"air.arg_type_name", !"uint", !"air.arg_name", !"lid"}
!8 = !{i32 4, !"air.thread_index_in_simdgroup", !"air.arg_type_name", !"uint", !"air.arg_name", !"lane"}
!9 = !{i32 5, !"air.simdgroup_index_in_threadgroup", !"air.arg_type_name", !"uint", !"air.arg_name", !"sg"}
!10 = !{i32 6, !"air.threadgroup_position_in_grid", !"air.arg_type_name", !"uint3", !"air.arg_name", !"gid"}
!20 = !{ptr addrspace(2) @has_bias.MTL_FC_INIT_7_b, !"bool", !"has_bias", i32 7, i1 true}
"""

# Every position a thread of a kernel without barriers or collectives is
# given (the CPU runs a row of a group in one loop of the kernel's code):
# out[8 * (y * width + x) + k] = x, y, the position in the group (x, y), the
# index in it, the lane (a ushort), the simdgroup, the group's x * 1000 + y.
_POSITION_STORES = "".join(
    f"  %i{k} = add i64 %base, {k}\n  %p{k} = getelementptr inbounds i32, ptr addrspace(1) %out, i64 %i{k}\n"
    f"  store i32 {v}, ptr addrspace(1) %p{k}, align 4\n"
    for k, v in enumerate(["%gx", "%gy", "%lx", "%ly", "%t", "%lane32", "%sg", "%tgxy"]))
POSITIONS = AXPBY.split("define void")[0] + r"""
define void @positions(ptr addrspace(1) noundef "air-buffer-no-alias" %out, ptr addrspace(2) noundef align 4 dereferenceable(4) "air-buffer-no-alias" %w, <2 x i32> noundef %g, <2 x i32> noundef %l, i32 noundef %t, i16 noundef %lane, i32 noundef %sg, <2 x i32> noundef %tg) {
  %width = load i32, ptr addrspace(2) %w, align 4
  %gx = extractelement <2 x i32> %g, i64 0
  %gy = extractelement <2 x i32> %g, i64 1
  %lx = extractelement <2 x i32> %l, i64 0
  %ly = extractelement <2 x i32> %l, i64 1
  %tgx = extractelement <2 x i32> %tg, i64 0
  %tgy = extractelement <2 x i32> %tg, i64 1
  %tgx1000 = mul i32 %tgx, 1000
  %tgxy = add i32 %tgx1000, %tgy
  %lane32 = zext i16 %lane to i32
  %row = mul i32 %gy, %width
  %lin = add i32 %row, %gx
  %lin64 = zext i32 %lin to i64
  %base = mul i64 %lin64, 8
""" + _POSITION_STORES + r"""  ret void
}

!air.kernel = !{!0}
!0 = !{ptr @positions, !1, !2}
!1 = !{}
!2 = !{!3, !4, !5, !6, !7, !8, !9, !10}
!3 = !{i32 0, !"air.buffer", !"air.location_index", i32 0, i32 1, !"air.read_write", !"air.address_space", i32 1, !"air.arg_type_size", i32 4, !"air.arg_type_align_size", i32 4, !"air.arg_type_name", !"uint", !"air.arg_name", !"out"}
!4 = !{i32 1, !"air.buffer", !"air.buffer_size", i32 4, !"air.location_index", i32 1, i32 1, !"air.read", !"air.address_space", i32 2, !"air.arg_type_size", i32 4, !"air.arg_type_align_size", i32 4, !"air.arg_type_name", !"uint", !"air.arg_name", !"w"}
!5 = !{i32 2, !"air.thread_position_in_grid", !"air.arg_type_name", !"uint2", !"air.arg_name", !"g"}
!6 = !{i32 3, !"air.thread_position_in_threadgroup", !"air.arg_type_name", !"uint2", !"air.arg_name", !"l"}
!7 = !{i32 4, !"air.thread_index_in_threadgroup", !"air.arg_type_name", !"uint", !"air.arg_name", !"t"}
!8 = !{i32 5, !"air.thread_index_in_simdgroup", !"air.arg_type_name", !"ushort", !"air.arg_name", !"lane"}
!9 = !{i32 6, !"air.simdgroup_index_in_threadgroup", !"air.arg_type_name", !"uint", !"air.arg_name", !"sg"}
!10 = !{i32 7, !"air.threadgroup_position_in_grid", !"air.arg_type_name", !"uint2", !"air.arg_name", !"tg"}
"""

# AIR's conversions from float to integers, as MLX's casts call them.
TO_INT = AXPBY.split("define void")[0] + r"""
declare i32 @air.convert.s.i32.f.f32(float)
declare i32 @air.convert.u.i32.f.f32(float)
define void @to_int(ptr addrspace(1) %x, ptr addrspace(1) %s, ptr addrspace(1) %u, i32 %i) {
  %idx = zext i32 %i to i64
  %px = getelementptr inbounds float, ptr addrspace(1) %x, i64 %idx
  %v = load float, ptr addrspace(1) %px, align 4
  %a = call i32 @air.convert.s.i32.f.f32(float %v)
  %b = call i32 @air.convert.u.i32.f.f32(float %v)
  %ps = getelementptr inbounds i32, ptr addrspace(1) %s, i64 %idx
  store i32 %a, ptr addrspace(1) %ps, align 4
  %pu = getelementptr inbounds i32, ptr addrspace(1) %u, i64 %idx
  store i32 %b, ptr addrspace(1) %pu, align 4
  ret void
}
!air.kernel = !{!0}
!0 = !{ptr @to_int, !1, !2}
!1 = !{}
!2 = !{!3, !4, !5, !6}
!3 = !{i32 0, !"air.buffer", !"air.location_index", i32 0, i32 1, !"air.read", !"air.address_space", i32 1, !"air.arg_type_size", i32 4, !"air.arg_type_align_size", i32 4, !"air.arg_type_name", !"float", !"air.arg_name", !"x"}
!4 = !{i32 1, !"air.buffer", !"air.location_index", i32 1, i32 1, !"air.read_write", !"air.address_space", i32 1, !"air.arg_type_size", i32 4, !"air.arg_type_align_size", i32 4, !"air.arg_type_name", !"int", !"air.arg_name", !"s"}
!5 = !{i32 2, !"air.buffer", !"air.location_index", i32 2, i32 1, !"air.read_write", !"air.address_space", i32 1, !"air.arg_type_size", i32 4, !"air.arg_type_align_size", i32 4, !"air.arg_type_name", !"uint", !"air.arg_name", !"u"}
!6 = !{i32 3, !"air.thread_position_in_grid", !"air.arg_type_name", !"uint", !"air.arg_name", !"i"}
"""

# Simdgroup matrices as MLX's steel GEMM passes them: a <64 x float> whose
# elements 0 and 1 are the lane's thread_elements() (Apple's layout), loaded
# as <2 x float> and widened by shufflevector; D = A * B + C over 32 lanes.
_WIDEN = ("<64 x i32> <i32 0, i32 1" + ", i32 poison" * 62 + ">")
MATRIX = AXPBY.split("define void")[0] + r"""
declare <64 x float> @air.simdgroup_matrix_8x8_multiply_accumulate.v64f32.v64f32.v64f32.v64f32(<64 x float>, <64 x float>, <64 x float>)
define void @fragments_mma(ptr addrspace(1) %a, ptr addrspace(1) %b, ptr addrspace(1) %c, ptr addrspace(1) %d, i32 %lane) {
  %at = mul i32 %lane, 2
  %i = zext i32 %at to i64
  %pa = getelementptr inbounds float, ptr addrspace(1) %a, i64 %i
  %pb = getelementptr inbounds float, ptr addrspace(1) %b, i64 %i
  %pc = getelementptr inbounds float, ptr addrspace(1) %c, i64 %i
  %pd = getelementptr inbounds float, ptr addrspace(1) %d, i64 %i
  %a2 = load <2 x float>, ptr addrspace(1) %pa, align 8
  %b2 = load <2 x float>, ptr addrspace(1) %pb, align 8
  %c2 = load <2 x float>, ptr addrspace(1) %pc, align 8
  %av = shufflevector <2 x float> %a2, <2 x float> poison, WIDEN
  %bv = shufflevector <2 x float> %b2, <2 x float> poison, WIDEN
  %cv = shufflevector <2 x float> %c2, <2 x float> poison, WIDEN
  %dv = call <64 x float> @air.simdgroup_matrix_8x8_multiply_accumulate.v64f32.v64f32.v64f32.v64f32(<64 x float> %av, <64 x float> %bv, <64 x float> %cv)
  %d2 = shufflevector <64 x float> %dv, <64 x float> poison, <2 x i32> <i32 0, i32 1>
  store <2 x float> %d2, ptr addrspace(1) %pd, align 8
  ret void
}
!air.kernel = !{!0}
!0 = !{ptr @fragments_mma, !1, !2}
!1 = !{}
!2 = !{!3, !4, !5, !6, !7}
!3 = !{i32 0, !"air.buffer", !"air.location_index", i32 0, i32 1, !"air.read", !"air.address_space", i32 1, !"air.arg_type_size", i32 4, !"air.arg_type_align_size", i32 4, !"air.arg_type_name", !"float", !"air.arg_name", !"a"}
!4 = !{i32 1, !"air.buffer", !"air.location_index", i32 1, i32 1, !"air.read", !"air.address_space", i32 1, !"air.arg_type_size", i32 4, !"air.arg_type_align_size", i32 4, !"air.arg_type_name", !"float", !"air.arg_name", !"b"}
!5 = !{i32 2, !"air.buffer", !"air.location_index", i32 2, i32 1, !"air.read", !"air.address_space", i32 1, !"air.arg_type_size", i32 4, !"air.arg_type_align_size", i32 4, !"air.arg_type_name", !"float", !"air.arg_name", !"c"}
!6 = !{i32 3, !"air.buffer", !"air.location_index", i32 3, i32 1, !"air.read_write", !"air.address_space", i32 1, !"air.arg_type_size", i32 4, !"air.arg_type_align_size", i32 4, !"air.arg_type_name", !"float", !"air.arg_name", !"d"}
!7 = !{i32 4, !"air.thread_index_in_simdgroup", !"air.arg_type_name", !"uint", !"air.arg_name", !"lane"}
""".replace("WIDEN", _WIDEN)

# The same through Metal's simdgroup_load/store (llama.cpp and MLX's
# gated-delta kernels): a float A at column 4 of rows of 12, a half B read
# transposed from rows of 16 (a mixed multiply), C filled with 0.5.
MATRIX_LOAD_STORE = AXPBY.split("define void")[0] + r"""
declare <64 x float> @air.simdgroup_matrix_8x8_load.v64f32.p1f32(ptr addrspace(1), i64, <2 x i64>, i1)
declare <64 x half> @air.simdgroup_matrix_8x8_load.v64f16.p1f16(ptr addrspace(1), i64, <2 x i64>, i1)
declare <64 x float> @air.simdgroup_matrix_8x8_init_filled.v64f32.f32(float)
declare <64 x float> @air.simdgroup_matrix_8x8_multiply_accumulate.v64f32.v64f32.v64f16.v64f32(<64 x float>, <64 x half>, <64 x float>)
declare void @air.simdgroup_matrix_8x8_store.v64f32.p1f32(<64 x float>, ptr addrspace(1), i64, <2 x i64>, i1)
define void @load_mma_store(ptr addrspace(1) %a, ptr addrspace(1) %b, ptr addrspace(1) %d) {
  %av = call <64 x float> @air.simdgroup_matrix_8x8_load.v64f32.p1f32(ptr addrspace(1) %a, i64 12, <2 x i64> <i64 4, i64 0>, i1 false)
  %bv = call <64 x half> @air.simdgroup_matrix_8x8_load.v64f16.p1f16(ptr addrspace(1) %b, i64 16, <2 x i64> zeroinitializer, i1 true)
  %cv = call <64 x float> @air.simdgroup_matrix_8x8_init_filled.v64f32.f32(float 0.5)
  %dv = call <64 x float> @air.simdgroup_matrix_8x8_multiply_accumulate.v64f32.v64f32.v64f16.v64f32(<64 x float> %av, <64 x half> %bv, <64 x float> %cv)
  call void @air.simdgroup_matrix_8x8_store.v64f32.p1f32(<64 x float> %dv, ptr addrspace(1) %d, i64 8, <2 x i64> zeroinitializer, i1 false)
  ret void
}
!air.kernel = !{!0}
!0 = !{ptr @load_mma_store, !1, !2}
!1 = !{}
!2 = !{!3, !4, !5}
!3 = !{i32 0, !"air.buffer", !"air.location_index", i32 0, i32 1, !"air.read", !"air.address_space", i32 1, !"air.arg_type_size", i32 4, !"air.arg_type_align_size", i32 4, !"air.arg_type_name", !"float", !"air.arg_name", !"a"}
!4 = !{i32 1, !"air.buffer", !"air.location_index", i32 1, i32 1, !"air.read", !"air.address_space", i32 1, !"air.arg_type_size", i32 2, !"air.arg_type_align_size", i32 2, !"air.arg_type_name", !"half", !"air.arg_name", !"b"}
!5 = !{i32 2, !"air.buffer", !"air.location_index", i32 2, i32 1, !"air.read_write", !"air.address_space", i32 1, !"air.arg_type_size", i32 4, !"air.arg_type_align_size", i32 4, !"air.arg_type_name", !"float", !"air.arg_name", !"d"}
"""

# Intrinsics over vectors, half and bfloat values, as MLX's scans, sorts
# and reductions call them: a 64-bit value shuffled as <2 x i32>, a half
# simd_sum, dot, a bfloat conversion, a float atomic add, AIR's uniformity
# assertions and the simdgroup's width. One simdgroup of 32 threads.
LANES = AXPBY.split("define void")[0] + r"""
declare <2 x i32> @air.simd_shuffle_down.u.v2i32(<2 x i32>, i16)
declare half @air.simd_sum.f16(half)
declare float @air.dot.v4f32(<4 x float>, <4 x float>)
declare bfloat @air.convert.f.bf16.s.i32(i32)
declare float @air.atomic.global.add.f32(ptr addrspace(1), float, i32, i32, i1)
declare i1 @air.is_uniform.i32(i32)
declare i16 @air.get_simdgroup_size.i16()
declare float @air.simd_shuffle_and_fill_up.f32(float, float, i16, i16)
declare void @llvm.assume(i1)
define void @lanes(ptr addrspace(1) %wide, ptr addrspace(1) %h, ptr addrspace(1) %v4, ptr addrspace(1) %f, ptr addrspace(1) %bf, ptr addrspace(1) %acc, ptr addrspace(2) %n, i32 %lane) {
  %l = zext i32 %lane to i64
  %pw = getelementptr inbounds <2 x i32>, ptr addrspace(1) %wide, i64 %l
  %w = load <2 x i32>, ptr addrspace(1) %pw, align 8
  %ws = call <2 x i32> @air.simd_shuffle_down.u.v2i32(<2 x i32> %w, i16 1)
  store <2 x i32> %ws, ptr addrspace(1) %pw, align 8
  %ph = getelementptr inbounds half, ptr addrspace(1) %h, i64 %l
  %hv = load half, ptr addrspace(1) %ph, align 2
  %hs = call half @air.simd_sum.f16(half %hv)
  store half %hs, ptr addrspace(1) %ph, align 2
  %pv = getelementptr inbounds <4 x float>, ptr addrspace(1) %v4, i64 %l
  %vv = load <4 x float>, ptr addrspace(1) %pv, align 16
  %dot = call float @air.dot.v4f32(<4 x float> %vv, <4 x float> <float 1.0, float 2.0, float 3.0, float 4.0>)
  %width = call i16 @air.get_simdgroup_size.i16()
  %wf = uitofp i16 %width to float
  %fill = call float @air.simd_shuffle_and_fill_up.f32(float %dot, float %wf, i16 2, i16 32)
  %pf = getelementptr inbounds float, ptr addrspace(1) %f, i64 %l
  store float %fill, ptr addrspace(1) %pf, align 4
  %neg = sub i32 0, %lane
  %b = call bfloat @air.convert.f.bf16.s.i32(i32 %neg)
  %pb = getelementptr inbounds bfloat, ptr addrspace(1) %bf, i64 %l
  store bfloat %b, ptr addrspace(1) %pb, align 2
  %count = load i32, ptr addrspace(2) %n, align 4
  %u = call i1 @air.is_uniform.i32(i32 %count)
  call void @llvm.assume(i1 %u)
  %add = uitofp i32 %count to float
  %old = call float @air.atomic.global.add.f32(ptr addrspace(1) %acc, float %add, i32 0, i32 2, i1 true)
  ret void
}
!air.kernel = !{!0}
!0 = !{ptr @lanes, !1, !2}
!1 = !{}
!2 = !{!3, !4, !5, !6, !7, !8, !9, !10}
!3 = !{i32 0, !"air.buffer", !"air.location_index", i32 0, i32 1, !"air.read_write", !"air.address_space", i32 1, !"air.arg_type_size", i32 8, !"air.arg_type_align_size", i32 8, !"air.arg_type_name", !"ulong", !"air.arg_name", !"wide"}
!4 = !{i32 1, !"air.buffer", !"air.location_index", i32 1, i32 1, !"air.read_write", !"air.address_space", i32 1, !"air.arg_type_size", i32 2, !"air.arg_type_align_size", i32 2, !"air.arg_type_name", !"half", !"air.arg_name", !"h"}
!5 = !{i32 2, !"air.buffer", !"air.location_index", i32 2, i32 1, !"air.read", !"air.address_space", i32 1, !"air.arg_type_size", i32 16, !"air.arg_type_align_size", i32 16, !"air.arg_type_name", !"float4", !"air.arg_name", !"v4"}
!6 = !{i32 3, !"air.buffer", !"air.location_index", i32 3, i32 1, !"air.read_write", !"air.address_space", i32 1, !"air.arg_type_size", i32 4, !"air.arg_type_align_size", i32 4, !"air.arg_type_name", !"float", !"air.arg_name", !"f"}
!7 = !{i32 4, !"air.buffer", !"air.location_index", i32 4, i32 1, !"air.read_write", !"air.address_space", i32 1, !"air.arg_type_size", i32 2, !"air.arg_type_align_size", i32 2, !"air.arg_type_name", !"bfloat", !"air.arg_name", !"bf"}
!8 = !{i32 5, !"air.buffer", !"air.location_index", i32 5, i32 1, !"air.read_write", !"air.address_space", i32 1, !"air.arg_type_size", i32 4, !"air.arg_type_align_size", i32 4, !"air.arg_type_name", !"float", !"air.arg_name", !"acc"}
!9 = !{i32 6, !"air.buffer", !"air.buffer_size", i32 4, !"air.location_index", i32 6, i32 1, !"air.read", !"air.address_space", i32 2, !"air.arg_type_size", i32 4, !"air.arg_type_align_size", i32 4, !"air.arg_type_name", !"uint", !"air.arg_name", !"n"}
!10 = !{i32 7, !"air.thread_index_in_simdgroup", !"air.arg_type_name", !"uint", !"air.arg_name", !"lane"}
"""
