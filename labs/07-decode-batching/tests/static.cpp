// Lab 07 static checks (hints; CI requires them of the solutions): no spills, and every kernel reads W in
// 128-bit loads (a GEMV that walks W a column at a time, or a half at a time, shows up here first); the
// kernels for batches past 4 run on the tensor cores.
#include "kernels.hpp"
#include "perf_work.hpp"
#include "lab.hpp"

#include <rooflab/testing/grading.hpp>
#include <rooflab/inspect.hpp>
#include <rooflab/testing/ptx.hpp>
#include <rooflab/testing/static_capture.hpp>

#include <algorithm>
#include <string>
#include <utility>

ROOFLAB_INSPECT_KERNELS(lab07::kKernels);
// Inspect at the timed size: the square GEMV the perf tests time, 16384 x 16384 weights on an H100 or an H200
// (tests/perf_work.hpp's gemv_side: the smallest power of two whose weights are 4x the L2; before 2026-12-04 this
// said 4096 x 14336, a layer of the block the tests no longer time).
ROOFLAB_INSPECT_TIMED_SIZE(16384.0 * 16384);

namespace {
// The kernels at that size as the perf tests launch them (the GEMV; batches 1, 4, 8 and 64), for the grids `rooflab inspect` counts waves of;
// nothing runs.
rooflab::inspect::TimedLaunches timed_launches(const rooflab::GpuSpec& gpu) {
  return rooflab::ptx::timed_launches(gpu, [] {
    const int n = lab07::perf::gemv_side(rooflab::emu::pretend_gpu().l2_bytes, 1.0), k = n;
    // The buffers the perf tests allocate (Linear(n, k, max_batch)): the model's reused data reads each pointer's
    // reach, so the GEMV's x and y are one row's, the batched kernels' 64 rows'.
    const rooflab::ptx::TimedBuffer<__half> w(static_cast<std::size_t>(n) * k), x(64 * k), y(64 * n), x1(k), y1(n);
    // Each launcher on its own (timed): one still the stub leaves the others' grids.
    rooflab::ptx::timed([&] { lab07::gemv(w.data(), x1.data(), y1.data(), n, k, nullptr); });
    for (const int batch : {1, 4, 8, 64}) {
      rooflab::ptx::timed([&] { lab07::batched_gemv(w.data(), x.data(), y.data(), n, k, batch, nullptr); });
    }
  });
}
}  // namespace
ROOFLAB_INSPECT_TIMED_LAUNCHES(timed_launches);

namespace {
constexpr int kN = 32, kK = 64;  // a small problem whose rows take the 128-bit path (k a multiple of 8)

// The kernels lab07::batched_gemv starts at `batch` (0: lab07::gemv), run on the CPU backend.
rooflab::ptx::Launched launched_at(int batch) {
  const int rows = std::max(batch, 1);
  const auto w = rooflab::ptx::device_zeros<__half>(static_cast<std::size_t>(kN) * kK);
  const auto x = rooflab::ptx::device_zeros<__half>(static_cast<std::size_t>(rows) * kK);
  rooflab::DeviceBuffer<__half> y(static_cast<std::size_t>(rows) * kN);
  if (batch == 0) return rooflab::ptx::launched_by("lab07::gemv", [&] { lab07::gemv(w.data(), x.data(), y.data(), kN, kK, nullptr); });
  return rooflab::ptx::launched_by("lab07::batched_gemv at batch " + std::to_string(batch), [&] {
    lab07::batched_gemv(w.data(), x.data(), y.data(), kN, kK, batch, nullptr);
  });
}
}  // namespace

ROOFLAB_TEST(Lab07Static, NoSpillsAndWideLoads) {
  // Each timed kernel launches on every GPU the course names (shared memory with the opt-in, threads, registers).
  rooflab::ptx::expect_launches_fit_every_gpu(timed_launches);
  const auto by_gemv = launched_at(0), by_batch4 = launched_at(4), by_batch8 = launched_at(8), by_batch64 = launched_at(64);
  for (const auto& arch : rooflab::ptx::captured_archs()) {
    rooflab::ptx::expect_no_spills(arch);
    const auto kernels = rooflab::ptx::parse_ptx(rooflab::ptx::captured(arch, ".ptx"));
    // Each fact is asked of the kernel its launcher starts at that batch, not of any kernel in the file.
    const std::pair<const char*, const rooflab::ptx::Launched*> wide[] = {{"lab07::gemv_kernel", &by_gemv},
                                                                          {"lab07::batched_kernel<4>", &by_batch4}};
    for (const auto& [name, launched] : wide) {
      const auto f = rooflab::ptx::facts(rooflab::ptx::find_launched_kernel(kernels, name, *launched));
      EXPECT_EQ(f.widest_global_load_bits, 128) << arch << ": " << name << " should read W 16 bytes at a time";
    }
    const std::pair<const char*, const rooflab::ptx::Launched*> tensor[] = {{"lab07::batched_tc_kernel<1>", &by_batch8},
                                                                            {"lab07::batched_tc_kernel<4>", &by_batch64}};
    for (const auto& [name, launched] : tensor) {
      const auto tc = rooflab::ptx::facts(rooflab::ptx::find_launched_kernel(kernels, name, *launched));
      EXPECT_TRUE(tc.uses_tensor_cores) << arch << ": the batched kernel for batches past 4 should use the tensor cores";
      EXPECT_EQ(tc.widest_global_load_bits, 128) << arch << ": the tensor-core kernel should stage W 16 bytes at a time";
    }
  }
}
