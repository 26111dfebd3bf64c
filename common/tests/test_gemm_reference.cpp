// The shared GEMM reference: exact on small integer matrices, alpha/beta/row-major right, C not read when
// beta is 0, and a tolerance that grows with K and still rejects a dropped product.
#include <rooflab/testing/gemm_reference.hpp>

#include <gtest/gtest.h>

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
