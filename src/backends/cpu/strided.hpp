// Element loops over up to three strided operands of one shape, with a fast
// path when all are contiguous. Offsets are in elements.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "runtime/view.hpp"

namespace bronze::cpu {

template <std::size_t N>
struct StridedIter {
  const std::vector<std::int64_t>& shape;
  std::array<const std::vector<std::int64_t>*, N> strides;

  bool all_contiguous() const {
    for (auto* s : strides) {
      std::int64_t expect = 1;
      for (std::size_t i = shape.size(); i-- > 0;) {
        if (shape[i] != 1 && (*s)[i] != expect) return false;
        expect *= shape[i];
      }
    }
    return true;
  }

  // f(i, offsets) for linear indices [begin, end), odometer-style.
  template <typename F>
  void run(std::int64_t begin, std::int64_t end, F&& f) const {
    const std::size_t nd = shape.size();
    std::array<std::int64_t, N> off{};
    std::vector<std::int64_t> idx(nd, 0);
    std::int64_t rem = begin;
    for (std::size_t d = nd; d-- > 0;) {
      idx[d] = rem % shape[d];
      rem /= shape[d];
      for (std::size_t k = 0; k < N; ++k) off[k] += idx[d] * (*strides[k])[d];
    }
    for (std::int64_t i = begin; i < end; ++i) {
      f(i, off);
      for (std::size_t d = nd; d-- > 0;) {
        ++idx[d];
        for (std::size_t k = 0; k < N; ++k) off[k] += (*strides[k])[d];
        if (idx[d] < shape[d]) break;
        for (std::size_t k = 0; k < N; ++k) off[k] -= idx[d] * (*strides[k])[d];
        idx[d] = 0;
      }
    }
  }
};

}  // namespace bronze::cpu
