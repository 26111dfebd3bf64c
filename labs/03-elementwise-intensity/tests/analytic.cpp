// Lab 03 graders: counting elementwise work, with random shapes and every GPU in data/gpus.json.
#include "lab.hpp"

#include <rooflab/testing/grading.hpp>
#include <rooflab/testing/plot.hpp>
#include <rooflab/testing/roofline_plot.hpp>
#include <rooflab/testing/random.hpp>
#include <rooflab/specs.hpp>
#include <rooflab/testing/synthetic.hpp>

#include <cmath>

namespace {

using rooflab::DType;

// Every answer is also recorded for the grader's check outside the student's process (rooflab/detail/report.hpp).
::testing::AssertionResult same(const lab03::Cost& got, double flops, double bytes) {
  constexpr rooflab::Tolerance kTol{0.0, 1e-9};
  const auto f = rooflab::grading::near(got.flops, flops, kTol);
  const auto b = rooflab::grading::near(got.bytes, bytes, kTol);
  if (f && b) return ::testing::AssertionSuccess();
  ::testing::AssertionResult r = ::testing::AssertionFailure();
  if (!f) r << "FLOPs: " << f.message() << " ";
  if (!b) r << "bytes: " << b.message();
  return r;
}
// near() with an absolute tolerance, as EXPECT_NEAR has.
::testing::AssertionResult near_abs(double got, double want, double atol) {
  return rooflab::grading::near(got, want, {atol, 0.0});
}

struct Shape {
  std::size_t rows, cols, elem;
};

std::vector<Shape> shapes() {
  rooflab::Rng rng(rooflab::test_seed());
  std::vector<Shape> out;
  for (int i = 0; i < 40; ++i) out.push_back({1 + rng.below(5000), 1 + rng.below(9000), i % 2 == 0 ? 2u : 4u});
  return out;
}

}  // namespace

ROOFLAB_TEST(Lab03Analytic, ReluAddGelu) {
  for (const auto& s : shapes()) {
    const double n = static_cast<double>(s.rows * s.cols), e = static_cast<double>(s.elem);
    ROOFLAB_EXPECT(same(lab03::relu(s.rows * s.cols, s.elem), n, 2 * n * e)) << "relu n=" << n;
    ROOFLAB_EXPECT(same(lab03::add(s.rows * s.cols, s.elem), n, 3 * n * e)) << "add n=" << n;
    ROOFLAB_EXPECT(same(lab03::gelu(s.rows * s.cols, s.elem), 9 * n, 2 * n * e)) << "gelu n=" << n;
  }
}

ROOFLAB_TEST(Lab03Analytic, BiasReluLayerNormAdam) {
  for (const auto& s : shapes()) {
    const double n = static_cast<double>(s.rows * s.cols), e = static_cast<double>(s.elem);
    ROOFLAB_EXPECT(same(lab03::bias_relu(s.rows, s.cols, s.elem), 2 * n, (2 * n + static_cast<double>(s.cols)) * e));
    const std::size_t b = 1 + s.rows % 7;
    const double m = static_cast<double>(b * s.rows * s.cols);
    ROOFLAB_EXPECT(same(lab03::layernorm(b, s.rows, s.cols, s.elem), 8 * m, (2 * m + 2.0 * static_cast<double>(s.cols)) * e))
        << "layernorm " << b << "x" << s.rows << "x" << s.cols;
    ROOFLAB_EXPECT(same(lab03::adam_step(s.rows * s.cols), 12 * n, 28 * n));
  }
  // Exercise 10 of docs/sources.md: Adam is far left of every ridge point (12 / 28 = 0.43 FLOP/byte).
  ROOFLAB_EXPECT(near_abs(lab03::intensity(lab03::adam_step(1000)), 12.0 / 28.0, 1e-12));
}

