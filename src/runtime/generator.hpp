// A device's default random generator: a Philox key (the seed) and a counter
// offset that each random op advances by the blocks it consumed.
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

#include "bronze/random.hpp"

namespace bronze::runtime {

struct PhiloxState {
  std::uint64_t seed = 0;
  std::uint64_t offset = 0;  // first counter block of the op
};

class Generator {
 public:
  explicit Generator(std::uint64_t seed = kDefaultSeed) : seed_(seed) {}

  void manual_seed(std::uint64_t seed);
  std::uint64_t initial_seed() const;
  // Returns the state for an op that draws `n` values, `per_block` a block,
  // and advances the offset past them.
  PhiloxState reserve(std::uint64_t n, unsigned per_block);

  std::vector<std::uint8_t> get_state() const;
  void set_state(const std::vector<std::uint8_t>& state);

 private:
  mutable std::mutex mu_;
  std::uint64_t seed_;
  std::uint64_t offset_ = 0;
};

}  // namespace bronze::runtime
