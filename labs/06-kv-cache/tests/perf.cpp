// Lab 06 graders on the GPU: decode attention over a batch whose cache is at least 4x the L2, scored against
// the copy ceiling on the bytes it must read; its time follows the KV heads, not the query heads; and the
// plot of its bandwidth against context.
//
// The same file runs as a dry run on the CPU backend (sizes scaled by rooflab::perf_scale(), timings
// meaningless): tests/dryrun.cpp and docs/cpu-mode.md say what that proves.
#include "kernels.hpp"
#include "perf_work.hpp"

#include <rooflab/testing/buffer.hpp>
#include <rooflab/testing/calibration.hpp>
#include <rooflab/testing/device.hpp>
#include <rooflab/testing/device_info.hpp>
#include <rooflab/testing/grading.hpp>
#include <rooflab/testing/plot.hpp>
#include <rooflab/specs.hpp>
#include <rooflab/testing/timed_data.hpp>
#include <rooflab/testing/timing.hpp>

#include <cuda_fp16.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
#include <vector>

namespace {

using lab06::perf::kHeadDim;

// A paged batch for timing: blocks handed out in a scattered (strided) order, random K, V and queries
// (rooflab/testing/timed_data.hpp), and the output checked after timing against the reference at elements picked
// at random: a kernel that skips tokens or heads, or recognises its inputs, cannot earn speed points.
struct Batch {
  Batch(const std::vector<std::size_t>& lens, int kv_heads, int group, std::uint64_t salt)
      : heads(kv_heads * group) {
    layout.kv_heads = kv_heads;
    layout.head_dim = kHeadDim;
    for (const std::size_t len : lens) {
      lengths.push_back(static_cast<int>(len));
      layout.max_blocks = std::max(layout.max_blocks, static_cast<int>((len + lab06::kBlockTokens - 1) / lab06::kBlockTokens));
    }
    const std::size_t blocks = lens.size() * static_cast<std::size_t>(layout.max_blocks);
    table.resize(blocks);
    // Logical block j of sequence b -> a physical block 7919 apart (a prime): neighbours are never adjacent.
    for (std::size_t i = 0; i < blocks; ++i) table[i] = static_cast<int>(i * 7919 % blocks);
    if (std::gcd(blocks, std::size_t{7919}) != 1) std::iota(table.begin(), table.end(), 0);
    const std::size_t pool = blocks * lab06::kBlockTokens * kv_heads * kHeadDim;
    k.emplace(pool, 3 * salt);
    v.emplace(pool, 3 * salt + 1);
    // Queries in [-2, 2): scores spread over a few units, so the softmax weights tokens unevenly.
    q.emplace(lengths.size() * heads * kHeadDim, 3 * salt + 2, -2.0f, 2.0f);
    block_table = rooflab::DeviceBuffer<int>(std::span<const int>(table));
    seq_lens = rooflab::DeviceBuffer<int>(std::span<const int>(lengths));
    max_len = *std::max_element(lengths.begin(), lengths.end());
    workspace = rooflab::DeviceBuffer<float>(
        lab06::decode_workspace_bytes(static_cast<int>(lengths.size()), heads, kHeadDim, max_len) / sizeof(float));
    out = rooflab::DeviceBuffer<__half>(lengths.size() * heads * kHeadDim);
  }
  double scale() const { return 1.0 / std::sqrt(static_cast<double>(kHeadDim)); }
  void run(cudaStream_t s) {
    lab06::paged_decode_attention(q->device.data(), k->device.data(), v->device.data(), block_table.data(),
                                  seq_lens.data(), static_cast<int>(lengths.size()), heads, max_len, layout,
                                  static_cast<float>(scale()), workspace.data(), out.data(), s);
  }
  // Output element i is (sequence, query head, dim); the reference gathers that head's K and V rows from the
  // pools through the block table, as the kernel must.
  // At `count` elements drawn at random (and the first and last); a check after every sample takes a few.
  ::testing::AssertionResult output_is_right(std::size_t count = 64) const {
    const auto at = rooflab::sampled_indices(out.size(), count);
    const int group = heads / layout.kv_heads;
    const auto want = [&](std::size_t i) {
      const int b = static_cast<int>(i / (heads * kHeadDim)), h = static_cast<int>(i / kHeadDim % heads);
      const int len = lengths[b];
      std::vector<float> kr(static_cast<std::size_t>(len) * kHeadDim), vr(kr.size());
      for (int p = 0; p < len; ++p) {
        const int block = table[static_cast<std::size_t>(b) * layout.max_blocks + p / lab06::kBlockTokens];
        for (int d = 0; d < kHeadDim; ++d) {
          const std::size_t from = lab06::pool_index(layout, block, p % lab06::kBlockTokens, h / group, d);
          kr[static_cast<std::size_t>(p) * kHeadDim + d] = k->host(from);
          vr[static_cast<std::size_t>(p) * kHeadDim + d] = v->host(from);
        }
      }
      std::vector<double> o(kHeadDim);
      const auto query = q->host_range(i / kHeadDim * kHeadDim, kHeadDim);
      lab06::attention_ref(query.data(), kr.data(), vr.data(), len, kHeadDim, scale(), o.data());
      return o[i % kHeadDim];
    };
    auto r = rooflab::timed_output_matches("paged_decode_attention", out, at, want, {2e-3, 1e-2});
    if (!r) r << " (batch of " << lengths.size() << ", " << heads << " query heads)";
    return r;
  }

