// Lab 06 traffic hints: paged decode attention on the CPU backend with its global loads and stores recorded
// and counted as a GPU counts them (warp requests, 32-byte sectors, a modelled L2 and DRAM; docs/cpu-mode.md
// "Memory traffic"). Decode is bound by the KV cache's bytes, so the lesson is that each cached K and V byte
// comes from DRAM once per step, however many query heads share its KV head (GQA) and however the pages lie
// in the pool. The test counts every launch of one call (each starting with an empty L2) and compares the
// modelled DRAM bytes with the bytes tests/perf_work.hpp counts (every K and V byte of the batch's tokens
// once) plus the queries and outputs; a split kernel's workspace round trip is a few percent more. Hints: no
// points (rubric.json), and no GPU needed.
//
// Shape: 4 sequences of 77 to 1000 tokens (not multiples of the 16-token page) whose pages are scattered over
// the pool, 8 KV heads of 128, 4 query heads per KV head, with the modelled L2 a quarter of the KV bytes (the
// graded batch is at least 4x the L2, tests/perf_work.hpp).
#include "kernels.hpp"
#include "perf_work.hpp"

#include <rooflab/half.hpp>
#include <rooflab/testing/buffer.hpp>
#include <rooflab/testing/grading.hpp>
#include <rooflab/testing/random.hpp>
#include <rooflab/testing/traffic.hpp>

#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numeric>
#include <span>
#include <vector>

namespace {

rooflab::DeviceBuffer<__half> random_halves(std::size_t n, std::uint64_t seed) {
  return rooflab::DeviceBuffer<__half>{std::span<const __half>(rooflab::to_half(rooflab::random_floats(n, seed)))};
}

}  // namespace

// One decode step moves every K and V byte of the batch once (within 10%, the queries, outputs and any
// workspace included), and every access to the K and V pools fetches only sectors its threads use (the block
// table, a few ints per page, is left out).
ROOFLAB_TEST(Lab06Traffic, EachKvByteReadOnce) {
  const std::vector<int> lengths{300, 1000, 77, 517};
  constexpr int kv_heads = lab06::perf::kKvHeads, head_dim = lab06::perf::kHeadDim, group = 4;
  constexpr int heads = kv_heads * group;
  lab06::PagedCacheLayout layout{.max_blocks = 0, .kv_heads = kv_heads, .head_dim = head_dim};
  for (const int len : lengths) layout.max_blocks = std::max(layout.max_blocks, (len + lab06::kBlockTokens - 1) / lab06::kBlockTokens);
  const std::size_t batch = lengths.size(), blocks = batch * static_cast<std::size_t>(layout.max_blocks);
  // Logical block i -> physical block 37 i mod blocks (37 is prime to 252): neighbours are never adjacent.
  std::vector<int> table(blocks);
  for (std::size_t i = 0; i < blocks; ++i) table[i] = static_cast<int>(i * 37 % blocks);
  std::vector<int> sorted = table;
  std::sort(sorted.begin(), sorted.end());
  ASSERT_TRUE(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end()) << "the block table repeats a block";

  const std::size_t pool = blocks * lab06::kBlockTokens * kv_heads * head_dim;
  auto k = random_halves(pool, 61), v = random_halves(pool, 62), q = random_halves(batch * heads * head_dim, 63);
  rooflab::DeviceBuffer<int> block_table{std::span<const int>(table)}, seq_lens{std::span<const int>(lengths)};
  const int max_len = *std::max_element(lengths.begin(), lengths.end());
  rooflab::DeviceBuffer<float> workspace(
      lab06::decode_workspace_bytes(static_cast<int>(batch), heads, head_dim, max_len) / sizeof(float));
  rooflab::DeviceBuffer<__half> out(batch * heads * head_dim);

  std::vector<std::size_t> lens(lengths.begin(), lengths.end());
  const double kv_bytes = lab06::perf::decode_work(lens, kv_heads).bytes();
  rooflab::traffic::Options options;
  options.l2_bytes = static_cast<std::size_t>(kv_bytes / 4);
  const auto traffic = rooflab::traffic::record_call(
      [&] {
        lab06::paged_decode_attention(q.data(), k.data(), v.data(), block_table.data(), seq_lens.data(),
                                      static_cast<int>(batch), heads, max_len, layout,
                                      static_cast<float>(1.0 / std::sqrt(head_dim)), workspace.data(), out.data(),
                                      nullptr);
      },
      options);
  const double expected = kv_bytes + 2.0 * static_cast<double>(q.size() + out.size());
  const double flops = 4.0 * heads * head_dim * std::accumulate(lens.begin(), lens.end(), 0.0);
  rooflab::traffic::note_summary("paged_decode_attention", traffic, expected, flops);
  EXPECT_TRUE(rooflab::traffic::dram_near(traffic, expected, 0.10));
  EXPECT_TRUE(rooflab::traffic::coalesced_in(traffic, {k.data(), v.data()}));
}
