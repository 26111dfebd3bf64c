// Lab 07 graders: the GEMV and the batched GEMV are right for rows and columns that are not multiples of
// anything (K = 1, K not a multiple of 8, one row) and batches 1 to 64, on the GPU ("gpu") or the CPU backend
// ("emu"), against a double-precision reference of the same FP16 inputs.
#include "kernels.hpp"

#include <rooflab/testing/accumulation.hpp>
#include <rooflab/testing/buffer.hpp>
#include <rooflab/testing/device.hpp>
#include <rooflab/testing/grading.hpp>
#include <rooflab/half.hpp>
#include <rooflab/testing/kernel_watch.hpp>
#include <rooflab/testing/random.hpp>

#include <cuda_fp16.h>

#include <cmath>
#include <iterator>
#include <stdexcept>
#include <vector>

namespace {

using rooflab::grading::all_close;

struct Shape {
  int n, k;
};
// One element; K = 1; K not a multiple of 8 (the scalar path); one row; multiples of 8 (the 128-bit path)
// with a row count that leaves the last warp's rows short; a long row. 521 and 257 rows: more rows than
// the grids of the batched kernel and the GEMV hold on a GPU of 2 SMs (the CPU backend's reverse order),
// so every grid-stride loop goes round.
constexpr Shape kShapes[] = {{1, 1}, {7, 1}, {13, 13}, {1, 1000}, {257, 1000}, {521, 64}, {65, 4104}};
// Every other shape of kShapes has its arrays 16 bytes past a multiple of 32 (aligned as kernels.hpp promises,
// no more): the scalar and the 128-bit paths each see both placements, and so does a K that is a multiple of
// 16 (521 x 64), where 32-byte pieces would fit the rows but not the arrays.
using rooflab::alternate_placement;

std::vector<__half> random_halves(std::size_t n, std::uint64_t seed) {
  return rooflab::to_half(rooflab::random_floats(n, seed));
}
using rooflab::to_float;

// Random signed values, or the shape where FP16 partial sums lose whole products (rooflab/testing/accumulation.hpp):
// positive weights, the first eighth of each row 16 times larger, and positive inputs.
enum class Inputs { random, same_signed };
// A long row for the same-signed inputs: its head takes a running FP16 sum far above every later product.
constexpr Shape kSameSigned{40, 4096};

// batch 0: the GEMV; otherwise the batched kernel. `at`: where W, X and Y start (kernels.hpp promises 16-byte
// alignment, no more).
::testing::AssertionResult check(Shape s, int batch, Inputs inputs = Inputs::random,
                                 rooflab::Placement at = rooflab::Placement::allocation_start) {
  const int rows = batch == 0 ? 1 : batch;
  const std::uint64_t seed = rooflab::test_seed() + static_cast<std::uint64_t>(s.n * 7 + s.k);
  const std::size_t wn = static_cast<std::size_t>(s.n) * s.k, xn = static_cast<std::size_t>(rows) * s.k;
  const bool same = inputs == Inputs::same_signed;
  const auto w = same ? rooflab::to_half(rooflab::decaying_positive_rows(s.n, s.k, seed, s.k / 8)) : random_halves(wn, seed);
  const auto x = same ? rooflab::to_half(rooflab::random_floats(xn, seed + 1, 0.5f, 1.0f))
                      : random_halves(xn, rooflab::test_seed() + static_cast<std::uint64_t>(rows));
  rooflab::DeviceBuffer<__half> dw{std::span<const __half>(w), at}, dx{std::span<const __half>(x), at};
  rooflab::DeviceBuffer<__half> dy(static_cast<std::size_t>(rows) * s.n, at);
  dy.poison();
  const rooflab::KernelWatch watch;
  if (batch == 0) {
    lab07::gemv(dw.data(), dx.data(), dy.data(), s.n, s.k, nullptr);
  } else {
    lab07::batched_gemv(dw.data(), dx.data(), dy.data(), s.n, s.k, batch, nullptr);
  }
  rooflab::synchronize_given(nullptr);
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
  // What FP32 accumulation of each output's k products allows (gamma_k times the sum of |w x|), plus the
  // FP16 output's rounding (half an ulp, or of the smallest subnormal): the handout's FP32 partial sums.
  const auto allowed = rooflab::accumulation_bounds(rooflab::gemv_abs_sums(wf, xf, s.n, s.k, rows), ref, s.k,
                                                    rooflab::kFp32Accumulation, rooflab::kUnitFp16, 0x1p-25);
  auto r = rooflab::all_within<float, float>(to_float(dy.download()), want, allowed);
  if (!r) {
    r << " (" << what << ", n = " << s.n << ", k = " << s.k << (same ? ", positive inputs" : "")
      << rooflab::placement_note(at);
    if (batch > 0) r << ", batch " << batch << "; y is [batch][n]";
    r << ")";
  }
  return r;
}

// A batch over 64 must throw std::invalid_argument (kernels.cu's TODO for lab07.batched.launch). Valid buffers
// all the same, so that a launcher which does launch reads and writes only memory it was given.
::testing::AssertionResult batched_rejects(int batch) {
  const Shape s{13, 16};
  rooflab::DeviceBuffer<__half> dw(static_cast<std::size_t>(s.n) * s.k), dx(static_cast<std::size_t>(batch) * s.k),
      dy(static_cast<std::size_t>(batch) * s.n);
  dw.poison();
  dx.poison();
  try {
    lab07::batched_gemv(dw.data(), dx.data(), dy.data(), s.n, s.k, batch, nullptr);
    rooflab::synchronize_given(nullptr);
  } catch (const std::invalid_argument&) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "no std::invalid_argument (batched_gemv, n = " << s.n << ", k = " << s.k
                                       << ", batch " << batch << "): the batch must be 1 to 64";
}

}  // namespace

