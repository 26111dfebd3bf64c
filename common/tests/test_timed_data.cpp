// Timed inputs (rooflab/testing/timed_data.hpp): random, never constant, with no period, the host's copy equal to the
// device's, the seed changing them; the elements checked after timing drawn afresh from entropy, not the seed; and
// the after-timing check that fails on one wrong, skipped or NaN element.
#include <rooflab/testing/timed_data.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <set>

namespace {

std::vector<float> as_floats(const std::vector<__half>& v) {
  std::vector<float> out;
  for (const __half h : v) out.push_back(__half2float(h));
  return out;
}

}  // namespace

TEST(TimedData, HostCopyIsWhatTheDeviceHolds) {
  // Longer than one upload chunk (2^22 elements, each filled by several host threads), so the chunks' seams, the
  // threads' shares and the last partial chunk are checked.
  const std::size_t n = (std::size_t{1} << 23) + 1000;
  const rooflab::TimedInput<__half> in(n, 7);
  const auto device = as_floats(in.device.download());
  ASSERT_EQ(device.size(), n);
  for (std::size_t i = 0; i < n; i += 997) ASSERT_EQ(device[i], in.host(i)) << i;
  EXPECT_EQ(device[n - 1], in.host(n - 1));
  EXPECT_EQ(in.host_range(n - 3, 3), (std::vector<float>{device[n - 3], device[n - 2], device[n - 1]}));
}

TEST(TimedData, NotConstantAndSaltedApart) {
  const rooflab::TimedInput<float> a(4096, 1), b(4096, 2);
  std::set<float> values;
  int same = 0;
  for (std::size_t i = 0; i < 4096; ++i) {
    values.insert(a.host(i));
    same += a.host(i) == b.host(i) ? 1 : 0;
    ASSERT_GE(std::abs(a.host(i)), 1.0f / 64) << "never near zero";
  }
  EXPECT_GT(values.size(), 4000u) << "inputs must not be constant or repeat within a row";
  EXPECT_LT(same, 8) << "two salts must give two inputs";
}

// An input with a period lets a kernel compute one period and copy it (the timed bytes then come from the L2): no
// element of the sequence inputs are filled from repeats the one a period before it, for any period up to the
// length checked here (the period of the inputs before this rule was 2^22 - 3 elements).
TEST(TimedData, NoPeriodAKernelCouldCopy) {
  const rooflab::TimedInput<float> in(1 << 12, 5);
  for (std::size_t period = 1; period < 2048; ++period) {
    int equal = 0;
    for (std::size_t i = 0; i + period < 4096; ++i) equal += in.generated(i) == in.generated(i + period) ? 1 : 0;
    ASSERT_LT(equal, 8) << "elements repeat with period " << period;
  }
  for (const std::size_t period : {std::size_t{4194301}, std::size_t{1} << 22, std::size_t{1} << 24}) {
    int equal = 0;
    for (std::size_t i = 0; i < 4096; ++i) equal += in.generated(i) == in.generated(i + period) ? 1 : 0;
    EXPECT_LT(equal, 8) << "elements repeat with period " << period;
  }
}

TEST(TimedData, TheSeedChangesTheInputs) {
  const rooflab::TimedInput<float> course(64, 1);
  ASSERT_EQ(setenv("ROOFLAB_SEED", "12345", 1), 0);
  const rooflab::TimedInput<float> secret(64, 1);
  ASSERT_EQ(unsetenv("ROOFLAB_SEED"), 0);
  EXPECT_NE(course.host_range(0, 64), secret.host_range(0, 64));
}

// Which elements are checked after timing is drawn at each check from entropy: two checks of one output, under one
// seed, look at different elements, so no launcher can know them (a launcher that writes only the elements the
// seed's sample would pick, and reads every input to satisfy the read watch, is caught).
TEST(TimedData, TheCheckedElementsAreDrawnAfreshNotFromTheSeed) {
  const auto first = rooflab::sampled_indices(1 << 20, 64);
  const auto second = rooflab::sampled_indices(1 << 20, 64);
  std::vector<std::size_t> common;
  std::set_intersection(first.begin(), first.end(), second.begin(), second.end(), std::back_inserter(common));
  EXPECT_LE(common.size(), 4u) << "beyond the two ends, two draws share almost nothing";
}

TEST(TimedData, SampleHasTheEndsAndNoRepeats) {
  const auto at = rooflab::sampled_indices(1000, 50);
  ASSERT_GE(at.size(), 30u);
  EXPECT_EQ(at.front(), 0u);
  EXPECT_EQ(at.back(), 999u);
  EXPECT_TRUE(std::is_sorted(at.begin(), at.end()));
  EXPECT_EQ(std::set<std::size_t>(at.begin(), at.end()).size(), at.size());
  EXPECT_EQ(rooflab::sampled_indices(1, 10), (std::vector<std::size_t>{0}));
  EXPECT_TRUE(rooflab::sampled_indices(0, 10).empty());
}

TEST(TimedData, CheckFailsOnAWrongSkippedOrNanElement) {
  const std::vector<float> want{1, 2, 3, 4};
  const std::vector<std::size_t> at{0, 2, 3};
  const auto ref = [&](std::size_t i) { return static_cast<double>(want[i]); };
  EXPECT_TRUE(rooflab::timed_output_matches("k", want, at, ref, {1e-6, 1e-6}));
  for (const float bad : {3.01f, 0.0f, std::nanf(""), INFINITY}) {
    auto got = want;
    got[2] = bad;
    const auto r = rooflab::timed_output_matches("my_kernel", got, at, ref, {1e-3, 1e-3});
    EXPECT_FALSE(r) << bad;
    EXPECT_NE(std::string(r.message()).find("my_kernel: output element 2"), std::string::npos) << r.message();
  }
  // An element outside the sample is not looked at (the sample is what makes the check cheap).
  auto got = want;
  got[1] = -100;
  EXPECT_TRUE(rooflab::timed_output_matches("k", got, at, ref, {1e-6, 1e-6}));
}
