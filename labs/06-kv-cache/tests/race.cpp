// Lab 06 race check: append and decode attention on a few blocks under the CPU backend's race mode (hints).
// Decode attention merges its warps through shared memory: a missing __syncthreads() shows up here.
#include "kernels.hpp"

#include <rooflab/testing/buffer.hpp>
#include <rooflab/testing/grading.hpp>
#include <rooflab/testing/random.hpp>

#include <cuda_fp16.h>

#include <numeric>
#include <vector>

ROOFLAB_TEST(Lab06Races, NoDataRaces) {
  ASSERT_TRUE(rooflab::emu::race_mode());
  const lab06::PagedCacheLayout layout{.max_blocks = 3, .kv_heads = 2, .head_dim = 64};
  const int batch = 2, heads = 4, blocks = batch * layout.max_blocks;
  const std::vector<int> lengths{40, 17};
  std::vector<int> table(static_cast<std::size_t>(blocks));
  std::iota(table.rbegin(), table.rend(), 0);  // reversed: physical != logical
  const std::size_t pool = static_cast<std::size_t>(blocks) * lab06::kBlockTokens * layout.kv_heads * layout.head_dim;
  std::vector<__half> init(pool);
  const auto values = rooflab::random_floats(pool, 3);
  for (std::size_t i = 0; i < pool; ++i) init[i] = __float2half(values[i]);
  rooflab::DeviceBuffer<__half> k{std::span<const __half>(init)}, v{std::span<const __half>(init)};
  rooflab::DeviceBuffer<int> dtable{std::span<const int>(table)}, dlens{std::span<const int>(lengths)};
  const std::vector<int> seq_of{0, 1}, pos_of{39, 16};
  rooflab::DeviceBuffer<int> dseq{std::span<const int>(seq_of)}, dpos{std::span<const int>(pos_of)};
  const std::size_t row = static_cast<std::size_t>(layout.kv_heads) * layout.head_dim;
  rooflab::DeviceBuffer<__half> k_new{std::span<const __half>(std::vector<__half>(init.begin(), init.begin() + 2 * row))};
  rooflab::DeviceBuffer<__half> q{std::span<const __half>(std::vector<__half>(init.begin(), init.begin() + batch * heads * 64))};
  rooflab::DeviceBuffer<float> workspace(lab06::decode_workspace_bytes(batch, heads, 64, 40) / sizeof(float));
  rooflab::DeviceBuffer<__half> out(static_cast<std::size_t>(batch) * heads * 64);
  const int before = rooflab::emu::races_reported();
  lab06::paged_kv_append(k_new.data(), k_new.data(), dseq.data(), dpos.data(), 2, k.data(), v.data(), dtable.data(),
                         layout, nullptr);
  lab06::paged_decode_attention(q.data(), k.data(), v.data(), dtable.data(), dlens.data(), batch, heads, 40, layout,
                                0.125f, workspace.data(), out.data(), nullptr);
  EXPECT_EQ(rooflab::emu::races_reported(), before) << rooflab::emu::last_race_summary();
}
