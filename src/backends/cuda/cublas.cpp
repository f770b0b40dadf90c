#include "backends/cuda/cublas.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <vector>

#include "backends/cuda/toolkit_paths.hpp"
#include "bronze/error.hpp"

namespace bronze::cuda {
namespace {
using Handle = struct cublasContext*;
constexpr int kOpN = 0, kOpT = 1;
constexpr int kR16F = 2, kR16BF = 14, kR32F = 0, kR64F = 1;
constexpr int kCompute32F = 68, kCompute64F = 70;
constexpr int kGemmDefault = -1;

struct Lib {
  int (*create)(Handle*) = nullptr;
  int (*set_stream)(Handle, CUstream) = nullptr;
  int (*gemm_ex)(Handle, int, int, int, int, int, const void*, const void*, int, int, const void*, int, int,
                 const void*, void*, int, int, int, int) = nullptr;
  std::string status;
};

const Lib& lib() {
  static const Lib l = [] {
    Lib r;
    for (const auto& name : toolkit_library_candidates("BRONZE_CUBLAS_LIBRARY", "libcublas")) {
      void* h = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!h) continue;
      r.create = reinterpret_cast<decltype(r.create)>(dlsym(h, "cublasCreate_v2"));
      r.set_stream = reinterpret_cast<decltype(r.set_stream)>(dlsym(h, "cublasSetStream_v2"));
      r.gemm_ex = reinterpret_cast<decltype(r.gemm_ex)>(dlsym(h, "cublasGemmEx"));
      if (r.create && r.set_stream && r.gemm_ex) {
        r.status = "cuBLAS (" + name + ")";
        return r;
      }
    }
    r.create = nullptr;
    r.status = toolkit_library_missing("BRONZE_CUBLAS_LIBRARY", "cuBLAS",
                                       "no cuBLAS library found (libcublas.so.13/.12 on the library path, "
                                       "pip's nvidia/*/lib on sys.path, $CUDA_HOME/lib64, /usr/local/cuda/lib64, "
                                       "or $BRONZE_CUBLAS_LIBRARY)");
    return r;
  }();
  return l;
}

// One handle per device, created with the device's (primary) context
// current, which cuBLAS binds it to.
Handle handle_for(int device) {
  static std::mutex mu;
  static std::map<int, Handle> handles;
  std::lock_guard<std::mutex> g(mu);
  Handle& h = handles[device];
  if (!h && lib().create(&h) != 0) throw DeviceError("cublasCreate failed");
  return h;
}
}  // namespace

std::string cublas_status() { return lib().status; }

void gemm(int device, CUstream s, const runtime::View& out, const runtime::View& a, const runtime::View& b) {
  const Lib& l = lib();
  if (!l.create) throw NotSupportedError("mm on CUDA needs cuBLAS: " + l.status);
  Handle h = handle_for(device);
  if (l.set_stream(h, s) != 0) throw DeviceError("cublasSetStream failed");
  // cuBLAS sizes are int: mm refuses larger ones; never narrow them here.
  for (const runtime::View* v : {&a, &b})
    for (int d = 0; d < 2; ++d)
      if (v->shape[d] > INT32_MAX || v->strides[d] > INT32_MAX)
        throw ValueError("matmul: a size or stride over 2^31 - 1, the most cuBLAS takes");
  const int m = static_cast<int>(a.shape[0]), k = static_cast<int>(a.shape[1]), n = static_cast<int>(b.shape[1]);
  runtime::MatrixLayout la = runtime::matrix_layout(a), lb = runtime::matrix_layout(b);
  int type = 0, compute = kCompute32F;
  switch (out.dtype) {
    case DType::Float32: type = kR32F; break;
    case DType::Float64: type = kR64F; compute = kCompute64F; break;
    case DType::Float16: type = kR16F; break;
    case DType::BFloat16: type = kR16BF; break;
    default: throw TypeError("mm needs a floating dtype");
  }
  // Row-major C = A B is column-major C^T = B^T A^T: swap the operands; a
  // row-major operand is its own transpose in column-major terms.
  float alpha32 = 1.0f, beta32 = 0.0f;
  double alpha64 = 1.0, beta64 = 0.0;
  const void* alpha = compute == kCompute64F ? static_cast<const void*>(&alpha64) : &alpha32;
  const void* beta = compute == kCompute64F ? static_cast<const void*>(&beta64) : &beta32;
  int rc = l.gemm_ex(h, lb.trans ? kOpT : kOpN, la.trans ? kOpT : kOpN, n, m, k, alpha, b.data, type, lb.ld, a.data,
                     type, la.ld, beta, out.data, type, n, compute, kGemmDefault);
  if (rc != 0) throw DeviceError("cublasGemmEx failed with status " + std::to_string(rc));
}

}  // namespace bronze::cuda
