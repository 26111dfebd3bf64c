// The host GEMM every GEMM lab compares with (Labs 04, 05, 07, 08): C = alpha A B + beta C in double, row-major,
// and the error bound a float-accumulating kernel must meet, which grows with K.
//
//   const auto want = rooflab::gemm_reference<float>(m, n, k, alpha, a, b, beta, c);
//   const double atol = rooflab::gemm_tolerance(k, alpha, beta);   // inputs in [-1, 1], FP32 accumulation
//   EXPECT_TRUE(rooflab::grading::all_close<float, float>(got, want, {atol, 0}));
//
// Why the bound grows with K: each output is a sum of K products. Summed in any order in a format of unit
// roundoff u, the error is at most gamma_K = K u / (1 - K u) times the sum of the absolute terms (Higham,
// Accuracy and Stability of Numerical Algorithms, section 3.1). With |a|, |b|, |c| <= 1 that sum is at most
// |alpha| K + |beta|; rounding alpha * acc and the final add adds two more u. A tolerance that stays fixed
// as K grows either fails correct kernels at large K or passes wrong ones at small K.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <span>
#include <stdexcept>
#include <vector>

namespace rooflab {

// A (m x k), B (k x n) and C (m x n), row-major and dense; c may be empty when beta == 0 (C is not read, the
// BLAS rule). Element types are anything convertible to float (float, __half, __nv_bfloat16): the
// reference sees exactly the values the kernel was given. Accumulates in double.
template <typename Out = float, typename TA, typename TB, typename TC = float>
std::vector<Out> gemm_reference(std::size_t m, std::size_t n, std::size_t k, double alpha, std::span<const TA> a,
                                std::span<const TB> b, double beta, std::span<const TC> c = {}) {
  if (a.size() != m * k || b.size() != k * n || (beta != 0 && c.size() != m * n)) {
    throw std::invalid_argument("gemm_reference: the spans do not match m, n, k");
  }
  const auto v = [](const auto& x) { return static_cast<double>(static_cast<float>(x)); };
  std::vector<double> acc(n);
  std::vector<Out> out(m * n);
  for (std::size_t i = 0; i < m; ++i) {
    std::fill(acc.begin(), acc.end(), 0.0);
    // i-k-j order: B is walked row by row, so the reference stays fast at the sizes the CPU tests use.
    for (std::size_t p = 0; p < k; ++p) {
      const double aip = v(a[i * k + p]);
      for (std::size_t j = 0; j < n; ++j) acc[j] += aip * v(b[p * n + j]);
    }
    for (std::size_t j = 0; j < n; ++j) {
      const double old = beta != 0 ? beta * v(c[i * n + j]) : 0.0;
      out[i * n + j] = static_cast<Out>(alpha * acc[j] + old);
    }
  }
  return out;
}

// The absolute error allowed in every element of alpha A B + beta C with |A|, |B|, |C| <= 1, accumulated in a
// format of unit roundoff `u` (FP32: 2^-24, also for FP16 inputs with FP32 accumulation: their products are
// exact in FP32): twice Higham's gamma_(K+2) times the largest possible sum of absolute terms.
inline double gemm_tolerance(std::size_t k, double alpha, double beta, double u = 0x1p-24) {
  const double terms = std::abs(alpha) * static_cast<double>(k) + std::abs(beta);
  const double ku = static_cast<double>(k + 2) * u;
  return 2.0 * ku / (1.0 - ku) * terms;
}

// The error a kernel that accumulates in a format of unit roundoff `u` stays within on random inputs (the perf
// tests' operands, independent and of random sign), for one output whose K products have the root mean square
// `rms_product`. gemm_tolerance is the worst case over every input, which grows as K u times K: at K = 4096 it
// is about 2, wide enough to pass a kernel that rounds its FP32 inputs to FP16 or TF32 (each product then off by
// up to 2^-10 of itself). On random inputs the roundings behave as independent errors of mean zero (the model of
// Higham and Mary, "A New Approach to Probabilistic Rounding Error Analysis", SIAM J. Sci. Comput. 41(5), 2019):
// the j-th rounding of the running sum errs by at most u |s_j|, the partial sums of random-sign products have
// |s_j| of about rms_product sqrt(j), so the total's standard deviation is at most u rms_product K / sqrt(2). The
// bound allows 10 u rms_product (K + 1) (the K + 1: the products' own roundings, for FP32 inputs), over 14 of
// those standard deviations. Simulated here (2026-12-02: 4.6 million sums of uniform [-1, 1) products, in
// sequence, the order with the largest partial sums; FP32 fused and separate multiply-adds at K = 16, 64 and 256,
// fused at K = 4096): the worst error was under 0.4 of this bound, while FP16-rounded inputs at K = 4096 err by a
// median 4.6 times the bound (common/tests/test_gemm_reference.cpp keeps a smaller run of both as a test).
inline double gemm_random_tolerance(std::size_t k, double rms_product, double u = 0x1p-24) {
  return 10.0 * u * rms_product * static_cast<double>(k + 1);
}

// The same for an accumulation whose roundings need not be unbiased: NVIDIA's tensor cores align their products
// and truncate instead of rounding to nearest (Fasi, Higham, Mikaitis and Pranesh, "Numerical behavior of NVIDIA
// tensor cores", PeerJ Computer Science 7:e330, 2021), so their errors may all point one way. Each is still at
// most about u |s_j|, and the |s_j| of random-sign products sum to about 0.53 rms_product K^1.5 (the mean
// |s_j| being 0.8 rms_product sqrt(j)); the bound allows 4 u rms_product (K + 1)^1.5, over 7 times that. An
// FP16 accumulator (u = 2^-11) errs by about 0.27 at K = 4096 on [-1, 1) inputs, 13 times this bound.
inline double gemm_truncating_tolerance(std::size_t k, double rms_product, double u = 0x1p-24) {
  return 4.0 * u * rms_product * std::pow(static_cast<double>(k + 1), 1.5);
}

}  // namespace rooflab
