// Lab 07 race check: both kernels on a few blocks under the CPU backend's race mode (hints).
#include "kernels.hpp"

#include <rooflab/buffer.hpp>
#include <rooflab/grading.hpp>
#include <rooflab/random.hpp>

#include <cuda_fp16.h>

#include <vector>

ROOFLAB_TEST(Lab07Races, NoDataRaces) {
  ASSERT_TRUE(rooflab::emu::race_mode());
  const int n = 20, k = 72, batch = 5;
  const auto f = rooflab::random_floats(static_cast<std::size_t>(n) * k, 4);
  std::vector<__half> h(f.size());
  for (std::size_t i = 0; i < f.size(); ++i) h[i] = __float2half(f[i]);
  rooflab::DeviceBuffer<__half> w{std::span<const __half>(h)}, x{std::span<const __half>(h)}, y(static_cast<std::size_t>(batch) * n);
  const int before = rooflab::emu::races_reported();
  lab07::gemv(w.data(), x.data(), y.data(), n, k, nullptr);
  lab07::batched_gemv(w.data(), x.data(), y.data(), n, k, batch, nullptr);
  lab07::gemv(w.data(), x.data(), y.data(), n, 13, nullptr);
  EXPECT_EQ(rooflab::emu::races_reported(), before) << rooflab::emu::last_race_summary();
}
