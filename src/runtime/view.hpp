// What a backend kernel sees of a tensor: address, dtype, shape and strides,
// plus, for memory owned outside bronze, a reference held while the op is queued.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "bronze/dtype.hpp"

namespace bronze::runtime {

inline std::vector<std::int64_t> contiguous_strides(const std::vector<std::int64_t>& shape) {
  std::vector<std::int64_t> st(shape.size());
  std::int64_t acc = 1;
  for (std::size_t i = shape.size(); i-- > 0;) {
    st[i] = acc;
    acc *= shape[i];
  }
  return st;
}

struct View {
  void* data = nullptr;
  DType dtype = DType::Float32;
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> strides;  // elements; 0 for broadcast dims
  std::shared_ptr<void> keepalive;  // external memory held until the op ran (see queued_use)

  std::int64_t numel() const {
    std::int64_t n = 1;
    for (auto s : shape) n *= s;
    return n;
  }
  bool contiguous() const {
    std::int64_t expect = 1;
    for (std::size_t i = shape.size(); i-- > 0;) {
      if (shape[i] != 1 && strides[i] != expect) return false;
      expect *= shape[i];
    }
    return true;
  }
};

// How a 2-D operand is laid out for a BLAS: row-major with a leading
// dimension, or transposed (column-major storage). The tensor layer copies
// any other layout first.
struct MatrixLayout {
  bool trans;
  int ld;
};
inline MatrixLayout matrix_layout(const View& v) {
  if (v.strides[1] == 1 || v.shape[1] == 1)
    return {false, static_cast<int>(v.strides[0] > v.shape[1] ? v.strides[0] : v.shape[1])};
  return {true, static_cast<int>(v.strides[1] > v.shape[0] ? v.strides[1] : v.shape[0])};
}

}  // namespace bronze::runtime
