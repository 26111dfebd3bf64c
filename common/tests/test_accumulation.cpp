// rooflab/testing/accumulation.hpp: tolerances derived from the accumulation a handout asks for. Known error bounds
// hold, FP32 accumulation stays inside them on every input shape, FP16 and BF16 accumulation of the
// same-signed shape falls outside, and NaN never passes.
#include <rooflab/testing/accumulation.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace {

// Sums products one after the other in the precision of T (float, _Float16 or a BF16 emulation below).
template <typename Round>
double sequential_dot(const std::vector<float>& a, const std::vector<float>& b, Round round) {
  double acc = 0;
  for (std::size_t i = 0; i < a.size(); ++i) acc = round(acc + static_cast<double>(a[i]) * b[i]);
  return acc;
}
double to_fp32(double v) { return static_cast<float>(v); }
double to_fp16(double v) { return static_cast<double>(static_cast<_Float16>(v)); }
// BF16 by rounding FP32 to its top 16 bits (to nearest even).
double to_bf16(double v) {
  const float f = static_cast<float>(v);
  unsigned bits = 0;
  std::memcpy(&bits, &f, 4);
  bits = (bits + 0x7FFFu + ((bits >> 16) & 1u)) & 0xFFFF0000u;
  float r = 0;
  std::memcpy(&r, &bits, 4);
  return r;
}

struct Case {
  std::vector<float> a, b;
  double want = 0, abs_sum = 0;
};
Case dot_case(std::vector<float> a, std::vector<float> b) {
  Case c{std::move(a), std::move(b)};
  for (std::size_t i = 0; i < c.a.size(); ++i) {
    c.want += static_cast<double>(c.a[i]) * c.b[i];
    c.abs_sum += std::abs(static_cast<double>(c.a[i]) * c.b[i]);
  }
  return c;
}

}  // namespace

TEST(Accumulation, GammaIsHighamsAndHasNoBoundPastOne) {
  const double u = rooflab::kUnitFp32;
  EXPECT_DOUBLE_EQ(rooflab::gamma_k(1, u), u / (1 - u));
  EXPECT_DOUBLE_EQ(rooflab::gamma_k(1000, u), 1000 * u / (1 - 1000 * u));
  EXPECT_TRUE(std::isinf(rooflab::gamma_k(4096, rooflab::kUnitFp16)));  // 4096 x 2^-11 = 2: nothing is bounded
  EXPECT_DOUBLE_EQ(rooflab::accumulation_bound(4, 10, 5, u, 0), 10 * 4 * u / (1 - 4 * u));
  EXPECT_DOUBLE_EQ(rooflab::accumulation_bound(4, 10, -5, u, rooflab::kUnitFp16, 1e-9),
                   10 * 4 * u / (1 - 4 * u) * (1 + rooflab::kUnitFp16) + 5 * rooflab::kUnitFp16 + 1e-9);
}

TEST(Accumulation, AKnownWorstCaseIsInsideTheBound) {
  // 2^24 + 1 in FP32 is 2^24: an error of 1 out of a sum of absolute values 2^24 + 1, within gamma_2(u).
  const double big = 0x1p24;
  const double got = to_fp32(to_fp32(big) + 1.0), want = big + 1;
  EXPECT_EQ(std::abs(got - want), 1.0);
  EXPECT_LE(std::abs(got - want), rooflab::accumulation_bound(2, want, want, rooflab::kUnitFp32, 0));
  EXPECT_GT(std::abs(got - want), rooflab::accumulation_bound(2, want, want, rooflab::kUnitFp32 / 4, 0))
      << "the bound is tight to a small factor, not a blanket";
}

TEST(Accumulation, Fp32PassesAndFp16AndBf16FailOnTheSameSignedShape) {
  // Lengths the labs' reductions use (a head of k/8 suits k up to a few thousand: far longer, the head alone
  // takes FP16 past 2^14, where its own rounding is as large as the dropped tail).
  for (const std::size_t k : {1000u, 4096u}) {
    const Case c = dot_case(rooflab::decaying_positive(k, 7 + k, k / 8), rooflab::random_floats(k, 8 + k, 0.5f, 1.0f));
    const double allowed = rooflab::accumulation_bound(static_cast<double>(k), c.abs_sum, c.want, rooflab::kFp32Accumulation,
                                                       0);
    EXPECT_LE(std::abs(sequential_dot(c.a, c.b, to_fp32) - c.want), allowed) << "FP32, k = " << k;
    EXPECT_GT(std::abs(sequential_dot(c.a, c.b, to_fp16) - c.want), 4 * allowed) << "FP16, k = " << k;
    EXPECT_GT(std::abs(sequential_dot(c.a, c.b, to_bf16) - c.want), 4 * allowed) << "BF16, k = " << k;
  }
  // FP32 stays inside on signed random data as well (where the bound is loosest relative to the sum).
  const Case r = dot_case(rooflab::random_floats(5000, 1), rooflab::random_floats(5000, 2));
  EXPECT_LE(std::abs(sequential_dot(r.a, r.b, to_fp32) - r.want),
            rooflab::accumulation_bound(5000, r.abs_sum, r.want, rooflab::kFp32Accumulation, 0));
}

TEST(Accumulation, NanAndInfinityNeverPass) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const std::vector<float> want{1.0f, 2.0f, 3.0f};
  const std::vector<double> wide{1e30, 1e30, 1e30};
  EXPECT_TRUE((rooflab::compare_within<float, float>(want, want, wide).ok));
  for (const double bad : {nan, inf, -inf}) {
    std::vector<float> got = want;
    got[1] = static_cast<float>(bad);
    EXPECT_FALSE((rooflab::compare_within<float, float>(got, want, wide).ok)) << bad;
  }
  const std::vector<double> nan_allowed{1.0, nan, 1.0};
  EXPECT_FALSE((rooflab::compare_within<float, float>(want, want, nan_allowed).ok)) << "a NaN allowance allows nothing";
  const std::vector<float> nan_want{1.0f, static_cast<float>(nan), 3.0f};
  EXPECT_FALSE((rooflab::compare_within<float, float>(nan_want, nan_want, wide).ok));
}

TEST(Accumulation, EachElementHasItsOwnAllowance) {
  const std::vector<float> want{100.0f, 1.0f}, got{100.5f, 1.5f};
  const std::vector<double> allowed{0.5, 0.25};
  const auto r = rooflab::compare_within<float, float>(got, want, allowed);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.mismatches, 1u) << "element 0 is exactly at its bound; element 1 is past its own";
  EXPECT_NE(r.report.find("[1]"), std::string::npos) << r.report;
  const std::vector<double> short_list{0.5};
  EXPECT_FALSE((rooflab::compare_within<float, float>(got, want, short_list).ok));
}
