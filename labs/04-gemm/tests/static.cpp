// Lab 04 static checks (hints; CI requires them of the solutions): no spills and static shared memory within the
// 48 KB a block gets without opting in (rung 7's ring is dynamic shared memory, its launcher opts in); the 128-bit
// global and shared loads of rungs 5 and 6; the tensor-core instructions of rung 7, each asked of the kernel its
// rung's launcher starts. `rooflab inspect 04` shows the same facts per rung, with occupancy.
#include "kernels.hpp"
#include "perf_work.hpp"
#include "lab.hpp"

#include <rooflab/testing/grading.hpp>
#include <rooflab/inspect.hpp>
#include <rooflab/testing/ptx.hpp>
#include <rooflab/testing/static_capture.hpp>

#include <utility>

ROOFLAB_INSPECT_KERNELS(lab04::kKernels);
// Inspect at the timed size: 4096^3.
ROOFLAB_INSPECT_TIMED_SIZE(4096.0);

namespace {
// Every rung at the timed size (tests/perf_work.hpp's first shape on a GPU, 4096 cubed), for the grids `rooflab
// inspect` counts waves of; nothing runs.
rooflab::inspect::TimedLaunches timed_launches(const rooflab::GpuSpec& gpu) {
  return rooflab::ptx::timed_launches(gpu, [] {
    const auto shape = lab04::perf::shapes(true)[0];
    const int side = static_cast<int>(shape.m);
    const std::size_t elems = shape.m * shape.k;
    const rooflab::ptx::TimedBuffer<float> a(elems), b(elems), c(elems);
    const rooflab::ptx::TimedBuffer<__half> ah(elems), bh(elems);
    // Each rung on its own (timed): one still the stub leaves the others' grids.
    for (const auto rung : {lab04::sgemm_naive, lab04::sgemm_coalesced, lab04::sgemm_smem, lab04::sgemm_blocktile,
                            lab04::sgemm_vectorized, lab04::sgemm_warptile}) {
      rooflab::ptx::timed([&] { rung(side, side, side, 1.0f, a.data(), b.data(), 0.0f, c.data(), nullptr); });
    }
    rooflab::ptx::timed([&] { lab04::hgemm_wmma(side, side, side, 1.0f, ah.data(), bh.data(), 0.0f, c.data(), nullptr); });
  });
}
}  // namespace
ROOFLAB_INSPECT_TIMED_LAUNCHES(timed_launches);

ROOFLAB_TEST(Lab04Static, NoSpillsAndSharedMemoryWithinLimits) {
  // Each timed kernel launches on every GPU the course names (shared memory with the opt-in, threads, registers).
  rooflab::ptx::expect_launches_fit_every_gpu(timed_launches);
  for (const auto& arch : rooflab::ptx::captured_archs()) {
    // Every kernel compiled, each instance of a template among them.
    for (const auto& r : rooflab::ptx::expect_no_spills(arch)) {
      EXPECT_LE(r.smem_bytes, 48 * 1024) << arch << ": " << r.name << " uses " << r.smem_bytes
                                          << " bytes of static shared memory, more than a block gets";
    }
  }
}

namespace {
constexpr int kSide = 64;  // a small square problem on the vectorized paths (multiples of 8, aligned arrays)

// The kernels one rung's launcher starts on it, run on the CPU backend.
template <typename T>
rooflab::ptx::Launched launched_by_rung(const char* launcher, void (*rung)(int, int, int, float, const T*, const T*,
                                                                              float, float*, cudaStream_t)) {
  const std::size_t elems = static_cast<std::size_t>(kSide) * kSide;
  const auto a = rooflab::ptx::device_zeros<T>(elems), b = rooflab::ptx::device_zeros<T>(elems);
  auto c = rooflab::ptx::device_zeros<float>(elems);
  return rooflab::ptx::launched_by(launcher, [&] {
    rung(kSide, kSide, kSide, 1.0f, a.data(), b.data(), 0.0f, c.data(), nullptr);
  });
}
}  // namespace

// Hints about a rung's code are asked of the kernel its launcher starts, not of any kernel in the file.
ROOFLAB_TEST(Lab04Static, VectorizedRungsLoad128Bits) {
  const std::pair<const char*, rooflab::ptx::Launched> rungs[] = {
      {"lab04::sgemm_vectorized_kernel", launched_by_rung("lab04::sgemm_vectorized", lab04::sgemm_vectorized)},
      {"lab04::sgemm_warptile_kernel", launched_by_rung("lab04::sgemm_warptile", lab04::sgemm_warptile)}};
  for (const auto& arch : rooflab::ptx::captured_archs()) {
    const auto kernels = rooflab::ptx::parse_ptx(rooflab::ptx::captured(arch, ".ptx"));
    for (const auto& [name, launched] : rungs) {
      const auto f = rooflab::ptx::facts(rooflab::ptx::find_launched_kernel(kernels, name, launched));
      EXPECT_EQ(f.widest_global_load_bits, 128) << arch << ": " << name << " has no 128-bit global load";
      EXPECT_GE(f.count("ld.shared.v4"), 1) << arch << ": " << name << " has no 128-bit shared load";
    }
  }
}

ROOFLAB_TEST(Lab04Static, WmmaUsesTheTensorCores) {
  const auto launched = launched_by_rung("lab04::hgemm_wmma", lab04::hgemm_wmma);
  for (const auto& arch : rooflab::ptx::captured_archs()) {
    const auto kernels = rooflab::ptx::parse_ptx(rooflab::ptx::captured(arch, ".ptx"));
    const auto f = rooflab::ptx::facts(rooflab::ptx::find_launched_kernel(kernels, "lab04::hgemm_wmma_kernel", launched));
    EXPECT_TRUE(f.uses_tensor_cores) << arch << ": no wmma.mma / mma.sync in the WMMA kernel";
    EXPECT_GE(f.count("wmma.mma") + f.count("mma.sync"), 1) << arch;
  }
}
