// Lab 01 race check: every kernel on a few blocks under the CPU backend's race mode (ThreadSanitizer, one
// fiber per CUDA thread). Two threads touching the same element, one of them writing, with nothing ordering
// them is a data race even when the output happens to be right; the report names both lines. A hint: it
// is worth no points, but a race is a bug a GPU may expose on any run.
#include "kernels.hpp"

#include <rooflab/testing/buffer.hpp>
#include <rooflab/testing/grading.hpp>
#include <rooflab/testing/random.hpp>

namespace {

::testing::AssertionResult race_free(const std::string& what, int before) {
  const int after = rooflab::emu::races_reported();
  if (after == before) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << what << ": ThreadSanitizer reported " << (after - before)
                                       << " data race(s); the last one: " << rooflab::emu::last_race_summary()
                                       << " (the full reports, with both racing lines, are in the output above)";
}

}  // namespace

ROOFLAB_TEST(Lab01Races, NoDataRaces) {
  ASSERT_TRUE(rooflab::emu::race_mode()) << "this binary must be built against rooflab::emu_race";
  constexpr std::size_t n = 777;  // three blocks and a ragged tail: enough threads to race, small enough for TSan
  for (const auto& v : lab01::kKernels) {
    if (v.run == nullptr) continue;  // strided_read: below
    rooflab::DeviceBuffer<float> a{std::span<const float>(rooflab::random_floats(n, 1))};
    rooflab::DeviceBuffer<float> b{std::span<const float>(rooflab::random_floats(n, 2))};
    rooflab::DeviceBuffer<float> c{std::span<const float>(rooflab::random_floats(n, 3))};
    const int before = rooflab::emu::races_reported();
    v.run({a.data(), b.data(), c.data(), 1.5f, n}, nullptr);
    EXPECT_TRUE(race_free(std::string(v.id()), before));
  }
  rooflab::DeviceBuffer<float> in{std::span<const float>(rooflab::random_floats(n * 4, 4))};
  rooflab::DeviceBuffer<float> out(n);
  const int before = rooflab::emu::races_reported();
  lab01::strided_read(in.data(), out.data(), n, 4, nullptr);
  EXPECT_TRUE(race_free("strided_read", before));
}
