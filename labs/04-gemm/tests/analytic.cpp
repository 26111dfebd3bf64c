// Lab 04 graders: counting GEMM work, tiling traffic, the roofline bound, occupancy and waves, tensor-core
// padding, with random shapes and every GPU in data/gpus.json; and the datasheet roofline with the ladder.
#include "lab.hpp"

#include <rooflab/testing/grading.hpp>
#include <rooflab/testing/plot.hpp>
#include <rooflab/testing/roofline_plot.hpp>
#include <rooflab/testing/random.hpp>
#include <rooflab/specs.hpp>
#include <rooflab/testing/synthetic.hpp>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <vector>

namespace {

using rooflab::DType;
using rooflab::grading::near;
using rooflab::grading::same;

constexpr rooflab::Tolerance kRel{0.0, 1e-9};

std::size_t up(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

// Random shapes from 1 to a few thousand per side, and the degenerate ones GEMM code gets wrong.
std::vector<lab04::Shape> shapes() {
  // (+ 4: with the default seed no answer then prints as a short number, such as 40, that a shape in a
  // failure message contains; the grader's leak check would flag it.)
  rooflab::Rng rng(rooflab::test_seed() + 4);
  std::vector<lab04::Shape> out{{1, 1, 1}, {1, 4096, 512}, {4096, 1, 512}, {4000, 4000, 4000}, {4096, 4096, 4096}};
  for (int i = 0; i < 40; ++i) out.push_back({1 + rng.below(6000), 1 + rng.below(6000), 1 + rng.below(6000)});
  return out;
}

std::string at(const lab04::Shape& s) {
  return std::to_string(s.m) + " x " + std::to_string(s.n) + " x " + std::to_string(s.k);
}

// The independent counts the answers are checked against.
double want_flops(const lab04::Shape& s) {
  return 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k);
}
double want_tiled(const lab04::Shape& s, std::size_t bm, std::size_t bn, double in, double out) {
  return in * (static_cast<double>(s.m * s.k * up(s.n, bn)) + static_cast<double>(s.k * s.n * up(s.m, bm))) +
         out * static_cast<double>(s.m * s.n);
}

}  // namespace

ROOFLAB_TEST(Lab04Analytic, FlopsBytesIntensity) {
  for (const auto& s : shapes()) {
    const double ideal32 = 4.0 * static_cast<double>(s.m * s.k + s.k * s.n + s.m * s.n);
    const double ideal16 = 2.0 * static_cast<double>(s.m * s.k + s.k * s.n) + 4.0 * static_cast<double>(s.m * s.n);
    ROOFLAB_EXPECT(near(lab04::flops(s), want_flops(s), kRel)) << "Q1 at " << at(s);
    ROOFLAB_EXPECT(near(lab04::ideal_bytes(s, 4, 4), ideal32, kRel)) << "Q2, FP32, at " << at(s);
    ROOFLAB_EXPECT(near(lab04::ideal_bytes(s, 2, 4), ideal16, kRel)) << "Q2, FP16 in, FP32 out, at " << at(s);
    ROOFLAB_EXPECT(near(lab04::ideal_intensity(s, 4, 4), want_flops(s) / ideal32, kRel)) << "Q3 at " << at(s);
  }
  // Square: n / 6 FLOP/byte in FP32, n / 3 with FP16 inputs and outputs.
  for (std::size_t n : {64u, 1000u, 4096u}) {
    ROOFLAB_EXPECT(near(lab04::ideal_intensity({n, n, n}, 4, 4), static_cast<double>(n) / 6, kRel)) << "Q3, n = " << n;
    ROOFLAB_EXPECT(near(lab04::ideal_intensity({n, n, n}, 2, 2), static_cast<double>(n) / 3, kRel)) << "Q3, FP16, n = " << n;
  }
}

