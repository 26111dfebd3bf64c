// Lab 01 traffic hints: every kernel on the CPU backend with its global loads and stores recorded and
// counted as a GPU counts them (warp requests, 32-byte sectors, a modelled L2 and DRAM; docs/cpu-mode.md
// "Memory traffic"). Each test notes, per kernel, the analytic bytes of the registry against the modelled
// DRAM bytes and the sectors per request; it fails when a kernel moves bytes its threads never use.
// Hints: no points (rubric.json), and no GPU needed.
//
// Shapes: 2^18 + 3 elements per array (1 MB, a ragged tail), with the modelled L2 a quarter of one array:
// the graded arrays are at least 4x the L2 (handout Q7), and the reduced ones keep that ratio.
#include "kernels.hpp"

#include <rooflab/testing/buffer.hpp>
#include <rooflab/testing/grading.hpp>
#include <rooflab/testing/plot.hpp>
#include <rooflab/testing/random.hpp>
#include <rooflab/testing/traffic.hpp>

#include <algorithm>
#include <string>

namespace {

constexpr std::size_t kN = (std::size_t{1} << 18) + 3;

rooflab::traffic::Options options_for(std::size_t array_bytes) {
  rooflab::traffic::Options o;
  o.l2_bytes = array_bytes / 4;
  return o;
}

}  // namespace

// Each STREAM kernel reads and writes each of its arrays once: its modelled DRAM bytes are the registry's,
// and every access uses the whole sectors it fetches.
ROOFLAB_TEST(Lab01Traffic, StreamKernelsMoveTheirAnalyticBytes) {
  for (const auto& v : lab01::kKernels) {
    if (v.run == nullptr) continue;  // strided_read: below
    rooflab::DeviceBuffer<float> a{std::span<const float>(rooflab::random_floats(kN, 1))};
    rooflab::DeviceBuffer<float> b{std::span<const float>(rooflab::random_floats(kN, 2))};
    rooflab::DeviceBuffer<float> c{std::span<const float>(rooflab::random_floats(kN, 3))};
    const auto launches = rooflab::traffic::record([&] { v.run({a.data(), b.data(), c.data(), 1.5f, kN}, nullptr); },
                                                   options_for(kN * sizeof(float)));
    const auto k = rooflab::traffic::only(launches, v.decl.kernel);
    const double n = static_cast<double>(kN);
    rooflab::traffic::note_summary(v.id(), k, v.decl.bytes(n), v.decl.flops(n));
    EXPECT_TRUE(rooflab::traffic::dram_near(k, v.decl.bytes(n), 0.10)) << v.id();
    EXPECT_TRUE(rooflab::traffic::coalesced(k)) << v.id();
  }
}

// The vectorized triad moves 16 bytes per access.
ROOFLAB_TEST(Lab01Traffic, TriadVec4MovesSixteenBytesPerAccess) {
  rooflab::DeviceBuffer<float> a(kN), b{std::span<const float>(rooflab::random_floats(kN, 2))},
      c{std::span<const float>(rooflab::random_floats(kN, 3))};
  const auto k = rooflab::traffic::only(
      rooflab::traffic::record([&] { lab01::triad_vec4(b.data(), c.data(), a.data(), 1.5f, kN, nullptr); },
                               options_for(kN * sizeof(float))),
      lab01::kernel("triad_vec4").decl.kernel);
  EXPECT_EQ(k.widest_load, 16u) << "the widest load of triad_vec4, in bytes";
  EXPECT_EQ(k.widest_store, 16u) << "the widest store of triad_vec4, in bytes";
}

// At stride s a warp's 32 reads touch min(s, 8) sectors per 32 bytes the threads use: the model shows the
// strided kernel fetching min(s, 8) x its bytes, as the handout's bandwidth plot predicts. The plot
// lab01-strided-modelled puts the modelled bytes per byte used beside the analysis, stride by stride.
ROOFLAB_TEST(Lab01Traffic, StridedReadFetchesWholeSectors) {
  constexpr std::size_t n_out = std::size_t{1} << 15;
  rooflab::Plot plot{.title = "Strided read: DRAM bytes read per byte used",
                     .xlabel = "stride (floats)",
                     .ylabel = "bytes read / bytes used",
                     .logx = true,
                     .logy = true,
                     .note = "modelled on the CPU backend (L2 a quarter of the output): no GPU was measured"};
  rooflab::Series analysis{"min(stride, 8): whole 32-byte sectors per 4 bytes used", {}, "lines"};
  rooflab::Series modelled{"modelled DRAM reads", {}, "points pt 7 ps 1.5"};
  for (std::size_t stride : {1, 2, 4, 8, 16, 32}) {
    rooflab::DeviceBuffer<float> in{std::span<const float>(rooflab::random_floats(n_out * stride, 4))};
    rooflab::DeviceBuffer<float> out(n_out);
    const auto k = rooflab::traffic::only(
        rooflab::traffic::record([&] { lab01::strided_read(in.data(), out.data(), n_out, stride, nullptr); },
                                 options_for(n_out * sizeof(float))),
        lab01::kernel("strided_read").decl.kernel);
    const double factor = static_cast<double>(std::min<std::size_t>(stride, 8));
    const double reads = 4.0 * static_cast<double>(n_out) * factor, writes = 4.0 * static_cast<double>(n_out);
    rooflab::traffic::note_summary("strided_read, stride " + std::to_string(stride), k, reads + writes, 0);
    EXPECT_NEAR(k.dram_read_bytes / reads, 1.0, 0.10)
        << "stride " << stride << ": modelled DRAM reads against " << factor << "x the bytes read";
    EXPECT_NEAR(k.dram_write_bytes / writes, 1.0, 0.10) << "stride " << stride;
    EXPECT_NEAR(k.sectors_per_load_request(), 4 * factor, 0.5) << "stride " << stride;
    analysis.points.emplace_back(static_cast<double>(stride), factor);
    modelled.points.emplace_back(static_cast<double>(stride), k.dram_read_bytes / (4.0 * static_cast<double>(n_out)));
  }
  plot.series.push_back(std::move(analysis));
  plot.series.push_back(std::move(modelled));
  rooflab::grading::save_plot(plot, "lab01-strided-modelled");
}
