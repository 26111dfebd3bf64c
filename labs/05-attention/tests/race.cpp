// Lab 05 race check: both Flash kernels under the CPU backend's race mode (ThreadSanitizer) at lengths of
// two and three key tiles, causal and not, both head dims for the tensor-core kernel (hints). Both kernels
// stage K and V tiles in shared memory that every warp reads: a barrier left out before reading a tile, or
// before the next tile overwrites it, is a data race the report names with its line.
#include "kernels.hpp"

#include <rooflab/testing/buffer.hpp>
#include <rooflab/testing/grading.hpp>
#include <rooflab/testing/random.hpp>

#include <cuda_fp16.h>

#include <functional>
#include <string>
#include <vector>

namespace {

void expect_race_free(const std::string& what, const std::function<void()>& launch) {
  const int before = rooflab::emu::races_reported();
  launch();
  ROOFLAB_CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_EQ(rooflab::emu::races_reported(), before) << what << ":\n" << rooflab::emu::last_race_summary();
}

}  // namespace

ROOFLAB_TEST(Lab05Races, FlashKernelsRaceFree) {
  ASSERT_TRUE(rooflab::emu::race_mode());
  constexpr std::size_t kMax = 200 * 128;
  const auto values = rooflab::random_floats(kMax, 5);
  std::vector<__half> halves(kMax);
  for (std::size_t i = 0; i < kMax; ++i) halves[i] = __float2half(values[i]);
  rooflab::DeviceBuffer<float> q{std::span<const float>(values)}, o(kMax), lse(256);
  rooflab::DeviceBuffer<__half> hq{std::span<const __half>(halves)}, ho(kMax);
  // v1: 40 keys are two tiles of 32; the block's 8 query rows see both.
  expect_race_free("flash v1, L = 40, head dim 64, causal", [&] {
    lab05::flash_attention_fp32(q.data(), q.data(), q.data(), o.data(), lse.data(), 1, 40, 64, 0.125f, true, nullptr);
  });
  // v2 keeps two stages of K and V: 200 keys are four tiles of 64 at head dim 64 (each stage filled twice, the
  // second time while other warps may still read the first) and two query blocks; 70 keys three tiles of 32 at 128.
  expect_race_free("flash v2, L = 200, head dim 64", [&] {
    lab05::flash_attention_fp16(hq.data(), hq.data(), hq.data(), ho.data(), lse.data(), 1, 200, 64, 0.125f, false, nullptr);
  });
  expect_race_free("flash v2, L = 70, head dim 128, causal", [&] {
    lab05::flash_attention_fp16(hq.data(), hq.data(), hq.data(), ho.data(), lse.data(), 1, 70, 128, 0.09f, true, nullptr);
  });
}
