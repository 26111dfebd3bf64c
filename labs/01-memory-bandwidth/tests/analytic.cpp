// Lab 01 graders: the analytic questions (no device). Inputs are random (seeded by ROOFLAB_SEED) and the
// per-GPU questions run over every GPU in data/gpus.json, so an answer hard-coded for one case fails.
// Expected values are derived here independently of the solution: sector counts by enumerating addresses.
#include "lab.hpp"

#include <rooflab/testing/grading.hpp>
#include <rooflab/testing/random.hpp>
#include <rooflab/specs.hpp>
#include <rooflab/testing/synthetic.hpp>

#include <cmath>

namespace {

using lab01::StreamOp;

constexpr double kRel = 1e-9;

// Every answer is also recorded for the grader's check outside the student's process (rooflab/detail/report.hpp).
::testing::AssertionResult near(double got, double want, double rel = kRel) {
  return rooflab::grading::near(got, want, {0.0, rel});
}

// Distinct sectors touched by n reads of elem_bytes at a stride, found by listing them.
double sectors_touched_bytes(std::size_t n, std::size_t elem, std::size_t stride, std::size_t sector) {
  // Every byte the access touches, in address order (the elements, then each one's bytes, only ever move up), so
  // a sector not seen before is one past the last seen: counting the changes counts the distinct sectors.
  std::size_t sectors = 0, last = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t first = i * stride * elem;
    for (std::size_t b = first; b < first + elem; ++b) {
      if (sectors == 0 || b / sector != last) ++sectors;
      last = b / sector;
    }
  }
  return static_cast<double>(sectors * sector);
}

}  // namespace

ROOFLAB_TEST(Lab01Analytic, StreamBytes) {
  rooflab::Rng rng(rooflab::test_seed());
  for (int trial = 0; trial < 50; ++trial) {
    const std::size_t n = 1 + rng.below(1ull << 32);
    const std::size_t elem = std::size_t{1} << rng.below(4);  // 1, 2, 4 or 8 bytes
    const double nb = static_cast<double>(n) * static_cast<double>(elem);
    ROOFLAB_EXPECT(near(lab01::stream_bytes(StreamOp::copy, n, elem), 2 * nb)) << "copy, n=" << n << " elem=" << elem;
    ROOFLAB_EXPECT(near(lab01::stream_bytes(StreamOp::scale, n, elem), 2 * nb)) << "scale, n=" << n;
    ROOFLAB_EXPECT(near(lab01::stream_bytes(StreamOp::add, n, elem), 3 * nb)) << "add, n=" << n;
    ROOFLAB_EXPECT(near(lab01::stream_bytes(StreamOp::triad, n, elem), 3 * nb)) << "triad, n=" << n;
  }
}

ROOFLAB_TEST(Lab01Analytic, AchievedBandwidth) {
  rooflab::Rng rng(rooflab::test_seed() + 1);
  for (int trial = 0; trial < 50; ++trial) {
    const double bytes = rng.uniform(1e3, 1e12);
    const double seconds = rng.uniform(1e-6, 10.0);
    ROOFLAB_EXPECT(near(lab01::achieved_gbps(bytes, seconds), bytes / seconds / 1e9))
        << bytes << " bytes in " << seconds << " s (decimal GB: 1 GB = 1e9 bytes)";
  }
}

ROOFLAB_TEST(Lab01Analytic, TimeFloorOnEveryGpu) {
  rooflab::Rng rng(rooflab::test_seed() + 2);
  for (const auto& gpu : rooflab::graded_gpus()) {
    for (StreamOp op : lab01::kStreamOps) {
      const std::size_t n = 1 + rng.below(1ull << 31);
      const double arrays = (op == StreamOp::copy || op == StreamOp::scale) ? 2 : 3;
      const double want = arrays * 4.0 * static_cast<double>(n) / (gpu.bandwidth_gbps * 1e9);
      ROOFLAB_EXPECT(near(lab01::time_floor_s(op, n, gpu), want)) << gpu.name << ", " << lab01::name(op) << ", n=" << n;
    }
  }
}

