// Tolerances derived from the accumulation a handout requires, per output element.
//
// A reduction's output (a dot product, a GEMM element, an attention row) is a sum of k terms. Summed in any
// order in a format of unit roundoff u, its error is at most gamma_k(u) = k u / (1 - k u) times the sum of the
// terms' absolute values (Higham, Accuracy and Stability of Numerical Algorithms, section 3.1); storing it in
// the output type adds that type's rounding. So the reference, which knows every term, can say per element
// how far an FP32-accumulating kernel may be off:
//
//   allowed_i = gamma_k(u_acc) * sum_j |a_ij b_ij| * (1 + u_out) + u_out * |want_i|
//
// A blanket tolerance (atol + rtol |want|) sized for the worst element lets an FP16 or BF16 accumulator through
// on most elements; this one does not, as long as the inputs make the cheap format lose bits: same-signed
// terms whose running sum grows far above each new term (decaying_positive() below), where FP16 partial sums
// drop whole terms while FP32 keeps them.
//
//   std::vector<double> allowed(n);
//   for (i...) allowed[i] = rooflab::accumulation_bound(k, abs_sum[i], want[i], rooflab::kFp32Accumulation,
//                                                       rooflab::kUnitFp16);
//   EXPECT_TRUE(rooflab::all_within<float, float>(got, want, allowed));
#pragma once

#include <rooflab/testing/compare.hpp>
#include <rooflab/testing/grading.hpp>
#include <rooflab/testing/random.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

namespace rooflab {

// Unit roundoff (half an ulp at 1) of the formats the labs store in.
inline constexpr double kUnitFp32 = 0x1p-24;
inline constexpr double kUnitFp16 = 0x1p-11;
inline constexpr double kUnitBf16 = 0x1p-8;
// FP32 accumulation as GPUs do it: round to nearest on the CUDA cores, but tensor-core MMAs may truncate their
// internal sums; twice FP32's unit roundoff covers both, and is still 256 times below FP16's.
inline constexpr double kFp32Accumulation = 0x1p-23;

// gamma_k(u) = k u / (1 - k u); infinite once k u reaches 1 (no bound).
inline double gamma_k(double k, double u) {
  const double ku = k * u;
  return ku < 1 ? ku / (1 - ku) : std::numeric_limits<double>::infinity();
}

// The error allowed in one output: a sum of `k` terms whose absolute values add up to `abs_sum`, accumulated
// with unit roundoff `u_acc`, whose exact value is `want`, stored with unit roundoff `u_out` (0 for a double
// output). `floor` is an absolute allowance for what the terms alone do not say (a subnormal output, an
// output that is itself computed from rounded intermediates the caller bounds separately).
inline double accumulation_bound(double k, double abs_sum, double want, double u_acc, double u_out, double floor = 0) {
  return gamma_k(k, u_acc) * abs_sum * (1 + u_out) + u_out * std::abs(want) + floor;
}

// |got_i - want_i| <= allowed_i for every i; NaN (in got, want or allowed) never passes. The report lists the
// first mismatches with their allowance, so a student sees how far past the accumulation error they are.
template <typename Got, typename Want>
CompareResult compare_within(std::span<const Got> got, std::span<const Want> want, std::span<const double> allowed,
                             std::size_t max_listed = 8) {
  CompareResult r;
  if (got.size() != want.size() || allowed.size() != want.size()) {
    r.ok = false;
    r.report = fmt::format("size mismatch: got {} elements, want {} (with {} allowances)", got.size(), want.size(),
                           allowed.size());
    return r;
  }
  r.checked = got.size();
  std::string listed;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double g = static_cast<double>(got[i]), w = static_cast<double>(want[i]);
    const double err = std::abs(g - w);
    if (err <= allowed[i]) {  // false for any NaN
      r.max_abs_error = std::max(r.max_abs_error, err);
      continue;
    }
    if (r.mismatches < max_listed) {
      listed += fmt::format("\n  [{}] got {:.9g}, want {:.9g} (|diff| {:.3g}, allowed {:.3g})", i, g, w, err, allowed[i]);
    }
    ++r.mismatches;
  }
  if (r.mismatches > 0) {
    r.ok = false;
    r.report = fmt::format("{} of {} elements differ by more than FP32 accumulation allows (the error bound of the "
                           "accumulation the handout asks for, per element); first ones:{}",
                           r.mismatches, r.checked, listed);
  }
  return r;
}

