// Lab 06 graders: sizing the KV cache for every model in data/models.json on every GPU in data/gpus.json,
// with random batches and contexts, and paging's waste for random sequence lengths.
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

using rooflab::grading::near;
using rooflab::grading::same;

constexpr rooflab::Tolerance kRel{0.0, 1e-9};
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// The element sizes a KV cache is stored in: FP16/BF16, then INT8/FP8.
constexpr double kElemBytes[] = {2.0, 1.0};

// Computed here from the data, independently of answers.cpp.
double per_token(const rooflab::ModelSpec& m, double e) { return 2.0 * m.layers * m.kv_heads * m.head_dim * e; }
double cached(const rooflab::ModelSpec& m, std::size_t context) {
  return static_cast<double>(m.sliding_window ? std::min<std::size_t>(context, *m.sliding_window) : context);
}
double free_bytes(const rooflab::ModelSpec& m, const rooflab::GpuSpec& g, double weight_bytes, double reserve_gb) {
  return g.memory_gb * 1e9 - m.params_b * 1e9 * weight_bytes - reserve_gb * 1e9;
}

struct Case {
  std::size_t batch, context;
};
std::vector<Case> cases() {
  rooflab::Rng rng(rooflab::test_seed());
  std::vector<Case> out{{1, 1}, {32, 4096}, {1, 32768}};  // includes a context past Mistral's window
  for (int i = 0; i < 12; ++i) out.push_back({1 + rng.below(256), 1 + rng.below(131072)});
  return out;
}

}  // namespace

ROOFLAB_TEST(Lab06Analytic, BytesPerTokenSequenceAndBatch) {
  for (const auto& m : rooflab::graded_models()) {
    for (const double e : kElemBytes) {
      ROOFLAB_EXPECT(near(lab06::kv_bytes_per_token(m, e), per_token(m, e), kRel)) << m.id << ", " << e << "-byte elements: bytes per token";
      for (const auto& c : cases()) {
        const std::string at = fmt::format("{}, {}-byte elements, batch {}, context {}", m.id, e, c.batch, c.context);
        ROOFLAB_EXPECT(near(lab06::kv_gb_per_sequence(m, c.context, e), cached(m, c.context) * per_token(m, e) / 1e9, kRel))
            << at << ": GB per sequence";
        ROOFLAB_EXPECT(near(lab06::kv_gib_for_batch(m, c.batch, c.context, e),
                            static_cast<double>(c.batch) * cached(m, c.context) * per_token(m, e) / kGiB, kRel))
            << at << ": GiB for the batch";
      }
    }
  }
}

ROOFLAB_TEST(Lab06Analytic, GroupedQueryAttentionAndWindows) {
  for (const auto& m : rooflab::graded_models()) {
    ROOFLAB_EXPECT(near(lab06::gqa_saving(m), static_cast<double>(m.heads) / m.kv_heads, kRel)) << m.id << ": GQA saving";
    for (const auto& c : cases()) {
      ROOFLAB_EXPECT(same(static_cast<double>(lab06::tokens_cached(m, c.context)), cached(m, c.context)))
          << m.id << ", context " << c.context << ": tokens cached";
    }
  }
}

ROOFLAB_TEST(Lab06Analytic, WhatFitsOnEveryGpu) {
  rooflab::Rng rng(rooflab::test_seed() + 6);
  for (const auto& g : rooflab::graded_gpus()) {
    for (const auto& m : rooflab::graded_models()) {
      for (const auto& c : cases()) {
        const double weight_bytes = rng.below(2) == 0 ? 2.0 : 1.0, e = kElemBytes[rng.below(2)];
        const double reserve = rng.uniform(0.0, 4.0);
        const double left = free_bytes(m, g, weight_bytes, reserve);
        const std::string at = fmt::format("{} on {}, {}-byte weights, {}-byte cache, {:.2f} GB reserve", m.id, g.id,
                                           weight_bytes, e, reserve);
        const double batch = left <= 0 ? 0 : std::floor(left / (cached(m, c.context) * per_token(m, e)));
        ROOFLAB_EXPECT(same(static_cast<double>(lab06::max_batch(m, g, c.context, weight_bytes, e, reserve)), batch))
            << at << ", context " << c.context << ": largest batch";
        double context = left <= 0 ? 0 : std::floor(left / (static_cast<double>(c.batch) * per_token(m, e)));
        if (m.sliding_window && context >= *m.sliding_window) context = static_cast<double>(lab06::kUnlimited);
        ROOFLAB_EXPECT(same(static_cast<double>(lab06::max_context(m, g, c.batch, weight_bytes, e, reserve)), context))
            << at << ", batch " << c.batch << ": longest context";
        ROOFLAB_EXPECT(near(lab06::kv_share_of_gpu(m, g, c.batch, c.context, e),
                            static_cast<double>(c.batch) * cached(m, c.context) * per_token(m, e) / (g.memory_gb * 1e9), kRel))
            << at << ", batch " << c.batch << ", context " << c.context << ": share of the GPU";
      }
    }
  }
  // Exercise 6 (docs/sources.md#exercises): a Llama-70B-class cache in FP16 is 320 KiB per token, and a
  // batch of 32 at 4096 tokens takes more than half of an 80 GB H100.
  const auto& llama70 = rooflab::model("llama-2-70b");
  ROOFLAB_EXPECT(same(lab06::kv_bytes_per_token(llama70, 2), 320 * 1024.0)) << "exercise 6: bytes per token";
  ROOFLAB_EXPECT(near(lab06::kv_share_of_gpu(llama70, rooflab::gpu("h100-sxm"), 32, 4096, 2), 32 * 4096 * 327680.0 / 80e9, kRel))
      << "exercise 6: share of an 80 GB H100";
}

