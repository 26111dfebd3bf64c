// Lab 06 static checks (hints; CI requires them of the solutions): no spills in any kernel, and the append
// moves its rows in 128-bit loads and stores.
#include "kernels.hpp"
#include "lab.hpp"

#include <rooflab/testing/grading.hpp>
#include <rooflab/inspect.hpp>
#include <rooflab/testing/ptx.hpp>
#include <rooflab/testing/static_capture.hpp>

ROOFLAB_INSPECT_KERNELS(lab06::kKernels);
// Inspect at the timed size: 16 sequences of 4180 tokens.
ROOFLAB_INSPECT_TIMED_SIZE(16.0 * 4180);

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
  const auto launched = launched_by_append();
  for (const auto& arch : rooflab::ptx::captured_archs()) {
    rooflab::ptx::expect_no_spills(arch);
    const auto kernels = rooflab::ptx::parse_ptx(rooflab::ptx::captured(arch, ".ptx"));
    const auto append = rooflab::ptx::facts(rooflab::ptx::find_launched_kernel(kernels, "lab06::paged_kv_append_kernel", launched));
    EXPECT_EQ(append.widest_global_load_bits, 128) << arch << ": the append should load its rows 16 bytes at a time";
    EXPECT_EQ(append.widest_global_store_bits, 128) << arch << ": the append should store its rows 16 bytes at a time";
  }
}
