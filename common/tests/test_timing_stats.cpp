// The timing harness's statistics (no device needed): median, spread and the stopping rule's error.
#include <rooflab/testing/timing.hpp>

#include <gtest/gtest.h>

#include <cmath>

TEST(TimingStats, MedianMinMaxAndRelativeStandardError) {
  const auto s = rooflab::sample_stats({5.0, 1.0, 3.0, 2.0, 4.0});
  EXPECT_DOUBLE_EQ(s.median, 3.0);
  EXPECT_DOUBLE_EQ(s.min, 1.0);
  EXPECT_DOUBLE_EQ(s.max, 5.0);
  EXPECT_DOUBLE_EQ(s.mean, 3.0);
  // sample stddev sqrt(2.5), standard error sqrt(2.5 / 5), relative to the mean 3
  EXPECT_NEAR(s.rse, std::sqrt(2.5 / 5) / 3, 1e-12);
  EXPECT_DOUBLE_EQ(rooflab::sample_stats({1.0, 2.0, 3.0, 4.0}).median, 2.5);
  EXPECT_DOUBLE_EQ(rooflab::sample_stats({7.0}).rse, 1.0);  // one sample says nothing about the spread
}

TEST(TimingStats, ThroughputFromDeclaredWork) {
  rooflab::Measurement m;
  m.work = {.bytes_read = 2e9, .bytes_written = 1e9, .flops = 0};
  m.median_s = 0.5;
  m.min_s = 0.25;
  EXPECT_DOUBLE_EQ(m.gbps(), 6.0);
  EXPECT_DOUBLE_EQ(m.best_gbps(), 12.0);
  EXPECT_DOUBLE_EQ(m.percent_of(12.0), 50.0);
}
