// Lab 06 static checks (hints; CI requires them of the solutions): no spills in any kernel, and the append
// moves its rows in 128-bit loads and stores.
#include "kernels.hpp"
#include "lab.hpp"
#include "perf_work.hpp"

#include <rooflab/testing/grading.hpp>
#include <rooflab/inspect.hpp>
#include <rooflab/testing/ptx.hpp>
#include <rooflab/testing/static_capture.hpp>

#include <algorithm>

ROOFLAB_INSPECT_KERNELS(lab06::kKernels);
// Inspect at the timed size: 16 sequences of 4180 tokens.
ROOFLAB_INSPECT_TIMED_SIZE(16.0 * 4180);

namespace {
// The decode step as the perf tests launch it on `gpu` (16 lengths that follow the L2's size):
// Lab06Perf.DecodeAttentionOnTheMemoryRoof at GQA 4, then TimeFollowsKvHeadsNotQueryHeads at GQA 1 and 8 (each with
// buffers of its own size, as the tests allocate them), for the grids `rooflab inspect` counts waves of; nothing
// runs, so the block table and the lengths need not hold anything.
rooflab::inspect::TimedLaunches timed_launches(const rooflab::GpuSpec& gpu) {
  return rooflab::ptx::timed_launches(gpu, [] {
    const auto lens = lab06::perf::lengths(rooflab::emu::pretend_gpu().l2_bytes, 1.0);
    const int batch = static_cast<int>(lens.size());
    const int max_len = static_cast<int>(*std::max_element(lens.begin(), lens.end()));
    const lab06::PagedCacheLayout layout{(max_len + lab06::kBlockTokens - 1) / lab06::kBlockTokens,
                                         lab06::perf::kKvHeads, lab06::perf::kHeadDim};
    const std::size_t blocks = static_cast<std::size_t>(batch) * layout.max_blocks;
    const std::size_t pool = blocks * lab06::kBlockTokens * layout.kv_heads * layout.head_dim;
    const rooflab::ptx::TimedBuffer<__half> k(pool), v(pool);
    const rooflab::ptx::TimedBuffer<int> table(blocks), seq_lens(static_cast<std::size_t>(batch));
    for (const int group : {4, 1, 8}) {
      const int heads = group * lab06::perf::kKvHeads;
      const rooflab::ptx::TimedBuffer<__half> q(static_cast<std::size_t>(batch) * heads * layout.head_dim),
          out(static_cast<std::size_t>(batch) * heads * layout.head_dim);
      const rooflab::ptx::TimedBuffer<float> workspace(
          lab06::decode_workspace_bytes(batch, heads, layout.head_dim, max_len) / sizeof(float) + 1);
      rooflab::ptx::timed([&] {  // still the stub: no grid, and the note says so
        lab06::paged_decode_attention(q.data(), k.data(), v.data(), table.data(), seq_lens.data(), batch, heads,
                                      max_len, layout, 1.0f, workspace.data(), out.data(), nullptr);
      });
    }
  });
}
}  // namespace
ROOFLAB_INSPECT_TIMED_LAUNCHES(timed_launches);

namespace {
// The kernels lab06::paged_kv_append starts for one token of one sequence (run on the CPU backend).
rooflab::ptx::Launched launched_by_append() {
  const lab06::PagedCacheLayout layout{1, 2, 64};
  const std::size_t row = static_cast<std::size_t>(layout.kv_heads) * layout.head_dim;
  const auto k_new = rooflab::ptx::device_zeros<__half>(row), v_new = rooflab::ptx::device_zeros<__half>(row);
  auto k_pool = rooflab::ptx::device_zeros<__half>(row * lab06::kBlockTokens);
  auto v_pool = rooflab::ptx::device_zeros<__half>(row * lab06::kBlockTokens);
  const auto zero = rooflab::ptx::device_zeros<int>(1);  // sequence 0, position 0, in physical block 0
  return rooflab::ptx::launched_by("lab06::paged_kv_append", [&] {
    lab06::paged_kv_append(k_new.data(), v_new.data(), zero.data(), zero.data(), 1, k_pool.data(), v_pool.data(),
                           zero.data(), layout, nullptr);
  });
}
}  // namespace

// The wide-append hint is asked of the kernel the launcher starts, not of any kernel in the file.
ROOFLAB_TEST(Lab06Static, NoSpillsAndWideAppend) {
  // Each timed kernel launches on every GPU the course names (shared memory with the opt-in, threads, registers).
  rooflab::ptx::expect_launches_fit_every_gpu(timed_launches);
  const auto launched = launched_by_append();
  for (const auto& arch : rooflab::ptx::captured_archs()) {
    rooflab::ptx::expect_no_spills(arch);
    const auto kernels = rooflab::ptx::parse_ptx(rooflab::ptx::captured(arch, ".ptx"));
    const auto append = rooflab::ptx::facts(rooflab::ptx::find_launched_kernel(kernels, "lab06::paged_kv_append_kernel", launched));
    EXPECT_EQ(append.widest_global_load_bits, 128) << arch << ": the append should load its rows 16 bytes at a time";
    EXPECT_EQ(append.widest_global_store_bits, 128) << arch << ": the append should store its rows 16 bytes at a time";
  }
}
