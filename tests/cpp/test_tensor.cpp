#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "bronze/bronze.hpp"

using bronze::DType;
using bronze::Tensor;

namespace {
std::vector<double> vals(const Tensor& t) { return t.to_double_vector(); }
}  // namespace

TEST(Half, RoundTripsAndRounds) {
  for (float f : {0.0f, 1.0f, -2.5f, 65504.0f, 6.1035156e-05f, 5.9604645e-08f})
    EXPECT_EQ(static_cast<float>(bronze::Half(f)), f) << f;
  EXPECT_TRUE(std::isinf(static_cast<float>(bronze::Half(70000.0f))));
  EXPECT_TRUE(std::isnan(static_cast<float>(bronze::Half(NAN))));
  EXPECT_EQ(bronze::Half(1.0f + 1.0f / 2048).bits, bronze::Half(1.0f).bits);  // ties to even
  EXPECT_EQ(static_cast<float>(bronze::BFloat16(1.0f)), 1.0f);
  EXPECT_EQ(static_cast<float>(bronze::BFloat16(3.140625f)), 3.140625f);
  EXPECT_EQ(bronze::BFloat16(1.0f + 1.0f / 256).bits, bronze::BFloat16(1.0f).bits);  // ties to even
}

TEST(Tensor, CreationFillsAndShapes) {
  auto t = bronze::full({2, 3}, 2.5);
  EXPECT_EQ(t.shape(), (bronze::Shape{2, 3}));
  EXPECT_EQ(t.strides(), (bronze::Shape{3, 1}));
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(vals(t), std::vector<double>(6, 2.5));
  EXPECT_EQ(vals(bronze::zeros({3}, DType::Int32)), std::vector<double>(3, 0));
  EXPECT_EQ(vals(bronze::ones({2}, DType::Float16)), std::vector<double>(2, 1));
  EXPECT_EQ(vals(bronze::arange(0, 5)), (std::vector<double>{0, 1, 2, 3, 4}));
  EXPECT_EQ(vals(bronze::arange(1, 0, -0.25)), (std::vector<double>{1, 0.75, 0.5, 0.25}));
  EXPECT_THROW(bronze::empty({-1}), bronze::ValueError);
  EXPECT_THROW(bronze::arange(0, 1, 0), bronze::ValueError);
  EXPECT_EQ(bronze::empty({0, 4}).numel(), 0);
}

TEST(Tensor, Int64FillKeepsPrecision) {
  std::int64_t big = (1ll << 60) + 1;
  auto t = bronze::full({1}, big, DType::Int64);
  std::int64_t out = 0;
  t.copy_to_host(&out);
  EXPECT_EQ(out, big);
}

TEST(Tensor, ArithmeticPromotesAndBroadcasts) {
  auto a = bronze::arange(0, 6).reshape({2, 3});  // float32
  auto b = bronze::arange(0, 3);
  EXPECT_EQ(vals(a + b), (std::vector<double>{0, 2, 4, 3, 5, 7}));
  EXPECT_EQ(vals(bronze::mul(a, 2)), (std::vector<double>{0, 2, 4, 6, 8, 10}));
  EXPECT_EQ(vals(bronze::rsub(b, 10)), (std::vector<double>{10, 9, 8}));
  auto i = bronze::arange(1, 4, 1, DType::Int32);
  auto q = bronze::div(i, bronze::full({3}, 2, DType::Int32));
  EXPECT_EQ(q.dtype(), DType::Float32);  // true division
  EXPECT_EQ(vals(q), (std::vector<double>{0.5, 1, 1.5}));
  EXPECT_EQ(bronze::add(i, bronze::ones({3}, DType::Float64)).dtype(), DType::Float64);
  EXPECT_EQ(bronze::add(i, 1).dtype(), DType::Int32);
  EXPECT_EQ(bronze::add(i, 0.5).dtype(), DType::Float32);
  EXPECT_THROW(a + bronze::ones({4}), bronze::ValueError);
  EXPECT_EQ(bronze::promote_types(DType::UInt8, DType::Int8), DType::Int16);
  EXPECT_EQ(bronze::promote_types(DType::Float16, DType::BFloat16), DType::Float32);
}

