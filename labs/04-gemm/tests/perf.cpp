// Lab 04 graders on the GPU: each rung against cuBLAS timed in the same process on the same GPU, at 4096^3 and
// at 4000^3 (no tile divides it), scored on the worse of the two; the WMMA rung against cuBLAS's FP16 GEMM with
// FP32 accumulation (cublasGemmEx). A rung faster than cuBLAS by more than the implausible margin is flagged,
// not rewarded. The last test draws the measured ladder on this GPU's roofline.
//
// The same file runs as a dry run on the CPU backend (sizes scaled by rooflab::perf_scale(), timings
// meaningless): tests/dryrun.cpp and docs/cpu-mode.md say what that proves.
#include "kernels.hpp"
#include "perf_work.hpp"

#include <rooflab/testing/buffer.hpp>
#include <rooflab/testing/calibration.hpp>
#include <rooflab/cublas.hpp>
#include <rooflab/testing/device.hpp>
#include <rooflab/testing/device_info.hpp>
#include <rooflab/testing/gemm_reference.hpp>
#include <rooflab/testing/grading.hpp>
#include <rooflab/testing/plot.hpp>
#include <rooflab/testing/roofline_plot.hpp>
#include <rooflab/specs.hpp>
#include <rooflab/testing/timed_data.hpp>
#include <rooflab/testing/timing.hpp>

#include <cuda_fp16.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

