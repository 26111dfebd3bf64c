// Lab 06, dry run only: the bytes the perf tests count agree with the handout's analysis (the reference
// answers.cpp: Q1 and Q11) and with the kernel registry `rooflab inspect` reads, at the batch each GPU in
// data/gpus.json would time. No kernel runs here; tests/perf.cpp runs beside it at scaled-down sizes.
#include "perf_work.hpp"

#include <rooflab/testing/grading.hpp>
#include <rooflab/specs.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <iterator>

ROOFLAB_TEST(Lab06DryRun, PerfWorkMatchesTheAnalysis) {
  const auto& decode = *std::find_if(std::begin(lab06::kKernels), std::end(lab06::kKernels),
                                     [](const auto& k) { return k.variant == "decode"; });
  int checked = 0;
  for (const auto& gpu : rooflab::gpus()) {
    if (!gpu.l2_mb) continue;
    const auto lens = lab06::perf::lengths(static_cast<std::size_t>(*gpu.l2_mb * (1 << 20)), 1.0);
    double tokens = 0;
    for (const std::size_t len : lens) tokens += static_cast<double>(len);
    const auto work = lab06::perf::decode_work(lens);
    const std::string at = fmt::format("{} ({} sequences, {:.0f} tokens)", gpu.id, lens.size(), tokens);
    EXPECT_TRUE(rooflab::grading::same(work.bytes(), lab06::decode_attention_bytes(lens, lab06::perf::kKvHeads,
                                                                                   lab06::perf::kHeadDim, 2)))
        << at << ": decode bytes vs Q11";
    EXPECT_TRUE(rooflab::grading::same(work.bytes(), decode.bytes(tokens))) << at << ": decode bytes vs the registry";
    EXPECT_GE(work.bytes(), 4.0 * *gpu.l2_mb * (1 << 20)) << at << ": the cache must be at least 4x the L2";
    for (const std::size_t len : lens) EXPECT_NE(len % lab06::kBlockTokens, 0u) << at << ": a length fills its last block";
    ++checked;
  }
  // Q1 for the layer the perf tests model: 8 KV heads of 128, FP16, one layer.
  rooflab::ModelSpec layer;
  layer.layers = 1;
  layer.kv_heads = lab06::perf::kKvHeads;
  layer.head_dim = lab06::perf::kHeadDim;
  EXPECT_TRUE(rooflab::grading::same(lab06::kv_bytes_per_token(layer, 2), decode.bytes(1.0))) << "Q1 vs the registry";
  EXPECT_GE(checked, 5) << "too few GPUs with a published L2 to check";
  rooflab::grading::note(fmt::format("perf work checked against the analysis for {} GPUs", checked));
}
