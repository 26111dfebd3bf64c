// Lab 02 race check: the FMA kernels on a few blocks under the CPU backend's race mode (hints).
#include "kernels.hpp"

#include <rooflab/testing/buffer.hpp>
#include <rooflab/testing/grading.hpp>

ROOFLAB_TEST(Lab02Races, NoDataRaces) {
  ASSERT_TRUE(rooflab::emu::race_mode());
  const std::size_t threads = 2 * lab02::kBlock;
  rooflab::DeviceBuffer<float> out(threads);
  rooflab::DeviceBuffer<__half2> out2(threads);
  const int before = rooflab::emu::races_reported();
  lab02::fma_fp32(0.99f, 0.01f, 3, out.data(), threads, nullptr);
  lab02::fma_half2(__float2half2_rn(0.9f), __float2half2_rn(0.1f), 3, out2.data(), threads, nullptr);
  EXPECT_EQ(rooflab::emu::races_reported(), before) << rooflab::emu::last_race_summary();
}
