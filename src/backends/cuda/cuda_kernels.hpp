// The CUDA backend's tensor kernels: small CUDA C++ sources generated per
// operation and dtype, compiled once with NVRTC for the device (cached on
// disk), launched on a 1-D grid with a grid-stride loop.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

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

// A generated source (with the headers it may include) as a cubin for sm_<arch>;
// exact_fp: no FMA contraction, for kernels that must round like the CPU.
std::vector<char> compile_tensor_kernel(const std::string& source, int arch, bool exact_fp);

class KernelCache {
 public:
  KernelCache(int arch, int multiprocessors) : arch_(arch), multiprocessors_(multiprocessors) {}
  int arch() const { return arch_; }
  // The 256-thread blocks of f that the device holds at once (one wave):
  // compute-bound grid-stride loops launch a few waves of them.
  long long resident_blocks(CUfunction f);
  // Which generated kernel (kind and the arguments of its *_source), packed
  // so that a launch finds its function without building the source.
  enum Kind : unsigned { kFill, kCopy, kArange, kRandom, kBinary };
  static std::uint64_t key(Kind kind, unsigned a = 0, unsigned b = 0, unsigned c = 0, unsigned d = 0) {
    return kind | a << 8 | b << 16 | static_cast<std::uint64_t>(c) << 24 | static_cast<std::uint64_t>(d) << 32;
  }
  // The function "k" of the source make() returns, compiled on the key's
  // first use; the device's context must be current.
  template <typename Make>
  CUfunction get(std::uint64_t key, Make&& make, bool exact_fp = false) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = fns_.find(key);
      if (it != fns_.end()) return it->second;
    }
    return build(key, make(), exact_fp);
  }
  // Launches f over n work items (threads of its grid-stride loop) in at
  // most max_blocks blocks of 256. Memory-bound kernels stream best with a
  // block per 256 items (a + b: 4110 GB/s vs 3854 with two waves of resident
  // blocks); compute-bound ones with a few waves of resident_blocks(f) (Philox:
  // 69 us vs 91 us).
  void launch_1d(CUfunction f, long long n, CUstream s, void** args, long long max_blocks = 65536) const;

 private:
  CUfunction build(std::uint64_t key, const std::string& source, bool exact_fp);

  int arch_, multiprocessors_;
  std::mutex mu_;
  std::unordered_map<std::uint64_t, CUfunction> fns_;
  std::unordered_map<CUfunction, long long> resident_;  // filled by resident_blocks()
};

std::string copy_source(DType dst, DType src);
// vectorized: every operand contiguous and 16-byte aligned (128-bit accesses).
std::string binary_source(DType t, runtime::BinaryOp op, bool scalar_operand, bool vectorized);
std::string fill_source(unsigned bytes);  // a 1-, 2-, 4- or 8-byte pattern into every element, any strides
std::string arange_source(DType t, bool integer);  // integer: int64 start and step
// standard: (mean 0, std 1) normals or [0, 1) uniforms, stored as drawn (RandomParams::standard()).
std::string random_source(DType t, runtime::RandomKind kind, bool wide, bool standard);

}  // namespace bronze::cuda
