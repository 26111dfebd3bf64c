// The shared GEMM reference: exact on small integer matrices, alpha/beta/row-major right, C not read when
// beta is 0, and a tolerance that grows with K and still rejects a dropped product.
#include <rooflab/testing/gemm_reference.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

TEST(GemmReference, SmallRowMajorWithAlphaBeta) {
  // A 2x3, B 3x2: A B = [[58, 64], [139, 154]].
  const std::vector<float> a{1, 2, 3, 4, 5, 6}, b{7, 8, 9, 10, 11, 12}, c{1, -1, 2, -2};
  const auto got = rooflab::gemm_reference<double>(2, 2, 3, 0.5, std::span<const float>(a), std::span<const float>(b),
                                                   -2.0, std::span<const float>(c));
  EXPECT_EQ(got, (std::vector<double>{0.5 * 58 - 2, 0.5 * 64 + 2, 0.5 * 139 - 4, 0.5 * 154 + 4}));
}

TEST(GemmReference, BetaZeroDoesNotReadC) {
  const std::vector<float> a{2}, b{3};
  const std::vector<float> nan_c{std::numeric_limits<float>::quiet_NaN()};
  EXPECT_EQ(rooflab::gemm_reference<float>(1, 1, 1, 1.0, std::span<const float>(a), std::span<const float>(b), 0.0,
                                           std::span<const float>(nan_c))[0],
            6.0f);
  EXPECT_THROW(rooflab::gemm_reference<float>(1, 1, 2, 1.0, std::span<const float>(a), std::span<const float>(b), 0.0),
               std::invalid_argument);
}

// A float kernel's honest error stays within the bound at every K, and the bound grows with K; one dropped
// product (a K tail ignored) does not fit under it.
TEST(GemmReference, ToleranceGrowsWithKAndCatchesADroppedProduct) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  double previous = 0;
  for (std::size_t k : {1u, 17u, 131u, 1024u, 4096u}) {
    const double tol = rooflab::gemm_tolerance(k, 1.0, 0.0);
    EXPECT_GT(tol, previous);
    previous = tol;
    std::vector<float> a(k), b(k);
    for (auto& x : a) x = u(rng);
    for (auto& x : b) x = u(rng);
    const double want = rooflab::gemm_reference<double>(1, 1, k, 1.0, std::span<const float>(a),
                                                        std::span<const float>(b), 0.0)[0];
    float acc = 0, dropped = 0;
    for (std::size_t p = 0; p < k; ++p) acc += a[p] * b[p];
    for (std::size_t p = 0; p + 1 < k; ++p) dropped += a[p] * b[p];
    EXPECT_LE(std::abs(acc - want), tol) << "K = " << k;
    if (k <= 131 && std::abs(a[k - 1] * b[k - 1]) > 0.05f) {
      EXPECT_GT(std::abs(dropped - want), tol) << "K = " << k << ": a dropped product must not pass";
    }
  }
}

namespace {
// x rounded to the nearest FP16 in the normal range (11 significant bits; TF32 keeps as many).
float half(float x) {
  int e = 0;
  std::frexp(x, &e);
  const float q = std::ldexp(1.0f, e - 11);
  return std::nearbyint(x / q) * q;
}
}  // namespace

// The bound on random inputs: every FP32 sum of random products meets it, in sequence with and without fused
// multiply-adds, at every K; inputs rounded to FP16 (10 explicit bits, as TF32) before an FP32 sum break it in
// most outputs from K = 256 up, so that a perf test's sample of outputs catches them.
TEST(GemmReference, RandomInputToleranceAdmitsFp32SumsAndNotHalfInputs) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1, 1);
  for (std::size_t k : {16u, 256u, 1024u, 4096u}) {
    int broken = 0;
    constexpr int kOutputs = 400;
    double worst = 0;
    for (int out = 0; out < kOutputs; ++out) {
      std::vector<float> a(k), b(k);
      for (auto& x : a) x = u(rng);
      for (auto& x : b) x = u(rng);
      double want = 0, squares = 0, from_halves = 0;
      float fused = 0, separate = 0;
      for (std::size_t p = 0; p < k; ++p) {
        const double product = static_cast<double>(a[p]) * b[p];
        want += product;
        squares += product * product;
        fused = std::fma(a[p], b[p], fused);
        const float rounded = a[p] * b[p];
        separate = separate + rounded;
        from_halves += static_cast<double>(half(a[p])) * half(b[p]);
      }
      const double tol = rooflab::gemm_random_tolerance(k, std::sqrt(squares / static_cast<double>(k)));
      worst = std::max({worst, std::abs(fused - want) / tol, std::abs(separate - want) / tol});
      broken += std::abs(static_cast<float>(from_halves) - want) > tol;
    }
    EXPECT_LT(worst, 1.0) << "K = " << k << ": an FP32 sum of random products broke the bound";
    if (k >= 256) {
      EXPECT_GT(broken, kOutputs * 3 / 4) << "K = " << k << ": FP16-rounded inputs must break it in most outputs";
    }
    if (k >= 256) {  // the worst case grows as K^2, this bound as K: at the perf tests' K, 100 times tighter and more
      EXPECT_LT(rooflab::gemm_random_tolerance(k, 1.0 / 3), rooflab::gemm_tolerance(k, 1.0, 0.0) / 100) << "K = " << k;
    }
  }
}

// The tensor cores' bound admits a sum that truncates (rounds toward zero) at every step, and not one kept in FP16.
TEST(GemmReference, TruncatingToleranceAdmitsTruncationAndNotAnFp16Accumulator) {
  std::mt19937 rng(13);
  std::uniform_real_distribution<float> u(-1, 1);
  const auto toward_zero = [](double x) {  // x to FP32, rounded toward zero
    const float f = static_cast<float>(x);
    return std::abs(static_cast<double>(f)) > std::abs(x) ? std::nextafter(f, 0.0f) : f;
  };
  for (std::size_t k : {64u, 256u, 4096u}) {
    int fp16_passed = 0;
    for (int out = 0; out < 200; ++out) {
      double want = 0, squares = 0;
      float truncated = 0, fp16 = 0;
      for (std::size_t p = 0; p < k; ++p) {
        const double product = static_cast<double>(u(rng)) * u(rng);
        want += product;
        squares += product * product;
        truncated = toward_zero(static_cast<double>(truncated) + product);
        fp16 = half(fp16 + static_cast<float>(product));
      }
      const double tol = rooflab::gemm_truncating_tolerance(k, std::sqrt(squares / static_cast<double>(k)));
      EXPECT_LE(std::abs(truncated - want), tol) << "K = " << k << ": a truncating FP32 sum broke the bound";
      fp16_passed += std::abs(fp16 - want) <= tol;
    }
    EXPECT_LT(fp16_passed, 50) << "K = " << k << ": an FP16 accumulator must break the bound in most outputs";
  }
}
