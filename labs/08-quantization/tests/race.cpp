// Lab 08 race check: every kernel on a few blocks under the CPU backend's race mode (hints).
#include "kernels.hpp"

#include <rooflab/testing/buffer.hpp>
#include <rooflab/testing/grading.hpp>
#include <rooflab/testing/random.hpp>

#include <cuda_fp16.h>

#include <cstdint>
#include <vector>

ROOFLAB_TEST(Lab08Races, NoDataRaces) {
  ASSERT_TRUE(rooflab::emu::race_mode());
  const int n = 20, k = 256;
  const auto f = rooflab::random_floats(static_cast<std::size_t>(n) * k, 8);
  std::vector<__half> h(f.size());
  for (std::size_t i = 0; i < f.size(); ++i) h[i] = __float2half(f[i]);
  rooflab::DeviceBuffer<__half> w{std::span<const __half>(h)}, back(h.size()), scales(h.size() / 32), y(n);
  rooflab::DeviceBuffer<std::int8_t> q8(h.size());
  rooflab::DeviceBuffer<std::uint8_t> q4(h.size() / 2);
  const int before = rooflab::emu::races_reported();
  lab08::quantize_int8(w.data(), q8.data(), scales.data(), n, k, nullptr);
  lab08::dequantize_int8(q8.data(), scales.data(), back.data(), n, k, nullptr);
  lab08::gemv_int8(q8.data(), scales.data(), w.data(), y.data(), n, k, nullptr);
  for (const int group : {32, 128}) {
    lab08::quantize_int4(w.data(), q4.data(), scales.data(), n, k, group, nullptr);
    lab08::dequantize_int4(q4.data(), scales.data(), back.data(), n, k, group, nullptr);
    lab08::gemv_int4(q4.data(), scales.data(), w.data(), y.data(), n, k, group, nullptr);
  }
  EXPECT_EQ(rooflab::emu::races_reported(), before) << rooflab::emu::last_race_summary();
}
