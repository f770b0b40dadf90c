#include "bronze/random.hpp"

#include <random>

#include "runtime/device_impl.hpp"

namespace bronze {

void manual_seed(std::uint64_t s) {
  for (const Device& d : devices()) runtime::device_impl(d).generator().manual_seed(s);
}

std::uint64_t seed() {
  std::random_device rd;
  std::uint64_t s = (static_cast<std::uint64_t>(rd()) << 32) | rd();
  manual_seed(s);
  return s;
}

std::uint64_t initial_seed(std::optional<Device> d) {
  return runtime::device_impl(runtime::resolve(d)).generator().initial_seed();
}

std::vector<std::uint8_t> get_rng_state(std::optional<Device> d) {
  return runtime::device_impl(runtime::resolve(d)).generator().get_state();
}

void set_rng_state(const std::vector<std::uint8_t>& state, std::optional<Device> d) {
  runtime::device_impl(runtime::resolve(d)).generator().set_state(state);
}

}  // namespace bronze
