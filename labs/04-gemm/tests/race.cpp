// Lab 04 race check: the tiled rungs (3-7) under the CPU backend's race mode (ThreadSanitizer) at shapes
// small enough for it (a CUDA thread costs about a millisecond there), with tails in M, N and K, and the
// 128-bit paths at 64 x 64 x 48. A barrier left out of a tiled kernel is a data race between the threads
// that write a tile and those that read it: the report names the kernel's file and line.
#include "kernels.hpp"

#include <rooflab/testing/buffer.hpp>
#include <rooflab/testing/grading.hpp>
#include <rooflab/testing/random.hpp>

#include <cuda_fp16.h>

#include <functional>
#include <string>
#include <vector>

namespace {

// Runs one GEMM at m x n x k and expects no new race report.
void expect_race_free(const std::string& what, const lab04::Shape& s,
                      const std::function<void(int, int, int, float*)>& launch) {
  rooflab::DeviceBuffer<float> c{std::span<const float>(rooflab::random_floats(s.m * s.n, 3))};
  const int before = rooflab::emu::races_reported();
  launch(static_cast<int>(s.m), static_cast<int>(s.n), static_cast<int>(s.k), c.data());
  ROOFLAB_CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_EQ(rooflab::emu::races_reported(), before)
      << what << " at " << s.m << " x " << s.n << " x " << s.k << ":\n" << rooflab::emu::last_race_summary();
}

}  // namespace

ROOFLAB_TEST(Lab04Races, TiledKernelsRaceFree) {
  ASSERT_TRUE(rooflab::emu::race_mode());
  const std::size_t max_elems = 128 * 128;
  rooflab::DeviceBuffer<float> a{std::span<const float>(rooflab::random_floats(max_elems, 1))};
  rooflab::DeviceBuffer<float> b{std::span<const float>(rooflab::random_floats(max_elems, 2))};
  for (const auto& r : lab04::kSimtRungs) {
    if (r.id == "naive" || r.id == "coalesced") continue;  // no shared memory, nothing to race on
    // Rung 3's blocks are 1024 threads: one block (20 x 24) with a K tail is enough to race in.
    const std::vector<lab04::Shape> shapes =
        r.id == "smem" ? std::vector<lab04::Shape>{{20, 24, 40}} : std::vector<lab04::Shape>{{70, 90, 40}, {64, 64, 48}};
    for (const auto& s : shapes) {
      expect_race_free(std::string(r.id), s, [&](int m, int n, int k, float* c) {
        r.launch(m, n, k, 0.5f, a.data(), b.data(), 0.25f, c, nullptr);
      });
    }
  }
  std::vector<__half> h(max_elems, __float2half(0.5f));
  rooflab::DeviceBuffer<__half> ha{std::span<const __half>(h)}, hb{std::span<const __half>(h)};
  // Rung 7 keeps two buffers: at K = 112 each is filled twice, the second time while slow warps may still
  // read it if a barrier is missing; 48 is two steps, the second with a tail.
  for (const lab04::Shape& s : {lab04::Shape{64, 72, 48}, lab04::Shape{64, 72, 112}}) {
    expect_race_free("wmma", s, [&](int m, int n, int k, float* c) {
      lab04::hgemm_wmma(m, n, k, 0.5f, ha.data(), hb.data(), 0.25f, c, nullptr);
    });
  }
}
