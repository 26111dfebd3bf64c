// Lab 07, dry run only: the work the perf tests count agrees with the handout's analysis (the reference
// answers.cpp: Q1 and Q4) and with the kernel registry `rooflab inspect` reads, at the shapes each GPU in
// data/gpus.json would time. No kernel runs here; tests/perf.cpp runs beside it at scaled-down sizes.
#include "perf_work.hpp"

#include <rooflab/testing/grading.hpp>
#include <rooflab/specs.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <iterator>

ROOFLAB_TEST(Lab07DryRun, PerfWorkMatchesTheAnalysis) {
  const auto decl = [](std::string_view variant) -> const rooflab::inspect::KernelDecl& {
    return *std::find_if(std::begin(lab07::kKernels), std::end(lab07::kKernels), [&](const auto& k) { return k.variant == variant; });
  };
  int checked = 0;
  for (const auto& gpu : rooflab::gpus()) {
    if (!gpu.l2_mb) continue;
    const int side = lab07::perf::gemv_side(static_cast<std::size_t>(*gpu.l2_mb * (1 << 20)), 1.0);
    const double weights = 2.0 * side * side;
    EXPECT_GE(weights, 4.0 * *gpu.l2_mb * (1 << 20)) << gpu.id << ": the GEMV's weights must be at least 4x the L2";
    for (const int batch : {1, 8, 64}) {
      const auto w = lab07::perf::linear_work(side, side, batch);
      const std::string at = fmt::format("{} ({} x {}, batch {})", gpu.id, side, side, batch);
      EXPECT_TRUE(rooflab::grading::near(w.flops / w.bytes(), lab07::linear_intensity(side, side, batch, 2), {0, 1e-12}))
          << at << ": intensity vs Q4";
      const auto& d = decl(batch == 8 ? "batched (B = 8)" : "gemv");
      if (batch != 64) {
        EXPECT_TRUE(rooflab::grading::same(w.flops, d.flops(side * static_cast<double>(side)))) << at << ": FLOPs vs the registry";
        // The registry counts the weights only; the timed work adds the inputs and outputs.
        EXPECT_TRUE(rooflab::grading::same(w.bytes() - 2.0 * batch * 2 * side, d.bytes(side * static_cast<double>(side))))
            << at << ": weight bytes vs the registry";
      }
    }
    ++checked;
  }
  // The block the decode-step test times holds Llama-3-8B's linear weights of one layer: Q1's weights less the
  // embeddings, norms and head, spread over 32 layers.
  double block = 0;
  for (const auto& l : lab07::perf::kBlockLayers) block += 2.0 * l.n * l.k;
  const auto& m = rooflab::model("llama-3-8b");
  const double embeddings = 2.0 * 2 * m.vocab * m.hidden;  // input embedding and output head, FP16
  EXPECT_TRUE(rooflab::grading::near(block * m.layers + embeddings, lab07::weight_bytes(m, 2), {0, 0.01}))
      << "32 blocks plus the embeddings should be Llama-3-8B's weights (Q1) within 1%";
  EXPECT_GE(checked, 5) << "too few GPUs with a published L2 to check";
  rooflab::grading::note(fmt::format("perf work checked against the analysis for {} GPUs", checked));
}