ROOFLAB_TEST(Lab04Analytic, TilingSetsTheTraffic) {
  constexpr std::size_t kTiles[][2] = {{1, 1}, {32, 32}, {128, 128}, {128, 64}, {256, 128}};
  for (const auto& s : shapes()) {
    for (const auto& t : kTiles) {
      ROOFLAB_EXPECT(near(lab04::tiled_bytes(s, t[0], t[1], 4, 4), want_tiled(s, t[0], t[1], 4, 4), kRel))
          << "Q4 at " << at(s) << " with " << t[0] << " x " << t[1] << " tiles, FP32";
      ROOFLAB_EXPECT(near(lab04::tiled_bytes(s, t[0], t[1], 2, 4), want_tiled(s, t[0], t[1], 2, 4), kRel))
          << "Q4 at " << at(s) << " with " << t[0] << " x " << t[1] << " tiles, FP16 in";
      ROOFLAB_EXPECT(near(lab04::tiled_intensity(s, t[0], t[1], 4, 4), want_flops(s) / want_tiled(s, t[0], t[1], 4, 4),
                          kRel))
          << "Q5 at " << at(s) << " with " << t[0] << " x " << t[1] << " tiles";
    }
  }
}

ROOFLAB_TEST(Lab04Analytic, BoundAndFloorOnEveryGpu) {
  int checked = 0;
  rooflab::Rng rng(rooflab::test_seed() + 7);
  for (const auto& g : rooflab::graded_gpus()) {
    const double bw = g.bandwidth_gbps * 1e9;
    for (DType type : {DType::fp32, DType::fp16}) {
      const auto peak = rooflab::peak_flops(g, type);
      if (!peak) continue;
      const double ridge = *peak / bw;
      const std::size_t in = type == DType::fp32 ? 4 : 2;
      for (double i : {ridge / 3, ridge * 0.999, ridge * 1.001, ridge * 40, ridge * std::exp(rng.uniform(-3.0, 3.0))}) {
        ROOFLAB_EXPECT(same(lab04::compute_bound(i, g, type), i >= ridge))
            << "Q6 on " << g.id << (type == DType::fp32 ? " (FP32)" : " (FP16 tensor)") << " at " << i << " FLOP/byte";
      }
      for (const auto& s : shapes()) {
        const double bytes = static_cast<double>(in * (s.m * s.k + s.k * s.n) + 4 * s.m * s.n);
        ROOFLAB_EXPECT(near(lab04::time_floor_s(s, in, 4, g, type), std::max(bytes / bw, want_flops(s) / *peak), kRel))
            << "Q7 on " << g.id << " at " << at(s);
      }
      ++checked;
    }
  }
  EXPECT_GE(checked, 10);
}

ROOFLAB_TEST(Lab04Analytic, OccupancyAndWaves) {
  for (std::size_t bk : {8u, 16u, 32u}) {
    for (int stages : {1, 2, 3}) {
      ROOFLAB_EXPECT(same(static_cast<double>(lab04::smem_per_block(128, 64, bk, 4, stages)),
                          static_cast<double>(stages * (128 * bk + bk * 64) * 4)))
          << "Q8: 128 x 64 x " << bk << ", FP32, " << stages << " stages";
      ROOFLAB_EXPECT(same(static_cast<double>(lab04::smem_per_block(128, 128, bk, 2, stages)),
                          static_cast<double>(stages * (128 * bk + bk * 128) * 2)))
          << "Q8: 128 x 128 x " << bk << ", FP16, " << stages << " stages";
    }
  }
  // Tiles drawn from the seed too: the handout's tile table typed in answers nothing here.
  rooflab::Rng rng(rooflab::test_seed() + 8);
  for (int trial = 0; trial < 20; ++trial) {
    const std::size_t bm = 16u << rng.below(4), bn = 16u << rng.below(4), bk = 4u << rng.below(4);
    const std::size_t in = std::size_t{1} << rng.below(3);
    const int stages = 1 + static_cast<int>(rng.below(4));
    ROOFLAB_EXPECT(same(static_cast<double>(lab04::smem_per_block(bm, bn, bk, in, stages)),
                        static_cast<double>(static_cast<std::size_t>(stages) * (bm * bk + bk * bn) * in)))
        << "Q8: " << bm << " x " << bn << " x " << bk << ", " << in << "-byte elements, " << stages << " stages";
  }
  const auto& all = rooflab::graded_gpus();
  for (const auto& g : all) {
    const std::size_t drawn_smem = 1024 * rng.below(240);
    const int drawn_threads = 32 * (1 + static_cast<int>(rng.below(32)));
    for (std::size_t smem : {std::size_t{0}, std::size_t{8192}, std::size_t{16896}, std::size_t{27136},
                             std::size_t{49152}, std::size_t{100000}, std::size_t{300000}, drawn_smem}) {
      for (int threads : {64, 128, 256, 1024, 2048, drawn_threads}) {
        int want = 0;
        if (threads <= g.max_threads_per_block && static_cast<double>(smem) <= g.smem_max_per_block_kb * 1024) {
          const std::size_t unit = static_cast<std::size_t>(std::max(g.smem_alloc_unit_bytes, 1));
          const std::size_t foot = up(smem + static_cast<std::size_t>(g.reserved_smem_per_block_bytes), unit) * unit;
          want = std::min(g.max_threads_per_sm / threads, g.max_blocks_per_sm);
          if (foot > 0) want = std::min(want, static_cast<int>(static_cast<std::size_t>(g.smem_per_sm_kb * 1024) / foot));
        }
        ROOFLAB_EXPECT(same(lab04::blocks_per_sm(smem, threads, g), want))
            << "Q9 on " << g.id << ": " << threads << " threads, " << smem << " bytes of shared memory";
      }
    }
    if (!g.sms) continue;
    for (const auto& s : shapes()) {
      for (int per_sm : {1, 2, 3}) {
        const std::size_t tiles = up(s.m, 128) * up(s.n, 128);
        const std::size_t slots = static_cast<std::size_t>(*g.sms * per_sm);
        const std::size_t waves = up(tiles, slots);
        const auto w = lab04::waves(s, 128, 128, per_sm, g);
        ROOFLAB_EXPECT(same(static_cast<double>(w.tiles), static_cast<double>(tiles))) << "Q10 tiles at " << at(s);
        ROOFLAB_EXPECT(same(static_cast<double>(w.waves), static_cast<double>(waves)))
            << "Q10 waves on " << g.id << " at " << at(s) << ", " << per_sm << " blocks per SM";
        ROOFLAB_EXPECT(near(w.efficiency, static_cast<double>(tiles) / static_cast<double>(waves * slots), kRel))
            << "Q10 wave efficiency on " << g.id << " at " << at(s) << ", " << per_sm << " blocks per SM";
      }
    }
  }
}

