// Lab 05, dry run only: the work the perf tests count agrees with the handout's analysis (the reference
// answers.cpp: Q1 to Q3) and with the kernel registry `rooflab inspect` reads, at the shape a GPU times and
// at the lengths the plot sweeps. No kernel runs here; tests/perf.cpp runs beside it at scaled-down sizes.
#include "perf_work.hpp"

#include <rooflab/testing/grading.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <stdexcept>
#include <string>
#include <string_view>

ROOFLAB_TEST(Lab05DryRun, PerfWorkMatchesTheAnalysis) {
  const auto graded = lab05::perf::shape(true);
  EXPECT_EQ(graded.len, 4096u);
  EXPECT_EQ(graded.batch_heads, 16u);
  EXPECT_EQ(graded.head_dim, 64u);
  const auto registry = [](std::string_view variant) -> const rooflab::inspect::KernelDecl& {
    const auto* found = std::find_if(std::begin(lab05::kKernels), std::end(lab05::kKernels),
                                     [&](const auto& k) { return k.variant == variant; });
    if (found == std::end(lab05::kKernels)) throw std::logic_error("no kernel labelled " + std::string(variant) + " in lab.hpp");
    return *found;
  };
  for (std::size_t len = 512; len <= 16384; len *= 2) {
    const auto s = lab05::perf::shape(true, len);
    const double n = static_cast<double>(len);
    const std::string at = fmt::format("L = {}", len);
    const auto naive = lab05::perf::naive_work(s), flash = lab05::perf::flash_work(s), soft = lab05::perf::softmax_work(s);
    EXPECT_TRUE(rooflab::grading::same(naive.flops, lab05::flops(s))) << at << ": naive FLOPs vs Q1";
    EXPECT_TRUE(rooflab::grading::same(flash.flops, lab05::flops(s))) << at << ": flash FLOPs vs Q1";
    EXPECT_TRUE(rooflab::grading::same(naive.bytes(), lab05::naive_bytes(s, 2))) << at << ": naive bytes vs Q2";
    EXPECT_TRUE(rooflab::grading::same(flash.bytes(), lab05::flash_bytes(s, 2))) << at << ": flash bytes vs Q3";
    EXPECT_TRUE(rooflab::grading::same(soft.bytes(), registry("softmax").bytes(n))) << at << ": softmax bytes vs the registry";
    EXPECT_TRUE(rooflab::grading::same(flash.bytes(), registry("flash v2 mma").bytes(n))) << at << ": flash bytes vs the registry";
    EXPECT_TRUE(rooflab::grading::same(flash.flops, registry("flash v2 mma").flops(n))) << at << ": flash FLOPs vs the registry";
    EXPECT_TRUE(rooflab::grading::same(2 * flash.bytes(), registry("flash v1 fp32").bytes(n))) << at << ": FP32 flash bytes";
    // The softmax's bytes are the naive path's bytes less the GEMMs' own (Q, K, V, O and one S write, one P read).
    EXPECT_TRUE(rooflab::grading::same(soft.bytes(), naive.bytes() - 2.0 * 16 * (4 * n * 64 + 2 * n * n)))
        << at << ": softmax bytes inside the naive path's";
  }
}