  // What a timed launch must read (the dry run counts it): the queries, and the pools' blocks of the batch's
  // tokens (a quarter of each pool at least: sequences shorter than the longest leave their tail blocks unused).
  std::vector<rooflab::TimedRead> inputs() const {
    return {rooflab::timed_input(*q, "queries"), rooflab::timed_input(*k, "K pool", 0, 0, 0.25),
            rooflab::timed_input(*v, "V pool", 0, 0, 0.25)};
  }
  int heads;
  std::vector<int> lengths, table;
  lab06::PagedCacheLayout layout;
  int max_len = 0;
  std::optional<rooflab::TimedInput<__half>> k, v, q;
  rooflab::DeviceBuffer<__half> out;
  rooflab::DeviceBuffer<int> block_table, seq_lens;
  rooflab::DeviceBuffer<float> workspace;
};

// Every timed launch must start a kernel of the lab's registry (the dry run checks it).
const rooflab::BenchOptions kTimed{.kernels = rooflab::registry_kernels(lab06::kKernels)};
// Outputs checked after every sample at a few elements (rooflab::BenchOptions::check_each_sample), after timing at more.
constexpr std::size_t kEachSample = 2;

std::vector<std::size_t> perf_lengths() { return lab06::perf::lengths(rooflab::query_device().l2_bytes); }

}  // namespace

ROOFLAB_TEST(Lab06Perf, DecodeAttentionOnTheMemoryRoof) {
  ROOFLAB_REQUIRE_GPU();
  const auto lens = perf_lengths();
  Batch batch(lens, lab06::perf::kKvHeads, 4, 1);
  batch.out.poison();
  const auto m = rooflab::benchmark([&](cudaStream_t s) { batch.run(s); }, lab06::perf::decode_work(lens),
                                    rooflab::checking_each_sample(kTimed, [&] { return batch.output_is_right(kEachSample); }),
                                    {rooflab::timed_output(batch.out)}, batch.inputs());
  ASSERT_TRUE(batch.output_is_right());
  const double total = std::accumulate(lens.begin(), lens.end(), 0.0, [](double a, std::size_t b) { return a + static_cast<double>(b); });
  rooflab::grading::note(fmt::format("decode attention, 16 sequences of {:.0f} tokens on average (GQA 4, 8 KV heads of 128): "
                                     "{:.1f} MB of KV in {:.1f} us, {:.0f} GB/s",
                                     total / 16, m.work.bytes() / 1e6, m.min_s * 1e6, m.best_gbps()));
  rooflab::grading::award(ROOFLAB_LAB_ID, "decode", m.work.bytes() / m.min_s);
}

