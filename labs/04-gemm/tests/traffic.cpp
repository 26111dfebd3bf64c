// Lab 04 traffic hints: each FP32 rung on the CPU backend with its global loads and stores recorded and
// counted as a GPU counts them (warp requests, 32-byte sectors, a modelled L2 and DRAM; docs/cpu-mode.md
// "Memory traffic"). Hints: no points (rubric.json), and no GPU needed.
//
// Two byte counts are compared, and they answer different questions:
//   - the bytes the threads ask for (every load and store in full, before any coalescing or cache) are what
//     the handout's tile analysis (Q4, lab.hpp's kKernels) counts: each rung must match it within 10%;
//   - the modelled DRAM bytes are what a GPU with this L2 would move: the tile analysis ignores the L2, which
//     catches much of the untiled rungs' re-reading, so these are noted beside it, never graded against it.
//
// Shape: n = 128 (one 128 x 128 block tile), with the modelled L2 scaled from the graded 4096^3 by the
// footprint (128/4096)^2, so the matrices overflow it as the graded ones overflow a real L2.
#include "kernels.hpp"

#include <rooflab/testing/buffer.hpp>
#include <rooflab/testing/grading.hpp>
#include <rooflab/testing/random.hpp>
#include <rooflab/testing/roofline_plot.hpp>
#include <rooflab/testing/traffic.hpp>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <string_view>

namespace {

constexpr int kN = 128;
constexpr double kGradedN = 4096;

const rooflab::inspect::KernelDecl& decl_of(std::string_view registry) {
  for (const auto& d : lab04::kKernels) {
    if (d.variant == registry) return d;
  }
  throw std::invalid_argument(std::string("no Lab 04 registry entry ").append(registry));
}

// One rung at kN^3 with beta = 0, recorded, and where its matrices were (to tell the sites apart).
struct Recorded {
  rooflab::traffic::KernelTraffic k;
  const void* a = nullptr;
  const void* b = nullptr;
  const void* c = nullptr;
  // The access site of one matrix and direction, or nullptr.
  const rooflab::traffic::Site* site(const void* matrix, bool store) const {
    for (const auto& s : k.sites) {
      if (s.allocation == matrix && s.store == store) return &s;
    }
    return nullptr;
  }
};

Recorded record_rung(const lab04::Rung& rung) {
  const std::size_t elems = std::size_t{kN} * kN;
  rooflab::DeviceBuffer<float> a{std::span<const float>(rooflab::random_floats(elems, 41))};
  rooflab::DeviceBuffer<float> b{std::span<const float>(rooflab::random_floats(elems, 42))};
  rooflab::DeviceBuffer<float> c(elems);
  rooflab::traffic::Options options;
  options.l2_scale = (kN / kGradedN) * (kN / kGradedN);
  const auto launches = rooflab::traffic::record(
      [&] { rung.launch(kN, kN, kN, 1.0f, a.data(), b.data(), 0.0f, c.data(), nullptr); }, options);
  return {rooflab::traffic::only(launches, decl_of(rung.registry).kernel), a.data(), b.data(), c.data()};
}

}  // namespace

// Every rung asks for the bytes its tile analysis counts, and the report shows what a GPU's L2 would leave
// of them for DRAM, with the intensity each gives.
ROOFLAB_TEST(Lab04Traffic, RungsAskForTheirTileBytes) {
  const double n = kN;
  for (const lab04::Rung& rung : lab04::kSimtRungs) {
    const auto k = record_rung(rung).k;
    const auto& decl = decl_of(rung.registry);
    const double analytic = decl.bytes(n), asked = static_cast<double>(k.bytes_requested);
    rooflab::traffic::note_summary(rung.id, k, analytic, decl.flops(n));
    EXPECT_NEAR(asked / analytic, 1.0, 0.10)
        << rung.id << ": the threads ask for " << asked << " bytes, the tile analysis counts " << analytic;
  }
}

// Rung 2's point: a warp reads a row of B and writes a row of C, 32 consecutive floats, and reads one
// element of A (a broadcast). Every access site fetches no more sectors than its bytes fill.
ROOFLAB_TEST(Lab04Traffic, CoalescedRungFetchesOnlyWhatItUses) {
  const auto k = record_rung(lab04::kSimtRungs[1]).k;
  EXPECT_TRUE(rooflab::traffic::coalesced(k));
}

