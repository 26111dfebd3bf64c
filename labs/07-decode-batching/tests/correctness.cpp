// Lab 07 graders: the GEMV and the batched GEMV are right for rows and columns that are not multiples of
// anything (K = 1, K not a multiple of 8, one row) and batches 1 to 64, on the GPU ("gpu") or the CPU backend
// ("emu"), against a double-precision reference of the same FP16 inputs.
#include "kernels.hpp"

#include <rooflab/buffer.hpp>
#include <rooflab/device.hpp>
#include <rooflab/grading.hpp>
#include <rooflab/half.hpp>
#include <rooflab/kernel_watch.hpp>
#include <rooflab/random.hpp>

#include <cuda_fp16.h>

#include <cmath>
#include <vector>

namespace {

using rooflab::grading::all_close;

struct Shape {
  int n, k;
};
// One element; K = 1; K not a multiple of 8 (the scalar path); one row; multiples of 8 (the 128-bit path)
// with a row count that leaves the last warp's rows short; a long row.
constexpr Shape kShapes[] = {{1, 1}, {7, 1}, {13, 13}, {1, 1000}, {33, 64}, {257, 1000}, {65, 4104}};

std::vector<__half> random_halves(std::size_t n, std::uint64_t seed) {
  return rooflab::to_half(rooflab::random_floats(n, seed));
}
using rooflab::to_float;

// batch 0: the GEMV; otherwise the batched kernel.
::testing::AssertionResult check(Shape s, int batch) {
  const int rows = batch == 0 ? 1 : batch;
  const auto w = random_halves(static_cast<std::size_t>(s.n) * s.k, rooflab::test_seed() + static_cast<std::uint64_t>(s.n * 7 + s.k));
  const auto x = random_halves(static_cast<std::size_t>(rows) * s.k, rooflab::test_seed() + static_cast<std::uint64_t>(rows));
  rooflab::DeviceBuffer<__half> dw{std::span<const __half>(w)}, dx{std::span<const __half>(x)};
  rooflab::DeviceBuffer<__half> dy(static_cast<std::size_t>(rows) * s.n);
  dy.poison();
  const rooflab::KernelWatch watch;
  if (batch == 0) {
    lab07::gemv(dw.data(), dx.data(), dy.data(), s.n, s.k, nullptr);
  } else {
    lab07::batched_gemv(dw.data(), dx.data(), dy.data(), s.n, s.k, batch, nullptr);
  }
  ROOFLAB_CUDA_CHECK(cudaDeviceSynchronize());
  const char* what = batch == 0 ? "gemv" : "batched_gemv";
  if (auto ran = watch.kernels_did_the_work(what); !ran) return ran;
  // Two launches at most, whatever the batch (a split and its reduction, say): a launcher that runs the GEMV
  // once per batch row reads every weight once per row, which batching exists to avoid.
  if (batch > 0) {
    if (auto once = watch.launched_at_most(what, 2, "a batch shares one pass over the weights, not a GEMV per row");
        !once) {
      return once << " (batch " << batch << ")";
    }
  }
  const auto wf = to_float(w), xf = to_float(x);
  std::vector<double> ref(static_cast<std::size_t>(rows) * s.n);
  lab07::linear_ref(wf.data(), xf.data(), ref.data(), s.n, s.k, rows);
  const std::vector<float> want(ref.begin(), ref.end());
  // FP32 sums of k products (|x|, |w| <= 1) rounded to FP16: the error grows like sqrt(k).
  const rooflab::Tolerance tol{2e-3 * std::sqrt(static_cast<double>(s.k)), 2e-3};
  auto r = all_close<float, float>(to_float(dy.download()), want, tol);
  if (!r) {
    r << " (" << what << ", n = " << s.n << ", k = " << s.k;
    if (batch > 0) r << ", batch " << batch << "; y is [batch][n]";
    r << ")";
  }
  return r;
}

}  // namespace

ROOFLAB_TEST(Lab07Kernels, GemvShapes) {
  ROOFLAB_REQUIRE_GPU();
  for (const Shape s : kShapes) EXPECT_TRUE(check(s, 0));
}

ROOFLAB_TEST(Lab07Kernels, BatchedSmallBatches) {
  ROOFLAB_REQUIRE_GPU();
  for (const int batch : {1, 2, 7}) {
    for (const Shape s : kShapes) EXPECT_TRUE(check(s, batch));
  }
}

ROOFLAB_TEST(Lab07Kernels, BatchedLargeBatches) {
  ROOFLAB_REQUIRE_GPU();
  for (const int batch : {16, 33, 64}) {
    for (const Shape s : {Shape{13, 13}, Shape{33, 64}, Shape{65, 1000}}) EXPECT_TRUE(check(s, batch));
  }
}