// gtest adapter: compare_within, recorded for the grader's independent check with the largest allowance.
template <typename Got, typename Want>
::testing::AssertionResult all_within(std::span<const Got> got, std::span<const Want> want,
                                      std::span<const double> allowed) {
  double widest = 0;
  for (const double a : allowed) widest = std::max(widest, a);
  grading::detail::record_comparison("all_within", got, want, Tolerance{widest, 0.0});
  const CompareResult r = compare_within(got, want, allowed);
  if (r.ok) return ::testing::AssertionSuccess() << r.checked << " elements within the accumulation bound";
  return ::testing::AssertionFailure() << r.report;
}

// sum_i |w[j][i] x[b][i]| for every output y[b][j] of a GEMV or batched GEMV (W: n x k, X: batch x k, Y:
// batch x n, row-major): the terms' absolute sum that accumulation_bound() scales.
inline std::vector<double> gemv_abs_sums(std::span<const float> w, std::span<const float> x, int n, int k, int batch) {
  std::vector<double> sums(static_cast<std::size_t>(batch) * n);
  for (int b = 0; b < batch; ++b) {
    const float* xb = x.data() + static_cast<std::size_t>(b) * k;
    for (int j = 0; j < n; ++j) {
      const float* wj = w.data() + static_cast<std::size_t>(j) * k;
      double acc = 0;
      for (int i = 0; i < k; ++i) acc += std::abs(static_cast<double>(wj[i]) * xb[i]);
      sums[static_cast<std::size_t>(b) * n + j] = acc;
    }
  }
  return sums;
}

// accumulation_bound() for every output: `abs_sums[i]` and `want[i]` of output i, each a sum of `k` terms.
inline std::vector<double> accumulation_bounds(std::span<const double> abs_sums, std::span<const double> want, double k,
                                               double u_acc, double u_out, double floor = 0) {
  std::vector<double> allowed(want.size());
  for (std::size_t i = 0; i < want.size(); ++i) allowed[i] = accumulation_bound(k, abs_sums[i], want[i], u_acc, u_out, floor);
  return allowed;
}

// The input shape where a cheaper accumulator loses visible bits: n positive values, the first `head` of
// them in [big / 2, big) and the rest in [small / 4, small) (never zero), drawn from `seed`. A running sum that
// passes the head is large; each later term is then below half an FP16 ulp of it and an FP16 partial sum
// drops it (BF16 drops it sooner), while FP32 keeps about 12 more bits. Any accumulation order that walks
// the values forwards meets the head first.
// A matrix of `rows` such rows (row-major, `cols` each) has the head at the start of every row.
// A smaller `small` suits a kernel that adds many products into its running sum at once (an FP16 running sum
// drops a whole step's increment only while the increment stays below half its ulp).
inline std::vector<float> decaying_positive(std::size_t n, std::uint64_t seed, std::size_t head, float big = 16.0f,
                                            float small = 1.0f / 16) {
  std::vector<float> v = random_floats(n, seed, small / 4, small, small / 8);
  const std::vector<float> h = random_floats(std::min(head, n), seed ^ 0x6A09E667F3BCC908ull, big / 2, big);
  std::copy(h.begin(), h.end(), v.begin());
  return v;
}
inline std::vector<float> decaying_positive_rows(std::size_t rows, std::size_t cols, std::uint64_t seed, std::size_t head,
                                                 float big = 16.0f, float small = 1.0f / 16) {
  std::vector<float> m;
  m.reserve(rows * cols);
  for (std::size_t r = 0; r < rows; ++r) {
    const auto row = decaying_positive(cols, seed + r * 0x9E3779B97F4A7C15ull, head, big, small);
    m.insert(m.end(), row.begin(), row.end());
  }
  return m;
}

}  // namespace rooflab
