// Lab 05 graders: the work, bytes, bounds and memory of both attention paths for random shapes on every GPU
// in data/gpus.json, FlashAttention-2's HBM accesses for random on-chip sizes, and the speedup the roofline
// predicts. Every expected value is computed here from the counting rules, independently of answers.cpp.
#include "lab.hpp"

#include <rooflab/testing/grading.hpp>
#include <rooflab/testing/plot.hpp>
#include <rooflab/testing/random.hpp>
#include <rooflab/specs.hpp>
#include <rooflab/testing/synthetic.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace {

using lab05::Path;
using rooflab::grading::near;
using rooflab::grading::same;

constexpr rooflab::Tolerance kRel{0.0, 1e-9};
constexpr double kElemBytes[] = {2.0, 4.0};

// Random shapes: batch x heads up to 256, lengths up to 128K (with the small and ragged ones every test
// should see), head dims of real models, the mask on and off.
std::vector<lab05::Shape> shapes(std::uint64_t salt) {
  rooflab::Rng rng(rooflab::test_seed() + salt);
  std::vector<lab05::Shape> out{{1, 1, 64, false}, {1, 1, 64, true}, {16, 4096, 64, false}, {32, 8192, 128, true}};
  constexpr std::size_t kDims[] = {32, 64, 80, 96, 128, 256};
  for (int i = 0; i < 16; ++i) {
    out.push_back({1 + rng.below(256), 1 + rng.below(131072), kDims[rng.below(6)], rng.below(2) == 1});
  }
  return out;
}

std::string describe(const lab05::Shape& s, double e) {
  return fmt::format("{} heads, L = {}, head dim {}, {}, {}-byte elements", s.batch_heads, s.len, s.head_dim,
                     s.causal ? "causal" : "not causal", e);
}

double pairs(const lab05::Shape& s) {
  const double l = static_cast<double>(s.len);
  return s.causal ? l * (l + 1) / 2 : l * l;
}
double want_flops(const lab05::Shape& s) { return static_cast<double>(s.batch_heads) * 4 * pairs(s) * static_cast<double>(s.head_dim); }
double want_naive_flops(const lab05::Shape& s) { return want_flops({s.batch_heads, s.len, s.head_dim, false}); }
double want_naive_bytes(const lab05::Shape& s, double e) {
  const double l = static_cast<double>(s.len), d = static_cast<double>(s.head_dim);
  return static_cast<double>(s.batch_heads) * e * (2 * l * d + l * l + 2 * l * l + l * l + l * d + l * d);
}
double want_flash_bytes(const lab05::Shape& s, double e) {
  return static_cast<double>(s.batch_heads) * e * 4 * static_cast<double>(s.len) * static_cast<double>(s.head_dim);
}
double peak(double e, const rooflab::GpuSpec& g) { return e == 2 ? *g.fp16_tflops * 1e12 : g.fp32_tflops * 1e12; }
double want_floor(const lab05::Shape& s, Path p, double e, const rooflab::GpuSpec& g) {
  const double bytes = p == Path::naive ? want_naive_bytes(s, e) : want_flash_bytes(s, e);
  const double work = p == Path::naive ? want_naive_flops(s) : want_flops(s);
  return std::max(bytes / (g.bandwidth_gbps * 1e9), work / peak(e, g));
}
// The GPUs with a published dense FP16 tensor figure (the FP16 questions need one).
bool has_fp16(const rooflab::GpuSpec& g) { return g.fp16_tflops.has_value() && *g.fp16_tflops > 0; }

}  // namespace

