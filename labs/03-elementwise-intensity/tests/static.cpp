// Lab 03 static checks (hints; CI requires them of the solutions): no spills, and the sweep really does
// its FMAs in a loop (fma.rn.f32 in the PTX).
#include "kernels.hpp"
#include "lab.hpp"
#include "perf_work.hpp"

#include <rooflab/testing/grading.hpp>
#include <rooflab/inspect.hpp>
#include <rooflab/testing/ptx.hpp>
#include <rooflab/testing/static_capture.hpp>

#include <cstddef>

ROOFLAB_INSPECT_KERNELS(lab03::kKernels);
// Inspect at the timed size: 256 MB of FP32 (at least 4x the L2, the harness rule; 64 Mi elements on an H100).
ROOFLAB_INSPECT_TIMED_SIZE(double(1u << 26));

namespace {
// The unfused kernels, the fused chain and the sweep (k = 64) at the timed shape (its rows and columns follow the
// L2's size), for the grids `rooflab inspect` counts waves of; nothing runs.
rooflab::inspect::TimedLaunches timed_launches(const rooflab::GpuSpec& gpu) {
  return rooflab::ptx::timed_launches(gpu, [] {
    const auto [rows, cols] = lab03::perf::shape(rooflab::emu::pretend_gpu().l2_bytes, 1.0);
    const std::size_t n = rows * cols;
    const rooflab::ptx::TimedBuffer<float> x(n), bias(cols), residual(n), t(n), u(n), y(n);
    // Each launcher on its own (timed): one still the stub leaves the others' grids.
    rooflab::ptx::timed([&] { lab03::bias_add<float>(x.data(), bias.data(), t.data(), rows, cols, nullptr); });
    rooflab::ptx::timed([&] { lab03::gelu<float>(t.data(), u.data(), n, nullptr); });
    rooflab::ptx::timed([&] { lab03::residual_add<float>(u.data(), residual.data(), y.data(), n, nullptr); });
    rooflab::ptx::timed(
        [&] { lab03::fused_chain<float>(x.data(), bias.data(), residual.data(), y.data(), rows, cols, nullptr); });
    rooflab::ptx::timed([&] { lab03::sweep(x.data(), y.data(), n, 0.999f, 0.001f, 64, nullptr); });
  });
}
}  // namespace
ROOFLAB_INSPECT_TIMED_LAUNCHES(timed_launches);

// The FMA, load and store facts are asked of the kernels the sweep and the fused chain's launchers start (a small
// problem on the CPU backend), not of any kernel in the file.
ROOFLAB_TEST(Lab03Static, NoSpillsAndTheSweepFmas) {
  // Each timed kernel launches on every GPU the course names (shared memory with the opt-in, threads, registers).
  rooflab::ptx::expect_launches_fit_every_gpu(timed_launches);
  constexpr std::size_t rows = 4, cols = 32, n = rows * cols;
  const auto x = rooflab::ptx::device_zeros<float>(n), bias = rooflab::ptx::device_zeros<float>(cols);
  const auto residual = rooflab::ptx::device_zeros<float>(n);
  auto y = rooflab::ptx::device_zeros<float>(n);
  const auto sweep_ran = rooflab::ptx::launched_by("lab03::sweep", [&] { lab03::sweep(x.data(), y.data(), n, 1.0f, 0.5f, 4, nullptr); });
  const auto fused_ran = rooflab::ptx::launched_by("lab03::fused_chain<float>", [&] {
    lab03::fused_chain<float>(x.data(), bias.data(), residual.data(), y.data(), rows, cols, nullptr);
  });
  for (const auto& arch : rooflab::ptx::captured_archs()) {
    rooflab::ptx::expect_no_spills(arch);
    const auto kernels = rooflab::ptx::parse_ptx(rooflab::ptx::captured(arch, ".ptx"));
    const auto sweep = rooflab::ptx::facts(rooflab::ptx::find_launched_kernel(kernels, "lab03::sweep_kernel", sweep_ran));
    EXPECT_GE(sweep.fma_f32, 1) << arch << ": the sweep kernel has no fma.rn.f32";
    const auto fused = rooflab::ptx::facts(rooflab::ptx::find_launched_kernel(kernels, "lab03::fused_chain_kernel<float>", fused_ran));
    // Per element the fused chain loads x, bias and residual and stores y alone: one store per three loads
    // however far the loop is unrolled; a chain that also stores t or u has more stores than that.
    EXPECT_GE(fused.global_stores, 1) << arch << ": the fused chain stores nothing";
    EXPECT_LE(3 * fused.global_stores, fused.global_loads)
        << arch << ": the fused chain should store only y (" << fused.global_stores << " stores, "
        << fused.global_loads << " loads)";
  }
}
