// Lab 08, dry run only: the bytes the perf tests count agree with the handout's analysis (the reference
// answers.cpp: Q1's bits per weight) and with the kernel registry `rooflab inspect` reads, at the shape a GPU
// times; and the thresholds are the speedups (int8 1.6x, int4 2.6x, none at 1.0x) over cuBLAS's FP16 GEMV. No
// kernel runs here; tests/perf.cpp runs beside it at scaled-down sizes.
#include "perf_work.hpp"

#include <rooflab/testing/grading.hpp>
#include <rooflab/specs.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <iterator>

ROOFLAB_TEST(Lab08DryRun, PerfWorkMatchesTheAnalysis) {
  using rooflab::grading::near;
  const auto decl = [](std::string_view kernel) -> const rooflab::inspect::KernelDecl& {
    return *std::find_if(std::begin(lab08::kKernels), std::end(lab08::kKernels),
                         [&](const auto& k) { return k.kernel == kernel; });
  };
  const int side = lab08::perf::gemv_side(1.0);
  EXPECT_EQ(side, 8192) << "the issue times N = K = 8192 on a GPU";
  const double weights = static_cast<double>(side) * side;
  struct Case {
    const char* quantity;
    const char* kernel;
    lab08::BlockFormat format;
    double bytes;
    double full_speedup;
  };
  for (const Case& c :
       {Case{"int8_gemv", "lab08::gemv_int8_kernel", lab08::kQ8_0, lab08::perf::int8_weight_bytes(side, side), 1.6},
        Case{"int4_gemv", "lab08::gemv_int4_kernel", lab08::kInt4G128, lab08::perf::int4_weight_bytes(side, side),
             2.6}}) {
    const double bits = lab08::bits_per_weight(c.format);
    EXPECT_TRUE(near(c.bytes, weights * bits / 8, {0, 1e-12})) << c.quantity << ": timed bytes vs Q1";
    EXPECT_TRUE(near(c.bytes, decl(c.kernel).bytes(weights), {0, 1e-12}))
        << c.quantity << ": timed bytes vs the registry";
    EXPECT_TRUE(near(lab08::perf::gemv_work(side, side, c.bytes).flops, decl(c.kernel).flops(weights), {0, 1e-12}))
        << c.quantity << ": FLOPs vs the registry";
    // award() counts both GEMVs in the layer's FP16 weight bytes per second, so its fraction is the speedup:
    // the rule's full_at and zero_at are the speedups, below what the bytes allow (16 / bits).
    const auto& t = rooflab::threshold(ROOFLAB_LAB_ID, c.quantity);
    EXPECT_TRUE(near(t.full_at, c.full_speedup, {0, 1e-9})) << c.quantity << ": full points at " << c.full_speedup << "x";
    EXPECT_TRUE(near(t.zero_at, 1.0, {0, 1e-9})) << c.quantity << ": none at 1.0x";
    EXPECT_LT(t.full_at, 16 / bits) << c.quantity << ": full points within what the bytes allow";
  }
  EXPECT_TRUE(
      near(lab08::perf::fp16_weight_bytes(side, side), weights * lab08::bits_per_weight(lab08::kFp16) / 8, {0, 1e-12}))
      << "the FP16 baseline's bytes vs Q1";
  rooflab::grading::note(fmt::format("perf work checked against the analysis at {} x {}", side, side));
}