ROOFLAB_TEST(Lab06Perf, TimeFollowsKvHeadsNotQueryHeads) {
  ROOFLAB_REQUIRE_GPU();
  // The same cache (8 KV heads) read by 8 query heads (MHA-like) and by 64 (GQA 8): the bytes are the same,
  // so a kernel that reads each KV row once for its whole group takes about the same time.
  const auto lens = perf_lengths();
  Batch one(lens, lab06::perf::kKvHeads, 1, 2), eight(lens, lab06::perf::kKvHeads, 8, 3);
  // Each output checked as soon as its own timing ends: a launcher that finishes one batch's output during the
  // next batch's untimed warm-up would pass a check made after both.
  const auto t1 = rooflab::benchmark([&](cudaStream_t s) { one.run(s); }, lab06::perf::decode_work(lens),
                                     rooflab::checking_each_sample(kTimed, [&] { return one.output_is_right(kEachSample); }),
                                     {rooflab::timed_output(one.out)}, one.inputs());
  ASSERT_TRUE(one.output_is_right());
  const auto t8 = rooflab::benchmark([&](cudaStream_t s) { eight.run(s); }, lab06::perf::decode_work(lens),
                                     rooflab::checking_each_sample(kTimed, [&] { return eight.output_is_right(kEachSample); }),
                                     {rooflab::timed_output(eight.out)}, eight.inputs());
  ASSERT_TRUE(eight.output_is_right());
  // GQA 1 is the student's own kernel: slowed on purpose it would pass a slow GQA 8. It counts as no slower than
  // its KV bytes at the copy ceiling over the rule's share (thresholds.json "student_baseline").
  const double roof_s = t1.work.bytes() / rooflab::grading::ceiling_in_force(rooflab::Ceiling::copy_bandwidth);
  const double ratio = t8.min_s / rooflab::grading::capped_baseline_s(ROOFLAB_LAB_ID, "gqa_time_ratio", t1.min_s, roof_s);
  const double limit = rooflab::threshold(ROOFLAB_LAB_ID, "gqa_time_ratio").ratio_max();
  rooflab::grading::note(fmt::format("GQA 8 takes {:.2f}x the time of GQA 1 on the same KV bytes (limit {:.2f}x)", ratio, limit));
  EXPECT_TRUE(rooflab::grading::speed_verdict(ratio <= limit, "time(GQA 8) / time(GQA 1) <= limit"))
      << "eight query heads per KV head should cost little more than one: read each K and V row once for the group";
}

ROOFLAB_TEST(Lab06Perf, BandwidthAgainstContext) {
  ROOFLAB_REQUIRE_GPU();
  // Informational: the achieved bandwidth for one context at a time, 16 sequences each, against the copy
  // ceiling. Short contexts are too little work to fill the GPU; long ones should sit near the ceiling.
  const auto info = rooflab::query_device();
  const double ceiling = rooflab::ceilings().copy_gbps;
  rooflab::Series measured{"your decode attention (GQA 4, 8 KV heads, 16 sequences)", {}, "linespoints"};
  std::string table;
  for (std::size_t context = 256; context <= 32768; context *= rooflab::kDryRun ? 8 : 2) {
    // (A dry run keeps the contexts distinct but tiny: 18 to 145 tokens.) A plot, not a grade: the output is
    // checked after timing only (one reference element costs a whole sequence's K and V on the host, which at
    // 32768 tokens would be most of a second per sample).
    const std::vector<std::size_t> lens(16, rooflab::kDryRun ? 17 + (context >> 8) : context);
    Batch batch(lens, lab06::perf::kKvHeads, 4, 4 + context);
    const auto m = rooflab::benchmark([&](cudaStream_t s) { batch.run(s); }, lab06::perf::decode_work(lens),
                                      rooflab::expecting_kernels({.max_seconds = 0.5}, kTimed.kernels),
                                      {rooflab::timed_output(batch.out)}, batch.inputs());
    ASSERT_TRUE(batch.output_is_right());
    measured.points.emplace_back(static_cast<double>(lens[0]), m.best_gbps());
    table += fmt::format("  context {:>6}: {:>7.0f} GB/s ({:.0f}% of the copy ceiling)\n", lens[0], m.best_gbps(),
                         100 * m.best_gbps() / ceiling);
  }
  rooflab::grading::note("decode attention bandwidth against context:\n" + table);
  rooflab::Plot p{.title = "Decode attention bandwidth on " + info.name,
                  .xlabel = "context (tokens per sequence)",
                  .ylabel = "GB/s",
                  .logx = true,
                  .y_from_zero = true};
  p.series.push_back(measured);
  p.hlines.push_back({ceiling, "copy ceiling (measured)"});
  rooflab::grading::save_plot(p, "lab06-decode-bandwidth");
}