ROOFLAB_TEST(Lab01Analytic, StridedDramBytes) {
  rooflab::Rng rng(rooflab::test_seed() + 3);
  constexpr std::size_t kElems[] = {1, 2, 4, 8, 16};
  constexpr std::size_t kSectors[] = {32, 64};
  for (int trial = 0; trial < 200; ++trial) {
    const std::size_t n = 1 + rng.below(3000);
    const std::size_t elem = kElems[rng.below(5)];
    const std::size_t stride = 1 + rng.below(trial % 2 == 0 ? 8 : 80);
    const std::size_t sector = kSectors[rng.below(2)];
    ROOFLAB_EXPECT(near(lab01::strided_dram_bytes(n, elem, stride, sector), sectors_touched_bytes(n, elem, stride, sector)))
        << "n=" << n << " elem=" << elem << " stride=" << stride << " sector=" << sector;
  }
}

ROOFLAB_TEST(Lab01Analytic, StridedEfficiency) {
  constexpr std::size_t kN = 20000;  // large enough that the partial last sector does not matter
  for (std::size_t elem : {2, 4, 8}) {
    for (std::size_t stride : {1, 2, 3, 4, 8, 16, 32, 64}) {
      for (std::size_t sector : {32, 64}) {
        const double want = static_cast<double>(kN * elem) / sectors_touched_bytes(kN, elem, stride, sector);
        ROOFLAB_EXPECT(near(lab01::strided_efficiency(elem, stride, sector), want, 1e-3))
            << "elem=" << elem << " stride=" << stride << " sector=" << sector;
      }
    }
  }
  // The handout's table above can be typed in; strides, elements and sectors drawn from the seed cannot.
  rooflab::Rng rng(rooflab::test_seed() + 6);
  for (int trial = 0; trial < 30; ++trial) {
    const std::size_t elem = std::size_t{1} << rng.below(5), stride = 1 + rng.below(100);
    const std::size_t sector = std::size_t{16} << rng.below(4);
    const double want = static_cast<double>(kN * elem) / sectors_touched_bytes(kN, elem, stride, sector);
    ROOFLAB_EXPECT(near(lab01::strided_efficiency(elem, stride, sector), want, 1e-3))
        << "elem=" << elem << " stride=" << stride << " sector=" << sector;
  }
}

ROOFLAB_TEST(Lab01Analytic, GigabytesAndGibibytes) {
  rooflab::Rng rng(rooflab::test_seed() + 4);
  for (int trial = 0; trial < 50; ++trial) {
    const double x = rng.uniform(0.1, 2000.0);
    ROOFLAB_EXPECT(near(lab01::gb_to_gib(x), x * 1e9 / 1073741824.0)) << x << " GB";
    ROOFLAB_EXPECT(near(lab01::gib_to_gb(x), x * 1073741824.0 / 1e9)) << x << " GiB";
  }
  // The trap itself: 80 x 10^9 bytes (80 GB/s for one second, say) are 74.5 GiB. A card's capacity is not an
  // example: an "80GB" A100 has 80 GiB; the decimal side is the bandwidth.
  ROOFLAB_EXPECT(rooflab::grading::near(lab01::gb_to_gib(80.0), 74.506, {1e-3, 0.0}));
}

ROOFLAB_TEST(Lab01Analytic, MinArrayOnEveryGpu) {
  for (const auto& gpu : rooflab::graded_gpus()) {
    if (!gpu.l2_mb) continue;  // not published for this GPU (see data/gpus.json)
    ROOFLAB_EXPECT(near(lab01::min_array_bytes(gpu), 4.0 * *gpu.l2_mb * 1e6)) << gpu.name;
  }
}

ROOFLAB_TEST(Lab01Analytic, CopyFractionOfDatasheet) {
  rooflab::Rng rng(rooflab::test_seed() + 5);
  for (const auto& gpu : rooflab::graded_gpus()) {
    const double bytes = rng.uniform(1e8, 1e11);
    const double seconds = 2.0 * bytes / (gpu.bandwidth_gbps * 1e9) / rng.uniform(0.5, 0.95);
    ROOFLAB_EXPECT(near(lab01::copy_fraction_of_datasheet(bytes, seconds, gpu),
                     2.0 * bytes / seconds / 1e9 / gpu.bandwidth_gbps))
        << gpu.name << ": a copy of B bytes moves 2B across the memory interface";
  }
}