namespace {

using Launch = std::function<void(int, int, int, cudaStream_t)>;

// A GEMM's operands, random in [-1, 1) (rooflab/testing/timed_data.hpp): C is checked after timing against the
// reference at elements picked at random, so a kernel that skips work, or recognises its inputs, earns no
// speed points.
template <typename In>
struct Operands {
  explicit Operands(const lab04::Shape& s) : a(s.m * s.k, 1), b(s.k * s.n, 2), c(s.m * s.n) {}
  rooflab::TimedInput<In> a, b;
  rooflab::DeviceBuffer<float> c;
};

const rooflab::BenchOptions kOptions{.warmup = 2, .min_samples = 5, .max_seconds = 1.0, .flush_l2 = false};

// C = A B at 256 elements picked at random (and the first and last), within the bound an FP32 accumulation meets
// on random inputs, far tighter than the correctness tests' worst case at K = 4096: a rung that rounds its FP32
// inputs to FP16 or TF32 at the timed shapes (rooflab::gemm_random_tolerance), or the tensor-core rung
// accumulating in FP16 (rooflab::gemm_truncating_tolerance: tensor cores truncate), loses its points.
// Checked at `count` elements (and the first and last).
template <typename In>
::testing::AssertionResult product_matches(const Operands<In>& o, const lab04::Shape& s, const std::string& what,
                                           std::size_t count = 256) {
  const auto at = rooflab::sampled_indices(s.m * s.n, count);
  std::vector<double> want(at.size());
  double rms_product = 0;  // the largest over the sampled outputs: one bound for all of them
  for (std::size_t j = 0; j < at.size(); ++j) {
    const std::size_t row = at[j] / s.n, col = at[j] % s.n;
    double sum = 0, squares = 0;
    for (std::size_t k = 0; k < s.k; ++k) {
      const double product = static_cast<double>(o.a.host(row * s.k + k)) * o.b.host(k * s.n + col);
      sum += product;
      squares += product * product;
    }
    want[j] = sum;
    rms_product = std::max(rms_product, std::sqrt(squares / static_cast<double>(s.k)));
  }
  const auto want_at = [&](std::size_t i) { return want[std::find(at.begin(), at.end(), i) - at.begin()]; };
  const double tol = std::is_same_v<In, float> ? rooflab::gemm_random_tolerance(s.k, rms_product)
                                               : rooflab::gemm_truncating_tolerance(s.k, rms_product);
  auto r = rooflab::timed_output_matches(what, o.c, at, want_at, {tol, 0});
  if (!r) {
    r << " (each output may differ from the reference by " << tol << ", what an FP32 accumulation of these random "
      << "products stays within: FP16 or TF32 inputs, or an FP16 accumulator, err by more)";
  }
  return r;
}

// cuBLAS is column-major: the row-major C = A B is the column-major C^T = B^T A^T, so B goes first.
void cublas_sgemm(cublasHandle_t h, const lab04::Shape& s, const float* a, const float* b, float* c, cudaStream_t st) {
  const float alpha = 1.0f, beta = 0.0f;
  const int m = static_cast<int>(s.m), n = static_cast<int>(s.n), k = static_cast<int>(s.k);
  ROOFLAB_CUBLAS_CHECK(cublasSetStream(h, st));
  ROOFLAB_CUBLAS_CHECK(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, b, n, a, k, &beta, c, n));
}
void cublas_hgemm(cublasHandle_t h, const lab04::Shape& s, const __half* a, const __half* b, float* c, cudaStream_t st) {
  const float alpha = 1.0f, beta = 0.0f;
  const int m = static_cast<int>(s.m), n = static_cast<int>(s.n), k = static_cast<int>(s.k);
  ROOFLAB_CUBLAS_CHECK(cublasSetStream(h, st));
  ROOFLAB_CUBLAS_CHECK(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, b, CUDA_R_16F, n, a, CUDA_R_16F, k,
                                    &beta, c, CUDA_R_32F, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

// One rung and cuBLAS at one shape: FLOP/s of each (medians), the rung's output checked.
struct Pair {
  lab04::Shape shape;
  double rung = 0, cublas = 0;
};

template <typename In>
Pair time_pair(const lab04::Shape& s, const std::string& name,
               const std::function<void(const In*, const In*, float*, cudaStream_t)>& rung,
               const std::function<void(cublasHandle_t, const In*, const In*, float*, cudaStream_t)>& library) {
  Operands<In> o(s);
  const rooflab::CublasHandle handle;
  const auto work = lab04::perf::gemm_work(s, sizeof(In));
  const auto lib = rooflab::benchmark([&](cudaStream_t st) { library(handle.get(), o.a.device.data(), o.b.device.data(), o.c.data(), st); },
                                      work, kOptions, {rooflab::timed_output(o.c)});
  const std::string what = fmt::format("{} at {}^3", name, s.m);
  const auto mine = rooflab::benchmark([&](cudaStream_t st) { rung(o.a.device.data(), o.b.device.data(), o.c.data(), st); }, work,
                                       rooflab::checking_each_sample(
                                           rooflab::expecting_kernels(kOptions, rooflab::registry_kernels(lab04::kKernels)),
                                           [&] { return product_matches(o, s, what, 4); }),
                                       {rooflab::timed_output(o.c)}, {rooflab::timed_input(o.a, "A"), rooflab::timed_input(o.b, "B")});
  Pair p{s, mine.flops_per_s(), lib.flops_per_s()};
  EXPECT_TRUE(product_matches(o, s, what));
  return p;
}

// The one place a rung is scored: its FLOP/s against cuBLAS's measured in this run, by the lab's
// thresholds.json rule for `quantity` (its "baseline": cublas_sgemm_same_run or cublas_hgemm_same_run).
void grade_against_cublas(std::string_view quantity, double measured_flops, double cublas_flops) {
  rooflab::grading::award(ROOFLAB_LAB_ID, quantity, measured_flops, cublas_flops);
}

// Both shapes; the worse fraction of cuBLAS is graded (a kernel must be fast on awkward shapes too).
void grade_rung(std::string_view quantity, std::string_view id) {
  const auto* rung = std::find_if(std::begin(lab04::kSimtRungs), std::end(lab04::kSimtRungs),
                                  [&](const auto& r) { return r.id == id; });
  ASSERT_NE(rung, std::end(lab04::kSimtRungs)) << id;
  std::vector<Pair> pairs;
  for (const auto& s : lab04::perf::shapes()) {
    pairs.push_back(time_pair<float>(
        s, std::string(id),
        [&](const float* a, const float* b, float* c, cudaStream_t st) {
          rung->launch(static_cast<int>(s.m), static_cast<int>(s.n), static_cast<int>(s.k), 1.0f, a, b, 0.0f, c, st);
        },
        [&](cublasHandle_t h, const float* a, const float* b, float* c, cudaStream_t st) { cublas_sgemm(h, s, a, b, c, st); }));
    if (::testing::Test::HasFatalFailure()) return;
    rooflab::grading::note(fmt::format("{} at {}^3: {:.0f} GFLOP/s, cuBLAS SGEMM {:.0f} GFLOP/s ({:.1f}%)", id, s.m,
                                       pairs.back().rung / 1e9, pairs.back().cublas / 1e9,
                                       100 * pairs.back().rung / pairs.back().cublas));
  }
  const auto worst = *std::min_element(pairs.begin(), pairs.end(),
                                       [](const Pair& x, const Pair& y) { return x.rung / x.cublas < y.rung / y.cublas; });
  grade_against_cublas(quantity, worst.rung, worst.cublas);
}

}  // namespace

ROOFLAB_TEST(Lab04Perf, SmemTiledAgainstCublas) {
  ROOFLAB_REQUIRE_GPU();
  grade_rung("smem_tiled", "smem");
}
ROOFLAB_TEST(Lab04Perf, BlocktileAgainstCublas) {
  ROOFLAB_REQUIRE_GPU();
  grade_rung("blocktile", "blocktile");
}
ROOFLAB_TEST(Lab04Perf, VectorizedAgainstCublas) {
  ROOFLAB_REQUIRE_GPU();
  grade_rung("vectorized", "vectorized");
}
ROOFLAB_TEST(Lab04Perf, WarptileAgainstCublas) {
  ROOFLAB_REQUIRE_GPU();
  grade_rung("warptile", "warptile");
}

ROOFLAB_TEST(Lab04Perf, WmmaAgainstCublasHgemm) {
  ROOFLAB_REQUIRE_GPU();
  std::vector<Pair> pairs;
  for (const auto& s : lab04::perf::shapes()) {
    pairs.push_back(time_pair<__half>(
        s, "wmma",
        [&](const __half* a, const __half* b, float* c, cudaStream_t st) {
          lab04::hgemm_wmma(static_cast<int>(s.m), static_cast<int>(s.n), static_cast<int>(s.k), 1.0f, a, b, 0.0f, c, st);
        },
        [&](cublasHandle_t h, const __half* a, const __half* b, float* c, cudaStream_t st) { cublas_hgemm(h, s, a, b, c, st); }));
    if (HasFatalFailure()) return;
    rooflab::grading::note(fmt::format("wmma at {}^3: {:.1f} TFLOP/s, cuBLAS FP16 GEMM (FP32 accumulate) {:.1f} TFLOP/s ({:.1f}%)",
                                       s.m, pairs.back().rung / 1e12, pairs.back().cublas / 1e12,
                                       100 * pairs.back().rung / pairs.back().cublas));
  }
  const auto worst = *std::min_element(pairs.begin(), pairs.end(),
                                       [](const Pair& x, const Pair& y) { return x.rung / x.cublas < y.rung / y.cublas; });
  grade_against_cublas("wmma", worst.rung, worst.cublas);
}

// Every rung at 4096^3 (scaled on a dry run) as a labelled point at its tile intensity (kKernels' bytes) and
// measured TFLOP/s, cuBLAS SGEMM and HGEMM as lines, on the measured and datasheet roofs.
ROOFLAB_TEST(Lab04Perf, LadderOnTheRoofline) {
  ROOFLAB_REQUIRE_GPU();
  const auto s = lab04::perf::shapes()[0];
  const int n = static_cast<int>(s.m);
  const auto info = rooflab::query_device();
  const auto& ceilings = rooflab::ceilings();
  auto p = rooflab::roofline_plot(fmt::format("GEMM ladder at {}^3 on {}", n, info.name), 0.1, 4000, {}, "TFLOP/s",
                                  "arithmetic intensity from DRAM, tile model (FLOP/byte)");
  std::string report;
  const auto point = [&](std::string_view registry, double flops_s) {
    for (const auto& k : lab04::kKernels) {
      if (k.variant != registry) continue;
      p.series.push_back({std::string(registry), {{k.flops(n) / k.bytes(n), flops_s / 1e12}}, "points pt 7 ps 2"});
      // The model's prediction beside it (hollow), where the grader handed this run its predictions.
      rooflab::add_model_point(p, info.name, {registry}, k.flops(n) / k.bytes(n), p.series.size() - 1);
    }
  };
  Pair last;
  for (const auto& r : lab04::kSimtRungs) {
    last = time_pair<float>(
        s, std::string(r.id),
        [&](const float* a, const float* b, float* c, cudaStream_t st) { r.launch(n, n, n, 1.0f, a, b, 0.0f, c, st); },
        [&](cublasHandle_t h, const float* a, const float* b, float* c, cudaStream_t st) { cublas_sgemm(h, s, a, b, c, st); });
    if (HasFatalFailure()) return;
    report += fmt::format("  {:<11} {:>8.0f} GFLOP/s = {:>5.1f}% of cuBLAS SGEMM\n", r.id, last.rung / 1e9,
                          100 * last.rung / last.cublas);
    point(r.registry, last.rung);
  }
  p.hlines.push_back({last.cublas / 1e12, "cuBLAS SGEMM (this run)"});
  const auto h = time_pair<__half>(
      s, "wmma",
      [&](const __half* a, const __half* b, float* c, cudaStream_t st) { lab04::hgemm_wmma(n, n, n, 1.0f, a, b, 0.0f, c, st); },
      [&](cublasHandle_t hd, const __half* a, const __half* b, float* c, cudaStream_t st) { cublas_hgemm(hd, s, a, b, c, st); });
  if (HasFatalFailure()) return;
  report += fmt::format("  {:<11} {:>8.0f} GFLOP/s = {:>5.1f}% of cuBLAS FP16 GEMM\n", "wmma", h.rung / 1e9,
                        100 * h.rung / h.cublas);
  point("7 wmma fp16", h.rung);
  p.hlines.push_back({h.cublas / 1e12, "cuBLAS FP16 GEMM, FP32 accumulate (this run)"});
  const double bw = ceilings.copy_gbps * 1e9;
  p.roofs.push_back({bw / 1e12, ceilings.fp32_fma_flops / 1e12, "measured FP32 roof (copy BW, FMA peak)", false});
  if (ceilings.fp16_tensor_flops > 0) {
    p.roofs.push_back({bw / 1e12, ceilings.fp16_tensor_flops / 1e12, "measured FP16 tensor roof", false});
  }
  if (const auto* spec = rooflab::find_gpu_by_cuda_name(info.name)) {
    p.roofs.push_back({spec->bandwidth_gbps / 1e3, spec->fp32_tflops, "datasheet FP32 roof", true});
    if (spec->fp16_tflops) p.roofs.push_back({spec->bandwidth_gbps / 1e3, *spec->fp16_tflops, "datasheet FP16 tensor roof", true});
  }
  rooflab::grading::note("the ladder at " + std::to_string(n) + "^3:\n" + report);
  rooflab::grading::save_plot(p, "lab04-ladder");
}
