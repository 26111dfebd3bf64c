// Lab 02, dry run only: the FLOPs the perf tests time agree with the kernel registry (`rooflab inspect`,
// the handout's counts) at the shape each GPU in data/gpus.json would run. No kernel runs here;
// tests/perf.cpp runs beside it at scaled-down sizes (docs/cpu-mode.md, "Dry runs").
#include "perf_work.hpp"

#include <rooflab/testing/grading.hpp>
#include <rooflab/specs.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <iterator>

namespace {

const rooflab::inspect::KernelDecl& decl(std::string_view variant) {
  return *std::find_if(std::begin(lab02::kKernels), std::end(lab02::kKernels),
                       [&](const auto& k) { return k.variant == variant; });
}

}  // namespace

ROOFLAB_TEST(Lab02DryRun, PerfFlopsMatchTheAnalysis) {
  int checked = 0;
  for (const auto& gpu : rooflab::gpus()) {
    if (!gpu.sms) continue;
    const std::size_t threads = lab02::perf::threads(*gpu.sms);
    const double n = static_cast<double>(threads);
    EXPECT_TRUE(rooflab::grading::same(lab02::perf::fma_fp32_work(threads, lab02::kPerfIterations).flops,
                                       decl("fma_fp32").flops(n)))
        << gpu.id << ": FP32 FMA FLOPs timed vs the registry";
    EXPECT_TRUE(rooflab::grading::same(lab02::perf::fma_half2_work(threads, lab02::kPerfIterations).flops,
                                       decl("fma_half2").flops(n)))
        << gpu.id << ": half2 FMA FLOPs timed vs the registry";
    EXPECT_EQ(threads % lab02::kBlock, 0u) << gpu.id << ": the launcher needs whole blocks";
    ++checked;
  }
  EXPECT_GE(checked, 5) << "too few GPUs with a published SM count to check";
  rooflab::grading::note(fmt::format("perf FLOPs checked against the registry for {} GPUs", checked));
}
