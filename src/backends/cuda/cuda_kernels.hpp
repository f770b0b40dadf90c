// The CUDA backend's tensor kernels: small CUDA C++ sources generated per
// operation and dtype, compiled once with NVRTC for the device (cached on
// disk), launched on a 1-D grid with a grid-stride loop.
#pragma once

#include <map>
#include <mutex>
#include <string>

#include "backends/cuda/driver_api.hpp"
#include "runtime/device_impl.hpp"

namespace bronze::cuda {

// Shape and strides (elements) of up to three operands, passed by value.
struct Geometry {
  int nd = 0;
  long long n = 0;
  long long shape[8] = {};
  long long stride[3][8] = {};
};
// Throws NotSupportedError over 8 dimensions.
Geometry geometry(const std::vector<const runtime::View*>& views);

class KernelCache {
 public:
  explicit KernelCache(int arch) : arch_(arch) {}
  int arch() const { return arch_; }
  // The function "k" of `source`; the device's context must be current.
  CUfunction get(const std::string& source, bool exact_fp = false);

 private:
  int arch_;
  std::mutex mu_;
  std::map<std::string, CUfunction> fns_;
};

void launch_1d(CUfunction f, long long n, CUstream s, void** args);

std::string copy_source(DType dst, DType src);
std::string binary_source(DType t, runtime::BinaryOp op, bool scalar_operand);
std::string arange_source(DType t);
std::string random_source(DType t, runtime::RandomKind kind, bool wide);

}  // namespace bronze::cuda