ROOFLAB_TEST(Lab07Kernels, GemvShapes) {
  ROOFLAB_REQUIRE_GPU();
  for (std::size_t i = 0; i < std::size(kShapes); ++i) EXPECT_TRUE(check(kShapes[i], 0, Inputs::random, alternate_placement(i)));
  EXPECT_TRUE(check(kSameSigned, 0, Inputs::same_signed));
}

ROOFLAB_TEST(Lab07Kernels, BatchedSmallBatches) {
  ROOFLAB_REQUIRE_GPU();
  // Every batch up to 8: the launcher may dispatch each to its own kernel instance, and an instance no test
  // launches is code no grade checks.
  for (const int batch : {1, 2, 3, 4, 5, 6, 7, 8}) {
    for (std::size_t i = 0; i < std::size(kShapes); ++i) {
      EXPECT_TRUE(check(kShapes[i], batch, Inputs::random, alternate_placement(i)));
    }
    EXPECT_TRUE(check(kSameSigned, batch, Inputs::same_signed));
  }
}

ROOFLAB_TEST(Lab07Kernels, BatchedLargeBatches) {
  ROOFLAB_REQUIRE_GPU();
  // Past 8, both ends of each batch range a launcher may give its own instance (the reference's tensor-core
  // kernel: 1, 2 or 4 tiles of 16); 16, 32 and 64 whole tiles, 9, 17 and 33 a partial one.
  for (const int batch : {9, 16, 17, 32, 33, 64}) {
    EXPECT_TRUE(check(Shape{13, 13}, batch));
    EXPECT_TRUE(check(Shape{33, 64}, batch, Inputs::random, rooflab::Placement::aligned_16_not_32));
    EXPECT_TRUE(check(Shape{65, 1000}, batch));
    EXPECT_TRUE(check(kSameSigned, batch, Inputs::same_signed));
  }
  // More 16-row slabs than a tensor-core grid holds on a GPU of 2 SMs (the CPU backend's reverse order), the
  // last one a single row: the grid-stride loop goes round. Once: it is the same loop at every batch. K = 264:
  // two whole strips of 128 columns and an edge of 8, so that a group's staging a step ahead follows the last
  // step of the group before it.
  EXPECT_TRUE(check(Shape{2081, 264}, 9));
  EXPECT_TRUE(batched_rejects(65));
}
