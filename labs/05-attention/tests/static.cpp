// Lab 05 static checks (hints; CI requires them of the solutions): no spills in any kernel on any captured
// architecture (sm_80 and sm_90), shared memory within the 48 KB a block gets without opting in, and the
// tensor-core instructions in flash v2's PTX. `rooflab inspect 05` shows the same facts with occupancy.
#include "kernels.hpp"
#include "perf_work.hpp"
#include "lab.hpp"

#include <rooflab/testing/buffer.hpp>
#include <rooflab/testing/grading.hpp>
#include <rooflab/inspect.hpp>
#include <rooflab/testing/ptx.hpp>
#include <rooflab/testing/static_capture.hpp>

#include <span>
#include <string>
#include <utility>
#include <vector>

ROOFLAB_INSPECT_KERNELS(lab05::kKernels);
// Inspect at the timed size: L = 4096 (16 heads of 64).
ROOFLAB_INSPECT_TIMED_SIZE(4096.0);

namespace {
// The softmax and both flash kernels at the timed shape (tests/perf_work.hpp: 16 heads of 64, L = 4096, not
// causal), for the grids `rooflab inspect` counts waves of; nothing runs.
rooflab::inspect::TimedLaunches timed_launches(const rooflab::GpuSpec& gpu) {
  return rooflab::ptx::timed_launches(gpu, [] {
    const auto shape = lab05::perf::shape(true);
    const int heads = static_cast<int>(shape.batch_heads), len = static_cast<int>(shape.len),
              d = static_cast<int>(shape.head_dim);
    const std::size_t rows = static_cast<std::size_t>(heads) * len, elements = rows * d;
    // S and P share one buffer: the launch only records its grid (the CPU backend fills what it allocates, and
    // S alone is 512 MB).
    const rooflab::ptx::TimedBuffer<__half> s(rows * len), q(elements), k(elements), v(elements), o(elements);
    const rooflab::ptx::TimedBuffer<float> q32(elements), k32(elements), v32(elements), o32(elements), lse(rows);
    // Each launcher on its own (timed): one still the stub leaves the others' grids.
    rooflab::ptx::timed([&] { lab05::softmax_rows(s.data(), s.data(), static_cast<int>(rows), len, 0.125f, false, nullptr); });
    rooflab::ptx::timed([&] {
      lab05::flash_attention_fp32(q32.data(), k32.data(), v32.data(), o32.data(), lse.data(), heads, len, d, 0.125f,
                                  false, nullptr);
    });
    rooflab::ptx::timed([&] {
      lab05::flash_attention_fp16(q.data(), k.data(), v.data(), o.data(), lse.data(), heads, len, d, 0.125f, false,
                                  nullptr);
    });
  });
}
}  // namespace
ROOFLAB_INSPECT_TIMED_LAUNCHES(timed_launches);

ROOFLAB_TEST(Lab05Static, NoSpillsAndSharedMemoryWithinLimits) {
  // Each timed kernel launches on every GPU the course names (shared memory with the opt-in, threads, registers).
  rooflab::ptx::expect_launches_fit_every_gpu(timed_launches);
  for (const auto& arch : rooflab::ptx::captured_archs()) {
    for (const auto& r : rooflab::ptx::expect_no_spills(arch)) {
      EXPECT_LE(r.smem_bytes, 48 * 1024) << arch << ": " << r.name << " uses " << r.smem_bytes
                                          << " bytes of static shared memory, more than a block gets";
    }
  }
}

namespace {
// The kernels flash v2's launcher starts at one head dim, on a small problem (run on the CPU backend).
rooflab::ptx::Launched flash_v2_at(int head_dim) {
  const int len = 16;
  const std::vector<__half> zeros(static_cast<std::size_t>(len) * head_dim, __float2half(0.0f));
  const rooflab::DeviceBuffer<__half> q{std::span<const __half>(zeros)}, k{std::span<const __half>(zeros)},
      v{std::span<const __half>(zeros)};
  rooflab::DeviceBuffer<__half> o(zeros.size());
  rooflab::DeviceBuffer<float> lse(static_cast<std::size_t>(len));
  return rooflab::ptx::launched_by("lab05::flash_attention_fp16 at head dim " + std::to_string(head_dim), [&] {
    lab05::flash_attention_fp16(q.data(), k.data(), v.data(), o.data(), lse.data(), 1, len, head_dim, 0.125f, false,
                                nullptr);
  });
}
}  // namespace

// The tensor-core instructions must be in the kernels flash v2's launcher runs, not only somewhere in the file.
ROOFLAB_TEST(Lab05Static, FlashV2UsesTheTensorCores) {
  const std::pair<int, const char*> instances[] = {{64, "lab05::flash_mma_kernel<64, 64>"},
                                                   {128, "lab05::flash_mma_kernel<128, 32>"}};
  for (const auto& [head_dim, name] : instances) {
    const auto launched = flash_v2_at(head_dim);
    for (const auto& arch : rooflab::ptx::captured_archs()) {
      const auto kernels = rooflab::ptx::parse_ptx(rooflab::ptx::captured(arch, ".ptx"));
      const auto f = rooflab::ptx::facts(rooflab::ptx::find_launched_kernel(kernels, name, launched));
      EXPECT_TRUE(f.uses_tensor_cores) << arch << ": no wmma.mma / mma.sync in " << name;
      EXPECT_GE(f.count("wmma.mma") + f.count("mma.sync"), 1) << arch << ": " << name;
    }
  }
}
