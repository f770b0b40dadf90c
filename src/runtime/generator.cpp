#include "runtime/generator.hpp"

#include <cstring>

#include "bronze/error.hpp"

namespace bronze::runtime {
namespace {
// State layout (44 bytes, as torch.mps's): 7 little-endian u32 words, then the
// seed and the offset as u64. Word 0 tags the format so foreign bytes are
// refused; words 1-2 are the Philox key, 3-6 the next counter.
constexpr std::uint32_t kStateTag = 0x50484c31;  // "PHL1"

void put32(std::uint8_t* p, std::uint32_t v) { std::memcpy(p, &v, 4); }
void put64(std::uint8_t* p, std::uint64_t v) { std::memcpy(p, &v, 8); }
std::uint32_t get32(const std::uint8_t* p) {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
std::uint64_t get64(const std::uint8_t* p) {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
}  // namespace

void Generator::manual_seed(std::uint64_t seed) {
  std::lock_guard<std::mutex> g(mu_);
  seed_ = seed;
  offset_ = 0;
}

std::uint64_t Generator::initial_seed() const {
  std::lock_guard<std::mutex> g(mu_);
  return seed_;
}

PhiloxState Generator::reserve(std::uint64_t n, unsigned per_block) {
  std::lock_guard<std::mutex> g(mu_);
  PhiloxState s{seed_, offset_};
  offset_ += (n + per_block - 1) / per_block;
  return s;
}

std::vector<std::uint8_t> Generator::get_state() const {
  std::lock_guard<std::mutex> g(mu_);
  std::vector<std::uint8_t> out(kRngStateSize, 0);
  put32(&out[0], kStateTag);
  put32(&out[4], static_cast<std::uint32_t>(seed_));
  put32(&out[8], static_cast<std::uint32_t>(seed_ >> 32));
  put32(&out[12], static_cast<std::uint32_t>(offset_));
  put32(&out[16], static_cast<std::uint32_t>(offset_ >> 32));
  // words 5-6: counter words the mapping keeps at zero
  put64(&out[28], seed_);
  put64(&out[36], offset_);
  return out;
}

void Generator::set_state(const std::vector<std::uint8_t>& state) {
  if (state.size() != kRngStateSize)
    throw Error("RNG state must be " + std::to_string(kRngStateSize) + " bytes, got " +
                std::to_string(state.size()));
  if (get32(&state[0]) != kStateTag) throw Error("RNG state was not made by bronze's get_rng_state");
  std::uint64_t seed = get64(&state[28]);
  std::uint64_t offset = get64(&state[36]);
  std::uint64_t key = get32(&state[4]) | (static_cast<std::uint64_t>(get32(&state[8])) << 32);
  if (key != seed) throw Error("RNG state is inconsistent (key does not match seed)");
  std::lock_guard<std::mutex> g(mu_);
  seed_ = seed;
  offset_ = offset;
}

}  // namespace bronze::runtime
