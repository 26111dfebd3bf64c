// The small shared helpers: comparison, random data, stubs.
#include <rooflab/testing/compare.hpp>
#include <rooflab/testing/random.hpp>
#include <rooflab/stub.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

TEST(Compare, ToleranceAndReport) {
  const std::vector<float> want = {1.0f, 2.0f, 3.0f, 4.0f};
  std::vector<float> got = want;
  got[2] = 3.001f;
  const auto ok = rooflab::compare<float, float>(got, want, {0.0, 1e-3});
  EXPECT_TRUE(ok.ok);
  const auto bad = rooflab::compare<float, float>(got, want, {0.0, 1e-5});
  EXPECT_FALSE(bad.ok);
  EXPECT_EQ(bad.mismatches, 1u);
  EXPECT_NE(bad.report.find("[2]"), std::string::npos) << bad.report;
}

TEST(Compare, NanNeverPasses) {
  const std::vector<float> want = {1.0f, std::numeric_limits<float>::quiet_NaN()};
  const std::vector<float> got = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::quiet_NaN()};
  const auto r = rooflab::compare<float, float>(got, want, {1e30, 1e30});
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.mismatches, 2u);
}

TEST(Compare, SizeMismatch) {
  const std::vector<double> a = {1.0}, b = {1.0, 2.0};
  EXPECT_FALSE((rooflab::compare<double, double>(a, b, rooflab::kExactTolerance).ok));
}

TEST(Random, DeterministicNonZeroInRange) {
  const auto a = rooflab::random_floats(10000, 7, -2.0f, 2.0f);
  const auto b = rooflab::random_floats(10000, 7, -2.0f, 2.0f);
  const auto c = rooflab::random_floats(10000, 8, -2.0f, 2.0f);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  for (float x : a) {
    EXPECT_GE(x, -2.0f);
    EXPECT_LT(x, 2.0f);
    EXPECT_GE(std::abs(x), 1.0f / 64);
  }
  EXPECT_THROW(rooflab::random_floats(4, 1, -0.001f, 0.001f), std::invalid_argument);
}

TEST(Random, SeedComesFromTheEnvironment) {
  setenv("ROOFLAB_SEED", "12345", 1);
  EXPECT_EQ(rooflab::test_seed(), 12345u);
  unsetenv("ROOFLAB_SEED");
  EXPECT_EQ(rooflab::test_seed(), 20261122u);
}

TEST(Stub, TodoThrowsNotImplementedNamingTheStep) {
  const auto stub = [](int x) -> int { ROOFLAB_TODO("lab09.step3", x); };
  try {
    stub(1);
    FAIL() << "the stub returned";
  } catch (const rooflab::NotImplemented& e) {
    EXPECT_EQ(e.step(), "lab09.step3");
    EXPECT_NE(std::string(e.what()).find("not implemented: lab09.step3"), std::string::npos);
  }
}
