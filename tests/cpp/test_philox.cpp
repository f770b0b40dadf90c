#include "runtime/philox.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "bronze/bronze.hpp"
#include "runtime/generator.hpp"

using bronze::philox::philox4x32_10;

// Known-answer vectors of Random123 (kat_vectors, philox4x32 10).
TEST(Philox, KnownAnswerZeros) {
  auto r = philox4x32_10(0, 0, 0, 0, 0, 0);
  EXPECT_EQ(r.v[0], 0x6627e8d5u);
  EXPECT_EQ(r.v[1], 0xe169c58du);
  EXPECT_EQ(r.v[2], 0xbc57ac4cu);
  EXPECT_EQ(r.v[3], 0x9b00dbd8u);
}

TEST(Philox, KnownAnswerOnes) {
  auto r = philox4x32_10(~0u, ~0u, ~0u, ~0u, ~0u, ~0u);
  EXPECT_EQ(r.v[0], 0x408f276du);
  EXPECT_EQ(r.v[1], 0x41c83b0eu);
  EXPECT_EQ(r.v[2], 0xa20bc7c6u);
  EXPECT_EQ(r.v[3], 0x6d5451fdu);
}

TEST(Philox, KnownAnswerPi) {
  auto r = philox4x32_10(0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0);
  EXPECT_EQ(r.v[0], 0xd16cfe09u);
  EXPECT_EQ(r.v[1], 0x94fdccebu);
  EXPECT_EQ(r.v[2], 0x5001e420u);
  EXPECT_EQ(r.v[3], 0x24126ea1u);
}

TEST(Philox, UniformRange) {
  EXPECT_EQ(bronze::philox::uniform_f32(0), 0.0f);
  EXPECT_LT(bronze::philox::uniform_f32(~0u), 1.0f);
  EXPECT_GT(bronze::philox::uniform_f32_open0(0), 0.0f);
  EXPECT_EQ(bronze::philox::uniform_f32_open0(~0u), 1.0f);
  EXPECT_LT(bronze::philox::uniform_f64(~0u, ~0u), 1.0);
}

TEST(Generator, ReserveAdvancesByBlocks) {
  bronze::runtime::Generator g(42);
  auto a = g.reserve(10, 4);  // 3 blocks
  auto b = g.reserve(1, 4);
  EXPECT_EQ(a.seed, 42u);
  EXPECT_EQ(a.offset, 0u);
  EXPECT_EQ(b.offset, 3u);
  EXPECT_EQ(g.reserve(3, 2).offset, 4u);
}

TEST(Generator, StateRoundTripAndValidation) {
  bronze::runtime::Generator g(7);
  g.reserve(100, 4);
  auto st = g.get_state();
  ASSERT_EQ(st.size(), bronze::kRngStateSize);
  bronze::runtime::Generator h;
  h.set_state(st);
  EXPECT_EQ(h.initial_seed(), 7u);
  EXPECT_EQ(h.reserve(1, 4).offset, 25u);
  auto bad = st;
  bad.pop_back();
  EXPECT_THROW(h.set_state(bad), bronze::Error);
  bad = st;
  bad[0] ^= 1;  // not a bronze state
  EXPECT_THROW(h.set_state(bad), bronze::Error);
}

// The tensor RNG follows the documented mapping element by element.
TEST(Generator, TensorUniformMatchesMapping) {
  bronze::manual_seed(1234);
  auto t = bronze::rand({10});
  auto v = t.to_double_vector();
  for (int i = 0; i < 10; ++i) {
    auto blk = bronze::philox::block(1234, static_cast<unsigned long long>(i / 4));
    EXPECT_EQ(static_cast<float>(v[i]), bronze::philox::uniform_f32(blk.v[i % 4])) << i;
  }
  // The next op starts after the 3 blocks the first consumed.
  auto u = bronze::rand({1}).to_double_vector();
  EXPECT_EQ(static_cast<float>(u[0]), bronze::philox::uniform_f32(bronze::philox::block(1234, 3).v[0]));
}

TEST(Generator, NormalMoments) {
  bronze::manual_seed(5);
  auto v = bronze::randn({200000}).to_double_vector();
  double mean = 0, var = 0;
  for (double x : v) mean += x;
  mean /= v.size();
  for (double x : v) var += (x - mean) * (x - mean);
  var /= v.size();
  EXPECT_NEAR(mean, 0.0, 0.01);
  EXPECT_NEAR(var, 1.0, 0.01);
}

// The float Box-Muller pieces against long double: every k at the edges and
// quadrant boundaries plus a stride through all 2^24 inputs.
TEST(Philox, FloatNormalTransformIsAccurate) {
  // |got - want| in units of the last place of a float of magnitude `scale`.
  auto ulps = [](float got, long double want, long double scale) {
    long double ulp = std::ldexp(1.0L, std::ilogb(static_cast<float>(scale)) - 23);
    return static_cast<double>(std::fabs(static_cast<long double>(got) - want) / ulp);
  };
  std::vector<unsigned> ks = {1, 2, 3, (1u << 24) - 1, 1u << 24, 11863283, 11863284};
  for (unsigned q = 0; q <= 4; ++q)
    for (int d = -2; d <= 2; ++d) ks.push_back(static_cast<unsigned>(static_cast<int>(q << 22) + d));
  for (unsigned k = 5; k < (1u << 24); k += 997) ks.push_back(k);
  const long double two_pi = 6.283185307179586476925286766559L;
  double worst_log = 0, worst_trig = 0;
  for (unsigned k : ks) {
    if (k >= 1 && k <= (1u << 24)) {
      long double want = std::log(static_cast<long double>(k) / 16777216.0L);
      float got = bronze::philox::log_uniform24(k);
      if (k == (1u << 24)) EXPECT_EQ(got, 0.0f);
      else worst_log = std::max(worst_log, ulps(got, want, want));
      EXPECT_LE(got, 0.0f) << k;
    }
    if (k < (1u << 24)) {
      float s, c;
      bronze::philox::sincos_turn24(k, &s, &c);
      long double a = two_pi * static_cast<long double>(k) / 16777216.0L;
      // Against the larger of the two: near a zero, absolute error counts.
      long double scale = std::max(std::fabs(std::sin(a)), std::fabs(std::cos(a)));
      worst_trig = std::max({worst_trig, ulps(s, std::sin(a), scale), ulps(c, std::cos(a), scale)});
      EXPECT_LE(std::fabs(s), 1.0f);
      EXPECT_LE(std::fabs(c), 1.0f);
    }
  }
  EXPECT_LE(worst_log, 3.0);   // 2.25 measured
  EXPECT_LE(worst_trig, 2.0);  // 1.48 measured
}

TEST(Generator, TensorNormalMatchesMapping) {
  bronze::manual_seed(99);
  auto v = bronze::randn({6}).to_double_vector();
  for (int i = 0; i < 6; ++i) {
    auto blk = bronze::philox::block(99, static_cast<unsigned long long>(i / 4));
    float n[2];
    bronze::philox::normal_pair_f32(blk.v[i % 4 & 2], blk.v[(i % 4 & 2) + 1], &n[0], &n[1]);
    EXPECT_EQ(static_cast<float>(v[i]), n[i % 2]) << i;
  }
}
