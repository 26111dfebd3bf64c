// Lab 03, dry run only: the work the perf tests time agrees with the handout's analysis (the reference
// answers.cpp: Q4, Q9-Q11) and with the kernel registry `rooflab inspect` reads, at the shape each GPU in
// data/gpus.json would run, so the figures a student is graded on and the ones the handout teaches cannot
// disagree. No kernel runs here; tests/perf.cpp runs beside it at scaled-down sizes (docs/cpu-mode.md).
#include "perf_work.hpp"

#include <rooflab/testing/grading.hpp>
#include <rooflab/specs.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <iterator>

namespace {

const rooflab::inspect::KernelDecl& decl(std::string_view variant) {
  return *std::find_if(std::begin(lab03::kKernels), std::end(lab03::kKernels),
                       [&](const auto& k) { return k.variant == variant; });
}

}  // namespace

ROOFLAB_TEST(Lab03DryRun, PerfWorkMatchesTheAnalysis) {
  int checked = 0;
  for (const auto& gpu : rooflab::gpus()) {
    if (!gpu.l2_mb) continue;
    const auto [rows, cols] = lab03::perf::shape(static_cast<std::size_t>(*gpu.l2_mb * (1 << 20)), 1.0);
    const std::size_t n = rows * cols;
    const double dn = static_cast<double>(n);
    const std::string at = fmt::format("{} ({} x {})", gpu.id, rows, cols);
    // The chains as a whole: Q9, Q10 and the speedup Q11 predicts.
    const auto unfused = lab03::perf::unfused_work(rows, cols), fused = lab03::perf::fused_work(rows, cols);
    const auto q9 = lab03::chain_unfused(rows, cols, 4), q10 = lab03::chain_fused(rows, cols, 4);
    EXPECT_TRUE(rooflab::grading::same(unfused.bytes(), q9.bytes)) << at << ": unfused chain bytes vs Q9";
    EXPECT_TRUE(rooflab::grading::same(unfused.flops, q9.flops)) << at << ": unfused chain FLOPs vs Q9";
    EXPECT_TRUE(rooflab::grading::same(fused.bytes(), q10.bytes)) << at << ": fused chain bytes vs Q10";
    EXPECT_TRUE(rooflab::grading::same(fused.flops, q10.flops)) << at << ": fused chain FLOPs vs Q10";
    EXPECT_TRUE(rooflab::grading::near(unfused.bytes() / fused.bytes(), lab03::fusion_speedup(rows, cols, 4),
                                       {0, 1e-12}))
        << at << ": the speedup the perf test predicts vs Q11";
    // The unfused kernels one by one add up to the chain, and each agrees with Q4 and the registry.
    const auto bias = lab03::perf::bias_add_work(rows, cols), gelu = lab03::perf::gelu_work(n),
               residual = lab03::perf::residual_add_work(n);
    EXPECT_TRUE(rooflab::grading::same(bias.bytes() + gelu.bytes() + residual.bytes(), q9.bytes))
        << at << ": the three timed kernels' bytes do not add up to Q9's chain";
    EXPECT_TRUE(rooflab::grading::same(gelu.bytes(), lab03::gelu(n, 4).bytes)) << at << ": GELU bytes vs Q4";
    EXPECT_TRUE(rooflab::grading::same(gelu.flops, lab03::gelu(n, 4).flops)) << at << ": GELU FLOPs vs Q4";
    EXPECT_TRUE(rooflab::grading::same(gelu.bytes(), decl("gelu").bytes(dn))) << at << ": GELU vs the registry";
    EXPECT_TRUE(rooflab::grading::same(residual.bytes(), decl("residual_add").bytes(dn)))
        << at << ": residual add vs the registry";
    EXPECT_TRUE(rooflab::grading::same(fused.flops, decl("fused").flops(dn))) << at << ": fused FLOPs vs the registry";
    const auto sweep = lab03::perf::sweep_work(n, 64);
    EXPECT_TRUE(rooflab::grading::same(sweep.flops, decl("sweep (k = 64)").flops(dn))) << at << ": sweep FLOPs";
    EXPECT_TRUE(rooflab::grading::same(sweep.bytes(), decl("sweep (k = 64)").bytes(dn))) << at << ": sweep bytes";
    ++checked;
  }
  EXPECT_GE(checked, 5) << "too few GPUs with a published L2 to check";
  rooflab::grading::note(fmt::format("perf work checked against the analysis for {} GPUs", checked));
}