ROOFLAB_TEST(Lab06Analytic, BlocksAndFragmentation) {
  rooflab::Rng rng(rooflab::test_seed() + 9);
  for (const auto& m : rooflab::graded_models()) {
    for (int i = 0; i < 8; ++i) {
      const double budget = rng.uniform(0.5, 60.0), e = kElemBytes[i % 2];
      const std::size_t block = std::size_t{8} << rng.below(3);  // 8, 16 or 32 tokens
      ROOFLAB_EXPECT(same(static_cast<double>(lab06::blocks_for_budget_gib(m, budget, block, e)),
                          std::floor(budget * kGiB / (static_cast<double>(block) * per_token(m, e)))))
          << m.id << ", " << budget << " GiB, blocks of " << block;
    }
  }
  // The public check case (docs/sources.md#model-configurations): Llama-3-8B in BF16 with 11.12 GiB of cache
  // and 16-token blocks. vLLM printed 5691 blocks; 11.12 is itself rounded, so the count from it is a few
  // blocks higher (the handout works this through).
  const auto blocks = lab06::blocks_for_budget_gib(rooflab::model("llama-3-8b"), 11.12, 16, 2);
  ROOFLAB_EXPECT(near(static_cast<double>(blocks), 5691, {4.0, 0.0})) << "the vLLM check case: blocks for 11.12 GiB";
  for (int i = 0; i < 20; ++i) {
    const std::size_t max_len = 64 + rng.below(8192), block = std::size_t{8} << rng.below(3);
    std::vector<std::size_t> lengths(1 + rng.below(40));
    std::size_t contiguous = 0, paged = 0;
    for (auto& len : lengths) {
      len = 1 + rng.below(max_len);
      contiguous += max_len - len;
      paged += (len + block - 1) / block * block - len;
    }
    const auto w = lab06::reserved_but_unused(lengths, max_len, block);
    ROOFLAB_EXPECT(same(static_cast<double>(w.contiguous_tokens), static_cast<double>(contiguous)))
        << lengths.size() << " sequences up to " << max_len << ": contiguous waste";
    ROOFLAB_EXPECT(same(static_cast<double>(w.paged_tokens), static_cast<double>(paged)))
        << lengths.size() << " sequences, blocks of " << block << ": paged waste";
  }
  for (int i = 0; i < 20; ++i) {
    std::vector<std::size_t> lengths(1 + rng.below(64));
    double tokens = 0;
    for (auto& len : lengths) tokens += static_cast<double>(len = 1 + rng.below(20000));
    const int kv_heads = 1 << rng.below(4), head_dim = rng.below(2) == 0 ? 64 : 128;
    const double e = kElemBytes[i % 2];
    ROOFLAB_EXPECT(near(lab06::decode_attention_bytes(lengths, kv_heads, head_dim, e), 2 * tokens * kv_heads * head_dim * e, kRel))
        << lengths.size() << " sequences, " << kv_heads << " KV heads, head dim " << head_dim << ": decode bytes";
  }
}

// KV cache against context for every model, with each GPU's room after the weights (FP16 weights, no
// reserve) as a horizontal line: drawn from the data alone, no GPU needed.
ROOFLAB_TEST(Lab06Plots, CacheSizeAgainstContext) {
  rooflab::Plot p{.title = "KV cache of one sequence (FP16) against context",
                  .xlabel = "context (tokens)",
                  .ylabel = "KV cache (GB)",
                  .logx = true,
                  .logy = true,
                  .xmin = 512,
                  .xmax = 131072,
                  .note = "datasheet memory less FP16 weights; no GPU was measured for this plot"};
  // Models whose caches are the same size share a line ("Llama-2-70B, Llama-3-70B"): same curve, one entry.
  std::vector<std::pair<const rooflab::ModelSpec*, std::string>> lines;
  for (const auto& m : rooflab::models()) {
    const auto same = std::find_if(lines.begin(), lines.end(), [&](const auto& l) {
      return l.first->layers * l.first->kv_heads * l.first->head_dim == m.layers * m.kv_heads * m.head_dim &&
             l.first->sliding_window == m.sliding_window;
    });
    if (same == lines.end()) {
      lines.emplace_back(&m, m.name);
    } else {
      same->second += ", " + m.name;
    }
  }
  for (const auto& [m, names] : lines) {
    rooflab::Series s{names, {}, "lines"};
    for (std::size_t c = 512; c <= 131072; c *= 2) s.points.emplace_back(static_cast<double>(c), lab06::kv_gb_per_sequence(*m, c, 2));
    p.series.push_back(s);
  }
  for (const char* id : {"a100-40gb-sxm4", "h100-sxm", "h200-sxm", "l4"}) {
    const auto& g = rooflab::gpu(id);
    const double room = g.memory_gb - rooflab::model("llama-3-8b").params_b * 2;
    rooflab::Series s{fmt::format("{}: room beside Llama-3-8B", g.name), {{512, room}, {131072, room}}, "lines dt 2"};
    p.series.push_back(s);
  }
  rooflab::grading::save_plot(p, "lab06-kv-cache-size");
}
