#include "runtime/philox.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
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

namespace {
// |got - want| in units of the last place of an F of magnitude `want`.
template <typename F>
double ulps(F got, long double want) {
  long double ulp = std::ldexp(1.0L, std::ilogb(static_cast<F>(want)) - (std::numeric_limits<F>::digits - 1));
  return static_cast<double>(std::fabs(static_cast<long double>(got) - want) / ulp);
}
}  // namespace

// The float pieces of the normal sampler against long double: log at every
// edge plus a stride through all 2^24 inputs, exp through its whole domain.
TEST(Philox, FloatLogAndExpAreAccurate) {
  std::vector<unsigned> ks = {1, 2, 3, (1u << 24) - 1, 11863283, 11863284};
  for (unsigned k = 5; k < (1u << 24); k += 997) ks.push_back(k);
  double worst_log = 0, worst_exp = 0;
  EXPECT_EQ(bronze::philox::log_uniform24(1u << 24), 0.0f);
  for (unsigned k : ks) {
    float got = bronze::philox::log_uniform24(k);
    worst_log = std::max(worst_log, ulps(got, std::log(static_cast<long double>(k) / 16777216.0L)));
    EXPECT_LT(got, 0.0f) << k;
  }
  EXPECT_EQ(bronze::philox::exp_nonpositive(0.0f), 1.0f);
  for (float t = -20.0f; t < 0.0f; t += 0.00123f)
    worst_exp = std::max(worst_exp, ulps(bronze::philox::exp_nonpositive(t), std::exp(static_cast<long double>(t))));
  EXPECT_LE(worst_log, 3.0);  // 2.25 measured
  EXPECT_LE(worst_exp, 2.0);  // 1.07 measured
  for (unsigned m : {0u, 1u, 12345u, (1u << 23) - 1}) EXPECT_EQ(bronze::philox::f32_of_u23(m), static_cast<float>(m));
}

// The same for the double pieces (long double has 11 bits to spare on x86).
TEST(Philox, DoubleLogAndExpAreAccurate) {
  using bronze::philox::u64;
  const u64 top = 1ull << 53;
  std::vector<u64> ks = {1, 2, 3, top - 1, 6369051672525772ull, 6369051672525773ull};
  for (u64 k = 5; k < top; k += 0x1234567890ull) ks.push_back(k);
  double worst_log = 0, worst_exp = 0;
  EXPECT_EQ(bronze::philox::log_uniform53(top), 0.0);
  for (u64 k : ks) {
    double got = bronze::philox::log_uniform53(k);
    worst_log = std::max(worst_log, ulps(got, std::log(static_cast<long double>(k) / static_cast<long double>(top))));
    EXPECT_LT(got, 0.0) << k;
  }
  EXPECT_EQ(bronze::philox::exp_nonpositive(0.0), 1.0);
  for (double t = -40.0; t < 0.0; t += 0.000731)
    worst_exp = std::max(worst_exp, ulps(bronze::philox::exp_nonpositive(t), std::exp(static_cast<long double>(t))));
  EXPECT_LE(worst_log, 3.0);  // 2.66 measured
  EXPECT_LE(worst_exp, 2.0);  // 1.14 measured
  EXPECT_EQ(bronze::philox::f64_of_u52((1ull << 52) - 1), 4503599627370495.0);
}

// The frozen tables are the ziggurat they claim to be: every layer has the
// same area, and the rectangle test only accepts points under the curve.
TEST(Ziggurat, TablesDescribeEqualAreaLayersUnderTheCurve) {
  using namespace bronze::philox;
  const double v = kZigLayers[0].w * 8388608.0 * kZigF[1];  // base: x0 f(r)
  for (int i = 1; i < 256; ++i) {
    const double x = kZigLayers[i].w * 8388608.0, x_next = i < 255 ? kZigLayers[i + 1].w * 8388608.0 : 0.0;
    EXPECT_NEAR(x * (kZigF[i + 1] - kZigF[i]) / v, 1.0, 5e-5) << i;  // f rounded to float
    EXPECT_NEAR(kZigF[i], std::exp(-0.5 * x * x), 1e-7) << i;
    if (kZigLayers[i].k > 0) EXPECT_LT(f32_of_u23(kZigLayers[i].k - 1) * kZigLayers[i].w, x_next) << i;
    // The double layers are the same ziggurat, more precisely.
    EXPECT_NEAR(kZigLayers64[i].w * 4503599627370496.0 / x, 1.0, 1e-7) << i;
    const double x64_next = i < 255 ? kZigLayers64[i + 1].w * 4503599627370496.0 : 0.0;
    if (kZigLayers64[i].k > 0) EXPECT_LT(f64_of_u52(kZigLayers64[i].k - 1) * kZigLayers64[i].w, x64_next) << i;
    const double x64 = kZigLayers64[i].w * 4503599627370496.0;
    EXPECT_NEAR(kZigF64[i] / std::exp(-0.5 * x64 * x64), 1.0, 1e-14) << i;
  }
  EXPECT_LT(f32_of_u23(kZigLayers[0].k - 1) * kZigLayers[0].w, kZigR);
  EXPECT_EQ(kZigLayers[255].k, 0u);  // the top layer always takes the wedge test
  EXPECT_EQ(kZigLayers64[255].k, 0u);
}

