// Lab 03 graders: the chain (unfused and fused, FP32 and FP16) and the sweep are right for awkward shapes,
// with poisoned outputs, on the GPU ("gpu") or the CPU backend ("emu").
#include "kernels.hpp"

#include <rooflab/buffer.hpp>
#include <rooflab/device.hpp>
#include <rooflab/grading.hpp>
#include <rooflab/kernel_watch.hpp>
#include <rooflab/random.hpp>

#include <cuda_fp16.h>

#include <vector>

namespace {

using rooflab::grading::all_close;

constexpr std::pair<std::size_t, std::size_t> kShapes[] = {{1, 1}, {1, 33}, {31, 7}, {64, 257}, {129, 1025}};

template <typename T>
std::vector<T> to(const std::vector<float>& v) {
  std::vector<T> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = static_cast<T>(v[i]);
  return out;
}

template <typename T>
::testing::AssertionResult check_chain(bool fused, std::size_t rows, std::size_t cols) {
  const std::size_t n = rows * cols;
  const auto x = rooflab::random_floats(n, rooflab::test_seed() + n, -2.0f, 2.0f);
  const auto bias = rooflab::random_floats(cols, rooflab::test_seed() + 1, -1.0f, 1.0f);
  const auto r = rooflab::random_floats(n, rooflab::test_seed() + 2, -1.0f, 1.0f);
  const auto xs = to<T>(x), bs = to<T>(bias), rs = to<T>(r);
  rooflab::DeviceBuffer<T> dx{std::span<const T>(xs)}, db{std::span<const T>(bs)}, dr{std::span<const T>(rs)};
  rooflab::DeviceBuffer<T> t(n), u(n), y(n);
  y.poison();
  const rooflab::KernelWatch watch;
  if (fused) {
    lab03::fused_chain<T>(dx.data(), db.data(), dr.data(), y.data(), rows, cols, nullptr);
  } else {
    t.poison();
    u.poison();
    lab03::unfused_chain<T>(dx.data(), db.data(), dr.data(), t.data(), u.data(), y.data(), rows, cols, nullptr);
  }
  ROOFLAB_CUDA_CHECK(cudaDeviceSynchronize());
  if (auto ran = watch.kernels_did_the_work(fused ? "fused_chain" : "unfused_chain"); !ran) return ran;
  std::vector<float> got, want(n);
  for (const T& v : y.download()) got.push_back(static_cast<float>(v));
  for (std::size_t i = 0; i < n; ++i) {
    // The reference from the stored (possibly FP16) inputs, in double.
    const double v = static_cast<double>(static_cast<float>(xs[i])) + static_cast<float>(bs[i % cols]);
    want[i] = static_cast<float>(lab03::gelu_ref(v) + static_cast<float>(rs[i]));
  }
  const rooflab::Tolerance tol = sizeof(T) == 2 ? rooflab::Tolerance{4e-3, 1e-2} : rooflab::Tolerance{1e-5, 1e-5};
  auto r2 = all_close<float, float>(got, want, tol);
  if (!r2) r2 << " (" << (fused ? "fused" : "unfused") << ", " << rows << " x " << cols << ")";
  return r2;
}

}  // namespace

ROOFLAB_TEST(Lab03Kernels, UnfusedChainFp32) {
  ROOFLAB_REQUIRE_GPU();
  for (const auto& [rows, cols] : kShapes) EXPECT_TRUE(check_chain<float>(false, rows, cols));
}
ROOFLAB_TEST(Lab03Kernels, UnfusedChainFp16) {
  ROOFLAB_REQUIRE_GPU();
  for (const auto& [rows, cols] : kShapes) EXPECT_TRUE(check_chain<__half>(false, rows, cols));
}
ROOFLAB_TEST(Lab03Kernels, FusedChainFp32) {
  ROOFLAB_REQUIRE_GPU();
  for (const auto& [rows, cols] : kShapes) EXPECT_TRUE(check_chain<float>(true, rows, cols));
}
ROOFLAB_TEST(Lab03Kernels, FusedChainFp16) {
  ROOFLAB_REQUIRE_GPU();
  for (const auto& [rows, cols] : kShapes) EXPECT_TRUE(check_chain<__half>(true, rows, cols));
}

ROOFLAB_TEST(Lab03Kernels, IntensitySweep) {
  ROOFLAB_REQUIRE_GPU();
  for (std::size_t n : {std::size_t{1}, std::size_t{1000}, std::size_t{4099}}) {
    const auto in = rooflab::random_floats(n, rooflab::test_seed() + 7);
    rooflab::DeviceBuffer<float> din{std::span<const float>(in)}, dout(n);
    for (int k : {0, 1, 7, 64}) {
      dout.poison();
      const rooflab::KernelWatch watch;
      lab03::sweep(din.data(), dout.data(), n, 0.999f, 0.001f, k, nullptr);
      ROOFLAB_CUDA_CHECK(cudaDeviceSynchronize());
      EXPECT_TRUE(watch.kernels_did_the_work("sweep"));
      std::vector<float> want(n);
      for (std::size_t i = 0; i < n; ++i) want[i] = lab03::sweep_ref(in[i], 0.999f, 0.001f, k);
      EXPECT_TRUE((all_close<float, float>(dout.download(), want, {1e-6, 1e-6}))) << "n = " << n << ", k = " << k;
    }
  }
}
