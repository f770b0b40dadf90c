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

}  // namespace bronze::runtime