// Rung 1 is uncoalesced on purpose: the 32 lanes of a warp take 32 rows, so each load of A reads 32 rows
// (a sector each) and each store of C writes 32 rows; rung 2 swaps the indices, and its loads of A become
// broadcasts and its loads of B and stores of C whole lines. The model must show both, as a GPU's counters
// would, so the comparison is something a student sees.
ROOFLAB_TEST(Lab04Traffic, NaiveRungShowsTheUncoalescedPattern) {
  const Recorded naive_run = record_rung(lab04::kSimtRungs[0]);
  const Recorded coalesced_run = record_rung(lab04::kSimtRungs[1]);
  const auto& naive = naive_run.k;
  const auto& coalesced = coalesced_run.k;
  const auto* naive_a = naive_run.site(naive_run.a, false);
  const auto* naive_c = naive_run.site(naive_run.c, true);
  ASSERT_TRUE(naive_a != nullptr && naive_c != nullptr) << rooflab::emu::traffic::table({naive});
  EXPECT_FALSE(rooflab::traffic::is_coalesced(*naive_a)) << "rung 1, A: " << rooflab::traffic::describe(*naive_a);
  EXPECT_FALSE(rooflab::traffic::is_coalesced(*naive_c)) << "rung 1, C: " << rooflab::traffic::describe(*naive_c);
  for (const void* matrix : {coalesced_run.a, coalesced_run.b, coalesced_run.c}) {
    for (bool store : {false, true}) {
      if (const auto* s = coalesced_run.site(matrix, store)) {
        EXPECT_TRUE(rooflab::traffic::is_coalesced(*s)) << "rung 2: " << rooflab::traffic::describe(*s);
      }
    }
  }
  // Sectors are what the SMs fetch from the L2; the modelled L2 catches much of the naive rung's re-reading
  // before DRAM, so the two ratios differ.
  const double sectors = double(naive.load_sectors + naive.store_sectors) /
                         double(coalesced.load_sectors + coalesced.store_sectors);
  rooflab::grading::note(rooflab::traffic::format(
      "naive fetches %.1fx the sectors of coalesced from the L2 and moves %.2fx its DRAM bytes in the model",
      sectors, naive.dram_bytes() / coalesced.dram_bytes()));
}

// The ladder on a roofline twice: each rung at the intensity its tile analysis gives and at the intensity
// its modelled DRAM bytes give (same FLOPs, this test's shape), under the A100's datasheet roofs. The gap
// between a rung's two points is what the L2 saves (or, for a rung that rereads more than its tile says,
// costs); the handout's Q4 reasons about the first point, a profiler on a GPU measures the second.
ROOFLAB_TEST(Lab04Traffic, LadderOnTheRooflineWithModelledBytes) {
  const auto& g = rooflab::gpu("a100-80gb-sxm4");
  const double n = kN, bw = g.bandwidth_gbps * 1e9;
  auto p = rooflab::roofline_plot(
      "GEMM ladder at " + std::to_string(kN) + "^3 on the " + g.name + " roofline: tile analysis and modelled DRAM",
      0.1, 4000, "modelled on the CPU backend (L2 scaled from 4096^3), datasheet roofs: no GPU was measured",
      "attainable TFLOP/s", "arithmetic intensity from DRAM (FLOP/byte)");
  rooflab::add_datasheet_roofs(p, g);
  const auto on_roof = [&](double intensity) {
    return std::pair{intensity, std::min(g.fp32_tflops * 1e12, intensity * bw) / 1e12};
  };
  rooflab::Series analytic{"tile analysis", {}, "points pt 6 ps 2"}, modelled{"modelled DRAM bytes", {}, "points pt 7 ps 2"};
  for (const lab04::Rung& rung : lab04::kSimtRungs) {
    const auto k = record_rung(rung).k;
    const auto& decl = decl_of(rung.registry);
    // The L2 only removes traffic: what reaches DRAM is at most the sectors the SMs fetched and wrote.
    const double fetched = 32.0 * static_cast<double>(k.load_sectors + k.store_sectors);
    ASSERT_GT(k.dram_bytes(), 0) << rung.id << ": no DRAM traffic was modelled";
    EXPECT_LE(k.dram_bytes(), fetched) << rung.id << ": the modelled L2 added traffic";
    const double tile = decl.flops(n) / decl.bytes(n), dram = decl.flops(n) / k.dram_bytes();
    analytic.points.push_back(on_roof(tile));
    analytic.labels.emplace_back(rung.id);
    modelled.points.push_back(on_roof(dram));
    modelled.labels.emplace_back(rung.id);
    rooflab::grading::note(std::string(rung.id) +
                           rooflab::traffic::format(": %.3g FLOP/byte from the tile analysis, %.3g from the modelled "
                                                    "DRAM bytes",
                                                    tile, dram));
  }
  p.series.push_back(std::move(analytic));
  p.series.push_back(std::move(modelled));
  rooflab::grading::save_plot(p, "lab04-roofline-modelled");
}
