// Lab 04, dry run only: the work the perf tests time agrees with the handout's analysis (the reference
// answers.cpp: Q1, Q2) and with the kernel registry `rooflab inspect` reads, at the shapes a GPU runs, so the
// figures a student is graded on and the ones the handout teaches cannot disagree. No kernel runs here;
// tests/perf.cpp runs beside it at scaled-down sizes (docs/cpu-mode.md).
#include "perf_work.hpp"

#include <rooflab/testing/grading.hpp>

#include <fmt/format.h>

ROOFLAB_TEST(Lab04DryRun, PerfWorkMatchesTheAnalysis) {
  const auto shapes = lab04::perf::shapes(true);
  EXPECT_EQ(shapes[0].m, 4096u);
  EXPECT_NE(shapes[1].m % 128, 0u) << "the second graded shape must leave a tail in every 128 x 128 tile";
  for (const auto& s : shapes) {
    const std::string at = fmt::format("{} x {} x {}", s.m, s.n, s.k);
    for (std::size_t in : {std::size_t{4}, std::size_t{2}}) {
      const auto w = lab04::perf::gemm_work(s, in);
      EXPECT_TRUE(rooflab::grading::same(w.flops, lab04::flops(s))) << at << ": FLOPs vs Q1";
      EXPECT_TRUE(rooflab::grading::same(w.bytes(), lab04::ideal_bytes(s, in, 4))) << at << ": bytes vs Q2";
    }
  }
  // The registry's FLOPs and tile bytes (the plot's intensities) agree with Q1 and Q4 at 4096^3.
  const lab04::Shape sq{4096, 4096, 4096};
  for (const auto& k : lab04::kKernels) {
    EXPECT_TRUE(rooflab::grading::same(k.flops(4096), lab04::flops(sq))) << k.variant;
  }
  const auto tile_of = [](std::string_view variant) -> std::size_t {
    if (variant == "1 naive" || variant == "2 coalesced") return 1;
    if (variant == "3 smem tiled") return lab04::kNaiveTile;
    return lab04::kBlockM;
  };
  for (const auto& k : lab04::kKernels) {
    const std::size_t in = k.dtype == rooflab::DType::fp32 ? 4 : 2, t = tile_of(k.variant);
    EXPECT_TRUE(rooflab::grading::near(k.bytes(4096), lab04::tiled_bytes(sq, t, t, in, 4), {0, 1e-12}))
        << k.variant << ": registry bytes vs Q4";
  }
}
