// Lab @LAB_ID@ graders: correctness of every kernel, on the GPU (kind "gpu") and on the CPU backend ("emu"):
// the same source is built into both binaries.
//
// The output is poisoned before the launch and has a canary region after it, so an element the kernel never
// writes fails, and so does a write past the end. Inputs are random, never zero, and must come back
// unchanged. fill in: one ROOFLAB_TEST per kernel, at sizes that break code.
#include "kernels.hpp"

#include <rooflab/testing/buffer.hpp>
#include <rooflab/testing/device.hpp>
#include <rooflab/testing/grading.hpp>
#include <rooflab/testing/kernel_watch.hpp>
#include <rooflab/testing/random.hpp>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace {

// Sizes that break code: one element, around a warp, a block plus one, a large ragged size.
constexpr std::size_t kSizes[] = {1, 31, 33, @LAB_NS@::kBlock + 1, (std::size_t{1} << 20) + 3};
constexpr std::size_t kCanary = 64;  // poisoned floats after the output

bool is_poison(float v) {
  std::uint32_t bits = 0;
  std::memcpy(&bits, &v, sizeof bits);
  return bits == 0xFFFFFFFFu;
}

::testing::AssertionResult scale_at(std::size_t n) {
  const std::uint64_t seed = rooflab::test_seed() + n;
  const std::vector<float> x = rooflab::random_floats(n, seed);
  const float a = 0.75f + static_cast<float>(rooflab::Rng(seed).uniform());
  rooflab::DeviceBuffer<float> dx{std::span<const float>(x)};
  rooflab::DeviceBuffer<float> dy(n + kCanary);
  dy.poison();
  const rooflab::KernelWatch watch;
  @LAB_NS@::scale(dx.data(), dy.data(), a, n, nullptr);
  rooflab::synchronize_given(nullptr);  // the stream given to the launcher, never the whole device
  const std::string who = "scale_kernel at n = " + std::to_string(n);  // every failure names kernel and shape
  if (auto ran = watch.kernels_did_the_work(who); !ran) return ran;

  std::vector<float> want(n);
  @LAB_NS@::reference_scale(x, want, a);
  const std::vector<float> y = dy.download();
  const auto r = rooflab::grading::all_close<float, float>(std::span<const float>(y.data(), n), want,
                                                           rooflab::kFp32Tolerance);
  if (!r) return ::testing::AssertionFailure() << who << ", y: " << r.message();
  for (std::size_t i = n; i < y.size(); ++i) {
    if (!is_poison(y[i])) return ::testing::AssertionFailure() << who << ": wrote y[" << i << "], past the end";
  }
  const auto x_after = rooflab::grading::all_close<float, float>(dx.download(), x, {0, 0});
  if (!x_after) return ::testing::AssertionFailure() << who << ", x (an input, must not change): " << x_after.message();
  return ::testing::AssertionSuccess();
}

}  // namespace

ROOFLAB_TEST(@LAB_SUITE@Kernels, Scale) {
  ROOFLAB_REQUIRE_GPU();
  for (const std::size_t n : kSizes) ROOFLAB_EXPECT(scale_at(n));
}
