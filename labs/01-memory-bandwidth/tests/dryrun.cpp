// Lab 01, dry run only: the bytes the perf tests time agree with the handout's analysis (the reference
// answers.cpp) and with the kernel registry `rooflab inspect` reads, at the shape each GPU in data/gpus.json
// would run, so the figures a student is graded on and the ones the handout teaches cannot disagree.
// No kernel runs here; tests/perf.cpp runs beside it at scaled-down sizes (docs/cpu-mode.md, "Dry runs").
#include "kernels.hpp"
#include "perf_work.hpp"

#include <rooflab/testing/grading.hpp>
#include <rooflab/specs.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <iterator>

namespace {

const rooflab::inspect::KernelDecl& decl(std::string_view id) { return lab01::kernel(id).decl; }

}  // namespace

ROOFLAB_TEST(Lab01DryRun, PerfBytesMatchTheAnalysis) {
  int checked = 0;
  for (const auto& gpu : rooflab::gpus()) {
    if (!gpu.l2_mb) continue;  // no published L2: no shape to check
    // cudaDeviceProp::l2CacheSize is binary (40 MiB on an A100), as the perf tests read it.
    const auto l2 = static_cast<std::size_t>(*gpu.l2_mb * (1 << 20));
    const std::size_t n = lab01::perf::elements(l2, 1.0);
    EXPECT_GE(4.0 * static_cast<double>(n), lab01::min_array_bytes(gpu))
        << gpu.id << ": the perf arrays are smaller than the handout's 4x-L2 rule (Q7)";
    for (const auto op : lab01::kStreamOps) {
      const double timed = lab01::perf::stream_work(op, n).bytes();
      EXPECT_TRUE(rooflab::grading::same(timed, lab01::stream_bytes(op, n, 4)))
          << gpu.id << " " << lab01::name(op) << ": the perf test times these bytes, the handout's Q1 counts others";
      EXPECT_TRUE(rooflab::grading::same(timed, decl(lab01::name(op)).bytes(static_cast<double>(n))))
          << gpu.id << " " << lab01::name(op) << ": the perf test and the kernel registry (rooflab inspect) disagree";
    }
    // triad_vec4 is timed as a triad.
    EXPECT_TRUE(rooflab::grading::same(lab01::perf::stream_work(lab01::StreamOp::triad, n).bytes(),
                                       decl("triad_vec4").bytes(static_cast<double>(n))));
    // The strided read at stride 1 moves what the registry declares.
    const std::size_t n_out = n / 8;
    EXPECT_TRUE(rooflab::grading::same(lab01::perf::strided_work(n_out).bytes(),
                                       decl("strided_read").bytes(static_cast<double>(n_out))));
    ++checked;
  }
  EXPECT_GE(checked, 5) << "too few GPUs with a published L2 to check";
  rooflab::grading::note(fmt::format("perf bytes checked against the analysis for {} GPUs", checked));
}
