// The CPU backend's tensor kernels. Each runs synchronously on the calling
// thread (a stream worker), splitting its elements across the thread pool.
#pragma once

#include "bronze/scalar.hpp"
#include "runtime/device_impl.hpp"
#include "runtime/view.hpp"

namespace bronze::cpu::kernels {

using runtime::View;

void fill(const View& dst, Scalar v);
void copy(const View& dst, const View& src);
void binary(runtime::BinaryOp op, const View& out, const View& a, const View& b);
void binary_scalar(runtime::BinaryOp op, const View& out, const View& a, Scalar b);
void arange(const View& out, Scalar start, Scalar step);
void random(const View& out, const runtime::RandomParams& p);
void matmul(const View& out, const View& a, const View& b);
// Runs a kernel the CPU JIT compiled, its threadgroups spread over the pool.
void run_jit_kernel(const runtime::KernelLaunch& l);

}  // namespace bronze::cpu::kernels
