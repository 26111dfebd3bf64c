// Lab 03 race check: the chain and the sweep on a few blocks under the CPU backend's race mode (hints).
#include "kernels.hpp"

#include <rooflab/testing/buffer.hpp>
#include <rooflab/testing/grading.hpp>
#include <rooflab/testing/random.hpp>

ROOFLAB_TEST(Lab03Races, NoDataRaces) {
  ASSERT_TRUE(rooflab::emu::race_mode());
  const std::size_t rows = 3, cols = 250, n = rows * cols;
  rooflab::DeviceBuffer<float> x{std::span<const float>(rooflab::random_floats(n, 1))};
  rooflab::DeviceBuffer<float> bias{std::span<const float>(rooflab::random_floats(cols, 2))};
  rooflab::DeviceBuffer<float> r{std::span<const float>(rooflab::random_floats(n, 3))};
  rooflab::DeviceBuffer<float> t(n), u(n), y(n);
  const int before = rooflab::emu::races_reported();
  lab03::unfused_chain<float>(x.data(), bias.data(), r.data(), t.data(), u.data(), y.data(), rows, cols, nullptr);
  lab03::fused_chain<float>(x.data(), bias.data(), r.data(), y.data(), rows, cols, nullptr);
  lab03::sweep(x.data(), y.data(), n, 0.9f, 0.1f, 3, nullptr);
  EXPECT_EQ(rooflab::emu::races_reported(), before) << rooflab::emu::last_race_summary();
}