ROOFLAB_TEST(Lab05Analytic, FlopsBytesIntensity) {
  for (const auto& s : shapes(1)) {
    ROOFLAB_EXPECT(near(lab05::flops(s), want_flops(s), kRel)) << describe(s, 0) << ": FLOPs (Q1)";
    for (const double e : kElemBytes) {
      ROOFLAB_EXPECT(near(lab05::naive_bytes(s, e), want_naive_bytes(s, e), kRel)) << describe(s, e) << ": naive bytes (Q2)";
      ROOFLAB_EXPECT(near(lab05::flash_bytes(s, e), want_flash_bytes(s, e), kRel)) << describe(s, e) << ": flash bytes (Q3)";
      ROOFLAB_EXPECT(near(lab05::intensity(s, Path::naive, e), want_naive_flops(s) / want_naive_bytes(s, e), kRel))
          << describe(s, e) << ": naive intensity (Q4)";
      ROOFLAB_EXPECT(near(lab05::intensity(s, Path::flash, e), want_flops(s) / want_flash_bytes(s, e), kRel))
          << describe(s, e) << ": flash intensity (Q4)";
    }
  }
  // The handout's worked case: L = 4096, d = 64: the naive path moves 4 L d + 4 L^2 elements a head, 65x
  // flash's 4 L d.
  const lab05::Shape worked{1, 4096, 64, false};
  ROOFLAB_EXPECT(near(lab05::naive_bytes(worked, 2) / lab05::flash_bytes(worked, 2), 65.0, kRel)) << "worked case: byte ratio";
}

ROOFLAB_TEST(Lab05Analytic, BoundAndFloorOnEveryGpu) {
  for (const auto& g : rooflab::graded_gpus()) {
    for (const auto& s : shapes(2)) {
      for (const double e : kElemBytes) {
        if (e == 2 && !has_fp16(g)) continue;
        for (const Path p : {Path::naive, Path::flash}) {
          const std::string at = fmt::format("{} on {}, {}", describe(s, e), g.id, p == Path::naive ? "naive" : "flash");
          const double work = p == Path::naive ? want_naive_flops(s) : want_flops(s);
          const double bytes = p == Path::naive ? want_naive_bytes(s, e) : want_flash_bytes(s, e);
          ROOFLAB_EXPECT(same(lab05::compute_bound(s, p, e, g) ? 1.0 : 0.0,
                              work / bytes >= peak(e, g) / (g.bandwidth_gbps * 1e9) ? 1.0 : 0.0))
              << at << ": compute-bound? (Q5)";
          ROOFLAB_EXPECT(near(lab05::time_floor_s(s, p, e, g), want_floor(s, p, e, g), kRel)) << at << ": time floor (Q6)";
        }
      }
    }
  }
}

ROOFLAB_TEST(Lab05Analytic, MemoryOfTheNaivePath) {
  for (const auto& s : shapes(3)) {
    for (const double e : kElemBytes) {
      const double l = static_cast<double>(s.len);
      ROOFLAB_EXPECT(near(lab05::naive_extra_bytes(s, e), static_cast<double>(s.batch_heads) * l * l * e, kRel))
          << describe(s, e) << ": naive extra memory (Q7)";
    }
  }
  rooflab::Rng rng(rooflab::test_seed() + 4);
  for (const auto& g : rooflab::graded_gpus()) {
    for (int i = 0; i < 6; ++i) {
      const std::size_t bh = i == 0 ? 1 : 1 + rng.below(512);
      const double e = kElemBytes[rng.below(2)], memory = g.memory_gb * 1e9;
      const auto got = lab05::longest_fitting_len(bh, e, g);
      const double b = static_cast<double>(bh), lg = static_cast<double>(got);
      // The answer fits and one more does not: that pins it down whatever the rounding.
      ROOFLAB_EXPECT(same(b * lg * lg * e <= memory ? 1.0 : 0.0, 1.0)) << g.id << ", " << bh << " heads, " << e
                                                                       << "-byte scores: L = " << got << " does not fit (Q8)";
      ROOFLAB_EXPECT(same(b * (lg + 1) * (lg + 1) * e > memory ? 1.0 : 0.0, 1.0))
          << g.id << ", " << bh << " heads, " << e << "-byte scores: L = " << got + 1 << " fits too (Q8)";
      ROOFLAB_EXPECT(near(lg, std::floor(std::sqrt(memory / (b * e))), {1.0, 0.0})) << g.id << ": longest L (Q8)";
    }
  }
}