TEST(Tensor, StridedViewsAndCopies) {
  auto a = bronze::arange(0, 6).reshape({2, 3});
  auto t = a.t();
  EXPECT_FALSE(t.is_contiguous());
  EXPECT_EQ(vals(t), (std::vector<double>{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(vals(t.contiguous()), (std::vector<double>{0, 3, 1, 4, 2, 5}));
  auto dst = bronze::zeros({2, 3}, DType::Int64);
  dst.copy_(bronze::arange(0, 3));  // broadcast + convert
  EXPECT_EQ(vals(dst), (std::vector<double>{0, 1, 2, 0, 1, 2}));
  EXPECT_THROW(bronze::zeros({3}).copy_(bronze::zeros({2})), bronze::ValueError);
  EXPECT_EQ(vals(bronze::full({2}, 3.7).to(DType::Int32)), (std::vector<double>{3, 3}));
  EXPECT_EQ(vals(bronze::full({2}, 0.5).to(DType::Bool)), (std::vector<double>{1, 1}));
}

TEST(Tensor, MatmulMatchesNaive) {
  bronze::manual_seed(3);
  for (DType t : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
    auto a = bronze::randn({7, 5}, t), b = bronze::randn({5, 4}, t);
    auto c = bronze::mm(a, b);
    auto va = vals(a), vb = vals(b), vc = vals(c);
    double tol = (t == DType::Float32 || t == DType::Float64) ? 1e-4 : 0.1;
    for (int i = 0; i < 7; ++i)
      for (int j = 0; j < 4; ++j) {
        double ref = 0;
        for (int k = 0; k < 5; ++k) ref += va[i * 5 + k] * vb[k * 4 + j];
        EXPECT_NEAR(vc[i * 4 + j], ref, tol) << bronze::dtype_name(t);
      }
  }
  auto a = bronze::randn({3, 4});
  auto at = bronze::mm(a.t(), a);  // transposed operand goes straight to BLAS
  EXPECT_EQ(at.shape(), (bronze::Shape{4, 4}));
  EXPECT_THROW(bronze::mm(a, a), bronze::ValueError);
  EXPECT_THROW(bronze::mm(a, bronze::ones({4, 2}, DType::Int32)), bronze::TypeError);
  EXPECT_THROW(bronze::mm(bronze::ones({2}), a), bronze::ValueError);
}

TEST(Tensor, RngRoundTrip) {
  bronze::manual_seed(99);
  EXPECT_EQ(bronze::initial_seed(), 99u);
  auto state = bronze::get_rng_state();
  auto x = vals(bronze::rand({100}));
  auto n = vals(bronze::randn({7}, DType::Float64));
  bronze::set_rng_state(state);
  EXPECT_EQ(vals(bronze::rand({100})), x);
  EXPECT_EQ(vals(bronze::randn({7}, DType::Float64)), n);
  auto r = vals(bronze::randint(-3, 4, {1000}));
  for (double v : r) {
    EXPECT_GE(v, -3);
    EXPECT_LT(v, 4);
  }
  auto s = bronze::seed();
  EXPECT_EQ(bronze::initial_seed(), s);
}

TEST(Tensor, UniformAndNormalParameters) {
  bronze::manual_seed(0);
  auto u = vals(bronze::empty({10000}, DType::Float64).uniform_(-2, 3));
  for (double v : u) {
    EXPECT_GE(v, -2);
    EXPECT_LT(v, 3);
  }
  auto n = vals(bronze::empty({20000}).normal_(5, 0.5));
  double mean = 0;
  for (double v : n) mean += v;
  EXPECT_NEAR(mean / n.size(), 5.0, 0.02);
  EXPECT_THROW(bronze::empty({3}, DType::Int32).normal_(), bronze::TypeError);
  EXPECT_THROW(bronze::empty({3}).normal_(0, -1), bronze::ValueError);
}

TEST(Tensor, FromBlobIsZeroCopyAndReleasesOwner) {
  std::vector<float> host(4, 1.0f);
  bool released = false;
  {
    auto t = bronze::from_blob(host.data(), {4}, {}, DType::Float32, bronze::Device(), [&] { released = true; });
    t.fill_(7.0f);
    bronze::synchronize();
    EXPECT_EQ(host[2], 7.0f);
  }
  EXPECT_TRUE(released);
}
