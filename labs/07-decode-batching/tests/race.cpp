// Lab 07 race check: the GEMV and both batched kernels (CUDA cores, tensor cores) on a few blocks under the
// CPU backend's race mode (hints).
#include "kernels.hpp"

#include <rooflab/testing/buffer.hpp>
#include <rooflab/testing/grading.hpp>
#include <rooflab/testing/random.hpp>

#include <cuda_fp16.h>

#include <vector>

ROOFLAB_TEST(Lab07Races, NoDataRaces) {
  ASSERT_TRUE(rooflab::emu::race_mode());
  const int n = 20, k = 72, batch = 3;
  const auto f = rooflab::random_floats(static_cast<std::size_t>(n) * k, 4);
  std::vector<__half> h(f.size());
  for (std::size_t i = 0; i < f.size(); ++i) h[i] = __float2half(f[i]);
  rooflab::DeviceBuffer<__half> w{std::span<const __half>(h)}, x{std::span<const __half>(h)}, y(static_cast<std::size_t>(batch) * n);
  const int before = rooflab::emu::races_reported();
  lab07::gemv(w.data(), x.data(), y.data(), n, k, nullptr);
  lab07::batched_gemv(w.data(), x.data(), y.data(), n, k, batch, nullptr);
  lab07::gemv(w.data(), x.data(), y.data(), n, 13, nullptr);
  // Past batch 4 the tensor-core kernel, whose WMMA tiles go through shared memory: a __syncwarp missing there
  // is a race between lanes (race mode stores a fragment lane by lane), a __syncthreads missing around the
  // staging one between warps. 17 rows of X: two batch tiles; K = 264: three steps of kTcK = 128 columns, so
  // that a step's staging overwrites tiles the previous step read.
  const int wide = 17, kw = 264;
  const auto fw = rooflab::random_floats(static_cast<std::size_t>(n) * kw, 6);
  const auto fx = rooflab::random_floats(static_cast<std::size_t>(wide) * kw, 5);
  std::vector<__half> hw(fw.size()), hx(fx.size());
  for (std::size_t i = 0; i < fw.size(); ++i) hw[i] = __float2half(fw[i]);
  for (std::size_t i = 0; i < fx.size(); ++i) hx[i] = __float2half(fx[i]);
  rooflab::DeviceBuffer<__half> ww{std::span<const __half>(hw)}, xw{std::span<const __half>(hx)}, yw(static_cast<std::size_t>(wide) * n);
  lab07::batched_gemv(ww.data(), xw.data(), yw.data(), n, kw, wide, nullptr);
  EXPECT_EQ(rooflab::emu::races_reported(), before) << rooflab::emu::last_race_summary();
}
