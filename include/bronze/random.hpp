// The default random generators: Philox4x32-10, one per device, with state
// (seed, offset). The same seed gives the same numbers on every backend.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "bronze/device.hpp"

namespace bronze {

constexpr std::uint64_t kDefaultSeed = 67280421310721ull;  // torch's default
constexpr std::size_t kRngStateSize = 44;

// Seeds the generator of every device.
void manual_seed(std::uint64_t seed);
// Seeds every device's generator from a non-deterministic source; returns it.
std::uint64_t seed();
std::uint64_t initial_seed(std::optional<Device> d = std::nullopt);
// 44 bytes: format word, Philox key and counter words, seed, offset.
std::vector<std::uint8_t> get_rng_state(std::optional<Device> d = std::nullopt);
// Throws Error when the bytes are not a bronze RNG state (wrong size/format).
void set_rng_state(const std::vector<std::uint8_t>& state, std::optional<Device> d = std::nullopt);

}  // namespace bronze
