// Lab 07 graders: decode floors and batching for every model in data/models.json on every GPU in
// data/gpus.json, random batches and contexts, and the linear layer's intensity against each ridge point.
#include "lab.hpp"

#include <rooflab/testing/grading.hpp>
#include <rooflab/testing/plot.hpp>
#include <rooflab/testing/random.hpp>
#include <rooflab/specs.hpp>
#include <rooflab/testing/synthetic.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace {

using rooflab::DType;
using rooflab::grading::near;
using rooflab::grading::same;

constexpr rooflab::Tolerance kRel{0.0, 1e-9};

// Computed here from the data, independently of answers.cpp.
double floor_s(const rooflab::ModelSpec& m, const rooflab::GpuSpec& g, double batch, double context, double wb,
               double kvb, DType type) {
  const double bytes = m.params_b * 1e9 * wb + batch * context * 2.0 * m.layers * m.kv_heads * m.head_dim * kvb;
  const double flops = 2.0 * m.active_params_b.value_or(m.params_b) * 1e9 * batch;
  return std::max(bytes / (g.bandwidth_gbps * 1e9), flops / rooflab::peak_flops(g, type).value());
}
double intensity(double i, double o, double b, double e) { return 2 * b * i * o / ((i * o + b * i + b * o) * e); }
double first_batch(double i, double o, double e, double need) {
  for (double b = 1; b <= 1e6; ++b) {
    if (intensity(i, o, b, e) >= need) return b;
  }
  return 0;
}

}  // namespace

ROOFLAB_TEST(Lab07Analytic, DecodeFloorsOnEveryGpu) {
  rooflab::Rng rng(rooflab::test_seed());
  for (const auto& g : rooflab::graded_gpus()) {
    if (!g.fp16_tflops) continue;  // the compute roof here is FP16 tensor; every listed GPU has one
    for (const auto& m : rooflab::graded_models()) {
      const double wb = rng.below(2) == 0 ? 2.0 : 1.0, kvb = rng.below(2) == 0 ? 2.0 : 1.0;
      const std::size_t batch = 1 + rng.below(256), context = rng.below(32768);
      const std::string at = fmt::format("{} on {}, batch {}, context {}, {}-byte weights, {}-byte cache", m.id, g.id,
                                         batch, context, wb, kvb);
      ROOFLAB_EXPECT(near(lab07::weight_bytes(m, wb), m.params_b * 1e9 * wb, kRel)) << m.id << ": weight bytes";
      const double want = floor_s(m, g, static_cast<double>(batch), static_cast<double>(context), wb, kvb, DType::fp16);
      ROOFLAB_EXPECT(near(lab07::step_floor_s(m, g, batch, context, wb, kvb, DType::fp16), want, kRel)) << at << ": step floor";
      ROOFLAB_EXPECT(near(lab07::tokens_per_s(m, g, batch, context, wb, kvb, DType::fp16), static_cast<double>(batch) / want, kRel))
          << at << ": tokens/s";
      ROOFLAB_EXPECT(near(lab07::moe_batch1_floor_s(m, g, wb),
                          m.active_params_b.value_or(m.params_b) * 1e9 * wb / (g.bandwidth_gbps * 1e9), kRel))
          << m.id << " on " << g.id << ": batch-1 floor from the active parameters";
    }
  }
  // Exercise 3 (docs/sources.md#exercises): a 70B FP16 model at batch 1 on an H100 reads 140 GB a token:
  // about 42 ms, 24 tokens/s; at batch 32 the step costs nearly the same, so 32x the tokens.
  const auto& h100 = rooflab::gpu("h100-sxm");
  const auto& llama70 = rooflab::model("llama-2-70b");
  const double t1 = lab07::step_floor_s(llama70, h100, 1, 0, 2, 2, DType::fp16);
  ROOFLAB_EXPECT(near(t1, 68.98e9 * 2 / 3350e9, kRel)) << "exercise 3: batch 1";
  ROOFLAB_EXPECT(near(lab07::step_floor_s(llama70, h100, 32, 0, 2, 2, DType::fp16), t1, kRel)) << "exercise 3: batch 32";
}

