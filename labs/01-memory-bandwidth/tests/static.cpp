// Lab 01 static checks: facts of the compiled kernels, read from the PTX and the ptxas report that the
// build captured for each architecture in ROOFLAB_STATIC_ARCHS. No device needed. They are worth no points
// (hints for students); on the solutions CI requires them to pass.
#include "kernels.hpp"
#include "perf_work.hpp"

#include <rooflab/testing/grading.hpp>
#include <rooflab/inspect.hpp>
#include <rooflab/testing/ptx.hpp>
#include <rooflab/testing/static_capture.hpp>
#include <rooflab/specs.hpp>

#include <algorithm>
#include <string>
#include <vector>


// `lab01_static --rooflab-inspect` (what `rooflab inspect 01` runs) prints the table for these kernels.
ROOFLAB_INSPECT_KERNELS(lab01::kKernelDecls);
// Inspect at the timed size: 256 MB per array (at least 4x the L2, the harness rule; 64 Mi floats on an H100).
ROOFLAB_INSPECT_TIMED_SIZE(double(1u << 26));

namespace {
// The five STREAM kernels at the size the perf tests time on that GPU (tests/perf_work.hpp) and the strided read at
// stride 32 (an eighth as many outputs), for the grids `rooflab inspect` counts waves of; nothing runs.
rooflab::inspect::TimedLaunches timed_launches(const rooflab::GpuSpec& gpu) {
  return rooflab::ptx::timed_launches(gpu, [] {
    const std::size_t n = lab01::perf::elements(rooflab::emu::pretend_gpu().l2_bytes, 1.0);
    const rooflab::ptx::TimedBuffer<float> a(n), b(n), c(n), strided(n / 8 * 32);
    // Each launcher on its own (timed): one still the stub leaves the others' grids.
    rooflab::ptx::timed([&] { lab01::strided_read(strided.data(), c.data(), n / 8, 32, nullptr); });
    rooflab::ptx::timed([&] { lab01::copy(a.data(), c.data(), n, nullptr); });
    rooflab::ptx::timed([&] { lab01::scale(c.data(), b.data(), 3.0f, n, nullptr); });
    rooflab::ptx::timed([&] { lab01::add(a.data(), b.data(), c.data(), n, nullptr); });
    rooflab::ptx::timed([&] { lab01::triad(b.data(), c.data(), a.data(), 3.0f, n, nullptr); });
    rooflab::ptx::timed([&] { lab01::triad_vec4(b.data(), c.data(), a.data(), 3.0f, n, nullptr); });
  });
}
}  // namespace
ROOFLAB_INSPECT_TIMED_LAUNCHES(timed_launches);

// 128-bit accesses are the point of the vectorized triad: one ld.global.v4.f32 instead of four loads.
// Asked of the kernel lab01::triad_vec4 starts on aligned arrays (run on the CPU backend), not of any kernel
// in the file: a launcher that always falls back to the scalar triad does not earn it.
ROOFLAB_TEST(Lab01Static, TriadVec4Uses128BitAccess) {
  const std::size_t n = 1024;
  const auto b = rooflab::ptx::device_zeros<float>(n), c = rooflab::ptx::device_zeros<float>(n);
  auto a = rooflab::ptx::device_zeros<float>(n);
  const auto launched = rooflab::ptx::launched_by(
      "lab01::triad_vec4 on 16-byte aligned arrays", [&] { lab01::triad_vec4(b.data(), c.data(), a.data(), 2.0f, n, nullptr); });
  for (const auto& arch : rooflab::ptx::captured_archs()) {
    const auto kernels = rooflab::ptx::parse_ptx(rooflab::ptx::captured(arch, ".ptx"));
    const auto f = rooflab::ptx::facts(rooflab::ptx::find_launched_kernel(kernels, "triad_vec4_kernel", launched));
    EXPECT_EQ(f.widest_global_load_bits, 128) << arch << ": triad_vec4_kernel should load float4 (ld.global.v4.f32)";
    EXPECT_EQ(f.widest_global_store_bits, 128) << arch << ": triad_vec4_kernel should store float4 (st.global.v4.f32)";
  }
}

// The scalar STREAM kernels move one float per thread per iteration: 32-bit accesses, no shared memory.
ROOFLAB_TEST(Lab01Static, ScalarKernelsUse32BitAccess) {
  for (const auto& arch : rooflab::ptx::captured_archs()) {
    const auto kernels = rooflab::ptx::parse_ptx(rooflab::ptx::captured(arch, ".ptx"));
    for (const char* name : {"copy_kernel", "scale_kernel", "add_kernel", "lab01::triad_kernel"}) {
      const auto f = rooflab::ptx::facts(rooflab::ptx::find_written_kernel(kernels, name));
      EXPECT_GE(f.global_loads, 1) << arch << ": " << name << " loads nothing";
      EXPECT_EQ(f.widest_global_store_bits, 32) << arch << ": " << name;
      EXPECT_FALSE(f.uses_shared) << arch << ": " << name << " needs no shared memory";
    }
  }
}

// Bandwidth kernels need few registers; a spill would add local-memory traffic to a memory-bound kernel.
ROOFLAB_TEST(Lab01Static, NoSpills) {
  // Each timed kernel launches on every GPU the course names (shared memory with the opt-in, threads, registers).
  rooflab::ptx::expect_launches_fit_every_gpu(timed_launches);
  for (const auto& arch : rooflab::ptx::captured_archs()) {
    rooflab::ptx::expect_no_spills(arch, /*max_registers=*/64);
  }
}

// A bandwidth kernel needs many loads in flight: at least half the SM's warps resident on an A100 and an
// H100 at the launch's block size (rooflab inspect shows the figure and what limits it).
ROOFLAB_TEST(Lab01Static, OccupancyAtLeastHalfOnA100AndH100) {
  const std::pair<const char*, const char*> targets[] = {{"a100-80gb-sxm4", "sm_80"}, {"h100-sxm", "sm_90"}};
  int checked = 0;
  for (const auto& [gpu_id, arch] : targets) {
    const auto all = rooflab::ptx::captured_archs();
    if (std::find(all.begin(), all.end(), arch) == all.end()) continue;
    const auto rows = rooflab::inspect::inspect(lab01::kKernelDecls, rooflab::ptx::captured(arch, ".ptx"), rooflab::ptx::captured(arch, ".ptxas.txt"),
                                                rooflab::gpu(gpu_id), arch, 1 << 20);
    for (const auto& r : rows) {
      ASSERT_TRUE(r.missing.empty()) << r.kernel << ": " << r.missing;
      EXPECT_GE(r.occ.fraction, 0.5) << gpu_id << ": " << r.kernel << " (" << r.registers << " registers, limited by "
                                     << r.occ.limiter << ")";
      ++checked;
    }
  }
  EXPECT_GT(checked, 0) << "no captured architecture to check";
}
