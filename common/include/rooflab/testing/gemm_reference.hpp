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

}  // namespace rooflab