ROOFLAB_TEST(Lab05Analytic, FlashHbmAccesses) {
  rooflab::Rng rng(rooflab::test_seed() + 5);
  for (int i = 0; i < 40; ++i) {
    const std::size_t len = 1 + rng.below(65536), d = std::size_t{32} << rng.below(3);
    // From a few elements (tiles of one row) to more than the whole problem (one tile).
    const std::size_t sram = i % 10 == 0 ? 8 : i % 10 == 1 ? 4 * d * (len + 7) : 1024 * (1 + rng.below(256));
    const std::size_t b = std::clamp<std::size_t>(sram / (4 * d), 1, len);
    const double tiles = static_cast<double>((len + b - 1) / b), ld = static_cast<double>(len * d);
    ROOFLAB_EXPECT(near(lab05::flash_hbm_elements(len, d, sram), 2 * ld + 2 * ld * tiles, kRel))
        << "L = " << len << ", head dim " << d << ", on-chip memory of " << sram << " elements: HBM elements (Q9)";
  }
  // Theta(L^2 d^2 / M): four times the SRAM, about a quarter of the K and V traffic, at a length where the
  // tiles divide evenly.
  const double small = lab05::flash_hbm_elements(65536, 64, 64 * 1024), big = lab05::flash_hbm_elements(65536, 64, 256 * 1024);
  ROOFLAB_EXPECT(near((small - 2 * 65536.0 * 64) / (big - 2 * 65536.0 * 64), 4.0, kRel)) << "4x the SRAM: 1/4 of the re-reads";
}

ROOFLAB_TEST(Lab05Analytic, PredictedSpeedup) {
  for (const auto& g : rooflab::graded_gpus()) {
    if (!has_fp16(g)) continue;
    for (const auto& s : shapes(6)) {
      ROOFLAB_EXPECT(near(lab05::predicted_speedup(s, 2, g), want_floor(s, Path::naive, 2, g) / want_floor(s, Path::flash, 2, g), kRel))
          << describe(s, 2) << " on " << g.id << ": predicted speedup (Q10)";
    }
  }
}

// Predicted time and extra memory of both paths against L on the datasheet, for the perf test's 16 heads of
// 64 in FP16, with the GPUs' memory as horizontal lines: drawn from the data alone, no GPU needed
// (tests/perf.cpp draws the measured version on a GPU).
ROOFLAB_TEST(Lab05Plots, TimeAndMemoryAgainstLength) {
  const auto& h100 = rooflab::gpu("h100-sxm");
  rooflab::Plot time{.title = "Attention time floor against L on an H100 SXM (datasheet), 16 heads of 64, FP16",
                     .xlabel = "sequence length L",
                     .ylabel = "time floor (s)",
                     .logx = true,
                     .logy = true,
                     .note = "roofline predictions only: no GPU was measured for this plot"};
  rooflab::Plot memory{.title = "Extra device memory against L, 16 heads of 64, FP16",
                       .xlabel = "sequence length L",
                       .ylabel = "bytes beyond Q, K, V and O",
                       .logx = true,
                       .logy = true,
                       .note = "naive: the L x L scores of every head; flash: its log-sum-exp (4 bytes a row)"};
  rooflab::Series naive_t{"naive path (predicted)", {}, "linespoints"}, flash_t{"flash (predicted)", {}, "linespoints"};
  rooflab::Series naive_m{"naive path", {}, "linespoints"}, flash_m{"flash", {}, "linespoints"};
  for (std::size_t len = 256; len <= 262144; len *= 2) {
    const lab05::Shape s{lab05::kPerfHeads, len, lab05::kPerfHeadDim, false};
    const double l = static_cast<double>(len);
    naive_t.points.emplace_back(l, lab05::time_floor_s(s, Path::naive, 2, h100));
    flash_t.points.emplace_back(l, lab05::time_floor_s(s, Path::flash, 2, h100));
    naive_m.points.emplace_back(l, lab05::naive_extra_bytes(s, 2));
    flash_m.points.emplace_back(l, static_cast<double>(lab05::kPerfHeads) * l * 4);
  }
  time.series = {naive_t, flash_t};
  memory.series = {naive_m, flash_m};
  for (const char* id : {"a100-40gb-sxm4", "h100-sxm", "l4"}) {
    const auto& g = rooflab::gpu(id);
    memory.hlines.push_back({g.memory_gb * 1e9, fmt::format("{} memory", g.name)});
  }
  rooflab::grading::save_plot(time, "lab05-time-vs-length");
  rooflab::grading::save_plot(memory, "lab05-memory-vs-length");
}