ROOFLAB_TEST(Lab04Analytic, TensorCorePadding) {
  for (const auto& s : shapes()) {
    for (std::size_t mult : {8u, 16u}) {
      const double padded = 2.0 * static_cast<double>(up(s.m, mult) * mult) * static_cast<double>(up(s.n, mult) * mult) *
                            static_cast<double>(up(s.k, mult) * mult);
      ROOFLAB_EXPECT(near(lab04::padding_waste_flops(s, mult), padded - want_flops(s), {1e-6, 1e-9}))
          << "Q11 at " << at(s) << " padded to multiples of " << mult;
    }
  }
}

// The ladder on the datasheet roofline of an A100: each rung at the intensity its tile gives (kKernels'
// bytes, Q4's model) and the roof above it; no GPU was measured for this plot. With a GPU the perf tests
// draw the measured ladder (lab04-ladder.png).
ROOFLAB_TEST(Lab04Plots, DatasheetRooflineWithTheLadder) {
  const auto& g = rooflab::gpu("a100-80gb-sxm4");
  const double bw = g.bandwidth_gbps * 1e9, n = 4096;
  auto p = rooflab::roofline_plot("GEMM ladder at 4096^3 on the " + g.name + " roofline", 0.1, 4000,
                                  "datasheet roofs and each rung's tile intensity: no GPU was measured for this plot",
                                  "attainable TFLOP/s", "arithmetic intensity from DRAM (FLOP/byte)");
  rooflab::add_datasheet_roofs(p, g);
  // Rungs with the same tile share a point: one labelled point for all of them ("4 2D blocktile, 5 ...").
  // (The roofs mark their own ridge points.)
  std::vector<std::pair<std::pair<double, double>, std::string>> points;
  for (const auto& k : lab04::kKernels) {
    const double i = k.flops(n) / k.bytes(n);
    const double roof = k.dtype == DType::fp32 ? g.fp32_tflops : g.fp16_tflops.value_or(g.fp32_tflops);
    const std::pair<double, double> at{i, std::min(roof * 1e12, i * bw) / 1e12};
    const auto same = std::find_if(points.begin(), points.end(), [&](const auto& q) { return q.first == at; });
    if (same == points.end()) {
      points.emplace_back(at, std::string(k.variant));
    } else {
      same->second += ", " + std::string(k.variant);
    }
  }
  for (const auto& [at, names] : points) p.series.push_back({names + " (tile intensity)", {at}, "points ps 2"});
  rooflab::grading::save_plot(p, "lab04-roofline-datasheet");
}