ROOFLAB_TEST(Lab07Analytic, LinearLayerIntensityAndCrossover) {
  rooflab::Rng rng(rooflab::test_seed() + 1);
  for (int i = 0; i < 30; ++i) {
    const std::size_t n_in = 256 + rng.below(16384), n_out = 256 + rng.below(16384), b = 1 + rng.below(1024);
    const double e = i % 2 == 0 ? 2.0 : 1.0;
    ROOFLAB_EXPECT(near(lab07::linear_intensity(n_in, n_out, b, e),
                        intensity(static_cast<double>(n_in), static_cast<double>(n_out), static_cast<double>(b), e), kRel))
        << n_in << " -> " << n_out << " at batch " << b << ", " << e << "-byte elements";
  }
  for (const auto& g : rooflab::graded_gpus()) {
    for (const DType type : {DType::fp16, DType::int8, DType::fp32}) {
      const auto peak = rooflab::peak_flops(g, type);
      if (!peak) continue;
      const double e = type == DType::int8 ? 1.0 : type == DType::fp32 ? 4.0 : 2.0;
      const double ridge = *peak / (g.bandwidth_gbps * 1e9);
      ROOFLAB_EXPECT(same(static_cast<double>(lab07::crossover_batch(4096, 4096, g, type, e)), first_batch(4096, 4096, e, ridge)))
          << g.id << ": crossover of a 4096 -> 4096 layer, " << e << "-byte elements";
      const double f = rng.uniform(0.1, 1.0);
      ROOFLAB_EXPECT(same(static_cast<double>(lab07::batch_for_fraction(4096, 14336, g, type, e, f)),
                          first_batch(4096, 14336, e, f * ridge)))
          << g.id << ": batch for " << f << " of the peak, 4096 -> 14336, " << e << "-byte elements";
    }
  }
  // Exercise 8: a 4096 -> 4096 FP16 layer has intensity about 1 at batch 1 and about 410 at batch 512.
  ROOFLAB_EXPECT(near(lab07::linear_intensity(4096, 4096, 1, 2), intensity(4096, 4096, 1, 2), kRel)) << "exercise 8: batch 1";
  ROOFLAB_EXPECT(near(lab07::linear_intensity(4096, 4096, 512, 2), intensity(4096, 4096, 512, 2), kRel)) << "exercise 8: batch 512";
}

// Tokens/s against batch from the datasheet alone (Llama-3-8B in FP16 on an H100 SXM, context 0 and 4096):
// flat time per step, linear tokens/s, until the batch reaches the ridge. The curves are sampled about 2%
// apart in batch, so the knee shows where it is; the marked batch is where the weights-only step turns
// compute-bound (the model's intensity, 1 FLOP/byte per sequence, reaching the FP16 ridge).
ROOFLAB_TEST(Lab07Plots, TokensPerSecondAgainstBatch) {
  const auto& g = rooflab::gpu("h100-sxm");
  const auto& m = rooflab::model("llama-3-8b");
  rooflab::Plot p{.title = "Decode roofline: " + m.name + " FP16 on the " + g.name,
                  .xlabel = "batch (sequences)",
                  .ylabel = "tokens/s",
                  .logx = true,
                  .logy = true,
                  .xmin = 1,
                  .xmax = 4096,
                  .note = "datasheet roofs: no GPU was measured for this plot"};
  std::vector<std::size_t> batches;
  for (double b = 1; b <= 4096; b = std::max(b + 1, b * 1.02)) batches.push_back(static_cast<std::size_t>(std::round(b)));
  for (const std::size_t context : {std::size_t{0}, std::size_t{4096}}) {
    rooflab::Series s{context == 0 ? "weights only" : "weights + KV at 4096 tokens", {}, "lines"};
    for (const std::size_t b : batches) s.points.emplace_back(static_cast<double>(b), lab07::tokens_per_s(m, g, b, context, 2, 2, DType::fp16));
    p.series.push_back(s);
  }
  const double memory_bound_step = lab07::step_floor_s(m, g, 1, 0, 2, 2, DType::fp16);
  std::size_t knee = 1;
  while (knee < 4096 && lab07::step_floor_s(m, g, knee, 0, 2, 2, DType::fp16) <= memory_bound_step) ++knee;
  p.vlines.emplace_back(static_cast<double>(knee), fmt::format("weights only: compute-bound from batch {}", knee));
  rooflab::grading::save_plot(p, "lab07-tokens-per-second-datasheet");
}