ROOFLAB_TEST(Lab03Analytic, PredictedTimeOnEveryGpu) {
  for (const auto& g : rooflab::graded_gpus()) {
    for (const auto& s : shapes()) {
      const lab03::Cost c{rooflab::Rng(s.rows).uniform(1e6, 1e12), rooflab::Rng(s.cols).uniform(1e6, 1e11)};
      const double want = std::max(c.bytes / (g.bandwidth_gbps * 1e9), c.flops / (g.fp32_tflops * 1e12));
      ROOFLAB_EXPECT(rooflab::grading::near(lab03::predicted_time_s(c, g, DType::fp32), want, {0.0, 1e-9})) << g.name;
      ROOFLAB_EXPECT(near_abs(lab03::intensity(c), c.flops / c.bytes, 1e-12 * c.flops / c.bytes));
    }
  }
  // Exercise 2 of docs/sources.md: LayerNorm over [B, L, D] in FP16 is about 2 FLOP/byte: memory-bound on an A100.
  const auto ln = lab03::layernorm(8, 2048, 4096, 2);
  const auto& a100 = rooflab::gpu("a100-80gb-sxm4");
  ROOFLAB_EXPECT(near_abs(lab03::predicted_time_s(ln, a100, DType::fp16), ln.bytes / (a100.bandwidth_gbps * 1e9), 1e-12));
}

ROOFLAB_TEST(Lab03Analytic, FusionSavesTheIntermediates) {
  for (const auto& s : shapes()) {
    const double n = static_cast<double>(s.rows * s.cols), e = static_cast<double>(s.elem), c = static_cast<double>(s.cols);
    ROOFLAB_EXPECT(same(lab03::chain_unfused(s.rows, s.cols, s.elem), 11 * n, (7 * n + c) * e)) << s.rows << "x" << s.cols;
    ROOFLAB_EXPECT(same(lab03::chain_fused(s.rows, s.cols, s.elem), 11 * n, (3 * n + c) * e)) << s.rows << "x" << s.cols;
    ROOFLAB_EXPECT(near_abs(lab03::fusion_speedup(s.rows, s.cols, s.elem), (7 * n + c) / (3 * n + c), 1e-9));
  }
}

// The picture to remember, from the datasheet alone: the chain's kernels as points on this GPU's roofs
// (predicted, since no GPU was measured). With a GPU the perf tests draw the measured sweep on it.
ROOFLAB_TEST(Lab03Plots, DatasheetRooflineWithTheChain) {
  const auto& g = rooflab::gpu("a100-80gb-sxm4");
  const double bw = g.bandwidth_gbps * 1e9;
  auto p = rooflab::roofline_plot("Elementwise kernels on the " + g.name + " roofline", 0.05, 2000,
                                  "datasheet roofs and predicted points: no GPU was measured for this plot");
  rooflab::add_datasheet_roofs(p, g);
  const std::size_t rows = 4096, cols = 4096;
  const auto point = [&](const lab03::Cost& c) {
    const double i = lab03::intensity(c);
    return std::pair<double, double>{i, std::min(g.fp32_tflops * 1e12, i * bw) / 1e12};
  };
  const lab03::Cost unfused = lab03::chain_unfused(rows, cols, 4), fused = lab03::chain_fused(rows, cols, 4);
  const auto [ux, uy] = point(unfused);
  const auto [fx, fy] = point(fused);
  p.series.push_back({"unfused chain (FP32, predicted)", {{ux, uy}}, "points pt 7 ps 2", {"unfused chain"}});
  p.series.push_back({"fused chain (FP32, predicted)", {{fx, fy}}, "points pt 9 ps 2", {"fused chain"}});
  // Fusion moves the point up the slope; the time it saves is the ratio of the predicted times.
  const double ratio = lab03::predicted_time_s(unfused, g, rooflab::DType::fp32) /
                       lab03::predicted_time_s(fused, g, rooflab::DType::fp32);
  p.arrows.push_back({ux, uy, fx, fy, fmt::format("fused: {:.2f}x less time", ratio)});
  rooflab::grading::save_plot(p, "lab03-roofline-datasheet");
}