// Normals straight from the mapping: the distribution function within the
// Kolmogorov-Smirnov bound, the tail (|z| > r, the rarest path) as often as
// it should be, and a word that fails the base layer's test lands in the tail.
TEST(Ziggurat, NormalsFollowTheDistribution) {
  using namespace bronze::philox;
  const int n = 1 << 22;
  std::vector<float> z(n);
  for (int i = 0; i < n; ++i) {
    const U32x4 r = block(2024, static_cast<u64>(i / 4));
    z[i] = normal<float>(r.v[i % 4], 2024, static_cast<u64>(i / 4), static_cast<u32>(i % 4));
  }
  std::sort(z.begin(), z.end());
  double worst = 0;
  for (int i = 0; i < n; i += 97) {
    const double cdf = 0.5 * std::erfc(-z[i] / std::sqrt(2.0));
    worst = std::max({worst, std::fabs(cdf - static_cast<double>(i) / n), std::fabs(cdf - static_cast<double>(i + 1) / n)});
  }
  EXPECT_LT(worst, 1.95 / std::sqrt(static_cast<double>(n)));  // KS at the 0.1% level
  const double tail = static_cast<double>(std::count_if(z.begin(), z.end(), [](float x) { return std::fabs(x) > kZigR; }));
  const double expected = n * std::erfc(kZigR / std::sqrt(2.0));  // 2.58e-4 of them
  EXPECT_NEAR(tail, expected, 5 * std::sqrt(expected));
  EXPECT_GT(z.back(), 4.5f);
  EXPECT_LT(z.front(), -4.5f);

  const u32 base_layer_outside = 0x807fffffu;  // negative, layer 0, m at the top: past the rectangle
  for (u64 c = 0; c < 50; ++c) EXPECT_LE(normal<float>(base_layer_outside, 7, c, 1), -kZigR);
}

TEST(Ziggurat, DoubleNormalsFollowTheDistribution) {
  using namespace bronze::philox;
  const int n = 1 << 21;
  std::vector<double> z(n);
  for (int i = 0; i < n; ++i) {
    const U32x4 r = block(77, static_cast<u64>(i / 2));
    const u32 l = static_cast<u32>(i % 2);
    z[i] = normal<double>(word64(r.v[2 * l], r.v[2 * l + 1]), 77, static_cast<u64>(i / 2), l);
  }
  std::sort(z.begin(), z.end());
  double worst = 0;
  for (int i = 0; i < n; i += 97) {
    const double cdf = 0.5 * std::erfc(-z[i] / std::sqrt(2.0));
    worst = std::max({worst, std::fabs(cdf - static_cast<double>(i) / n), std::fabs(cdf - static_cast<double>(i + 1) / n)});
  }
  EXPECT_LT(worst, 1.95 / std::sqrt(static_cast<double>(n)));
  const double tail = static_cast<double>(std::count_if(z.begin(), z.end(), [](double x) { return std::fabs(x) > kZigR64; }));
  const double expected = n * std::erfc(kZigR64 / std::sqrt(2.0));
  EXPECT_NEAR(tail, expected, 5 * std::sqrt(expected));
  for (u64 c = 0; c < 50; ++c) EXPECT_GE(normal<double>((1ull << 52) - 1, 7, c, 1), kZigR64);  // positive
}

TEST(Generator, TensorNormalMatchesMapping) {
  bronze::manual_seed(99);
  auto v = bronze::randn({6}).to_double_vector();
  for (int i = 0; i < 6; ++i) {
    auto blk = bronze::philox::block(99, static_cast<unsigned long long>(i / 4));
    float want = bronze::philox::normal<float>(blk.v[i % 4], 99,
                                            static_cast<unsigned long long>(i / 4), static_cast<unsigned>(i % 4));
    EXPECT_EQ(static_cast<float>(v[i]), want) << i;
  }
  // Other (mean, std): mean + std * z in float, from the same stream.
  bronze::manual_seed(99);
  auto shifted = bronze::empty({6}).normal_(2.0, 0.5).to_double_vector();
  for (int i = 0; i < 6; ++i) EXPECT_EQ(static_cast<float>(shifted[i]), 2.0f + 0.5f * static_cast<float>(v[i])) << i;
  bronze::manual_seed(99);
  auto d = bronze::randn({3}, bronze::DType::Float64).to_double_vector();
  for (int i = 0; i < 3; ++i) {
    auto blk = bronze::philox::block(99, static_cast<unsigned long long>(i / 2));
    const unsigned l = static_cast<unsigned>(i % 2);
    EXPECT_EQ(d[i], bronze::philox::normal<double>(bronze::philox::word64(blk.v[2 * l], blk.v[2 * l + 1]), 99,
                                               static_cast<unsigned long long>(i / 2), l)) << i;
  }
}
