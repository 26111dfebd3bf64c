// Lab 03 graders on the GPU: each unfused kernel against the copy ceiling for the bytes it moves; the
// fused chain's speedup against the byte ratio the analysis predicts; the intensity sweep against
// min(P, I x BW) with this GPU's measured P and BW; and the plot of all of it.
//
// The same file runs as a dry run on the CPU backend (sizes scaled by rooflab::perf_scale(), timings
// meaningless): tests/dryrun.cpp and docs/cpu-mode.md say what that proves.
#include "kernels.hpp"
#include "perf_work.hpp"

#include <rooflab/testing/buffer.hpp>
#include <rooflab/testing/calibration.hpp>
#include <rooflab/testing/device.hpp>
#include <rooflab/testing/device_info.hpp>
#include <rooflab/testing/grading.hpp>
#include <rooflab/testing/plot.hpp>
#include <rooflab/testing/roofline_plot.hpp>
#include <rooflab/testing/random.hpp>
#include <rooflab/testing/timed_data.hpp>
#include <rooflab/specs.hpp>
#include <rooflab/testing/timing.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace {

// Every timed launch must start a kernel of the lab's registry (the dry run checks it).
const rooflab::BenchOptions kTimed{.kernels = rooflab::registry_kernels(lab03::kKernels)};

std::pair<std::size_t, std::size_t> perf_shape() { return lab03::perf::shape(rooflab::query_device().l2_bytes); }

// The chain's arrays, with random inputs (rooflab/testing/timed_data.hpp) and the output checked after timing
// against the reference at elements picked at random: a kernel that skips a step or an element, or
// recognises its inputs, cannot earn speed points.
struct Chain {
  explicit Chain(std::size_t count, std::size_t row_length)
      : cols(row_length), x(count, 1), r(count, 2), bias(row_length, 3), t(count), u(count), y(count) {}
  // What a timed launch of the chain (or its first step) must read (the dry run counts it); the residual
  // r is read by the chain's last step, so the bias add alone reads x and the bias.
  std::vector<rooflab::TimedRead> chain_inputs() const {
    return {rooflab::timed_input(x, "x"), rooflab::timed_input(bias, "bias"), rooflab::timed_input(r, "r")};
  }
  std::size_t cols;
  rooflab::TimedInput<float> x, r, bias;
  rooflab::DeviceBuffer<float> t, u, y;
};

// y = r + gelu(x + bias[col]) at `count` random elements and the first and last.
::testing::AssertionResult chain_output_matches(const Chain& c, const char* what, std::size_t count = 256) {
  const auto at = rooflab::sampled_indices(c.y.size(), count);
  const auto want = [&](std::size_t i) { return c.r.host(i) + lab03::gelu_ref(c.x.host(i) + c.bias.host(i % c.cols)); };
  return rooflab::timed_output_matches(what, c.y, at, want, {1e-5, 1e-5});
}

// Every sample's output checked at a few elements (rooflab::BenchOptions::check_each_sample), the last one's at
// more after timing.
constexpr std::size_t kEachSample = 8;

}  // namespace

ROOFLAB_TEST(Lab03Perf, UnfusedKernelsOnTheMemoryRoof) {
  ROOFLAB_REQUIRE_GPU();
  const auto [rows, cols] = perf_shape();
  const std::size_t n = rows * cols;
  Chain c(n, cols);
  // Each kernel's output is checked as soon as its own timing ends, not only the chain's at the end: a kernel
  // that leaves part of its output for a later call (the next kernel's untimed warm-up) is caught here.
  const auto bias_add_matches = [&](std::size_t count) {
    return rooflab::timed_output_matches("bias_add", c.t, rooflab::sampled_indices(n, count),
                                         [&](std::size_t i) { return c.x.host(i) + c.bias.host(i % c.cols); }, {1e-6, 1e-6});
  };
  const auto bias_add = rooflab::benchmark(
      [&](cudaStream_t s) { lab03::bias_add<float>(c.x.device.data(), c.bias.device.data(), c.t.data(), rows, cols, s); },
      lab03::perf::bias_add_work(rows, cols), rooflab::checking_each_sample(kTimed, [&] { return bias_add_matches(kEachSample); }),
      {rooflab::timed_output(c.t)}, {rooflab::timed_input(c.x, "x"), rooflab::timed_input(c.bias, "bias")});
  ASSERT_TRUE(bias_add_matches(256));
  auto t = c.t.download();  // the GELU's input as the host reads it (moved with the device copy while it is timed)
  const auto gelu_matches = [&](std::size_t count) {
    return rooflab::timed_output_matches("gelu", c.u, rooflab::sampled_indices(n, count),
                                         [&](std::size_t i) { return lab03::gelu_ref(t[i]); }, {1e-5, 1e-5});
  };
  const auto gelu = rooflab::benchmark([&](cudaStream_t s) { lab03::gelu<float>(c.t.data(), c.u.data(), n, s); },
                                       lab03::perf::gelu_work(n),
                                       rooflab::checking_each_sample(kTimed, [&] { return gelu_matches(kEachSample); }),
                                       {rooflab::timed_output(c.u)}, {rooflab::timed_input(c.t, t, "t")});
  ASSERT_TRUE(gelu_matches(256));
  auto u = c.u.download();
  // Each kernel's inputs were moved while it was timed (rooflab::InputMotion), so the three are no longer one
  // chain over x: the residual add is checked against the GELU output it was last given.
  const auto residual_matches = [&](std::size_t count) {
    return rooflab::timed_output_matches("residual_add", c.y, rooflab::sampled_indices(n, count),
                                         [&](std::size_t i) { return u[i] + c.r.host(i); }, {1e-6, 1e-6});
  };
  const auto residual = rooflab::benchmark(
      [&](cudaStream_t s) { lab03::residual_add<float>(c.u.data(), c.r.device.data(), c.y.data(), n, s); },
      lab03::perf::residual_add_work(n), rooflab::checking_each_sample(kTimed, [&] { return residual_matches(kEachSample); }),
      {rooflab::timed_output(c.y)}, {rooflab::timed_input(c.u, u, "u"), rooflab::timed_input(c.r, "r")});
  ASSERT_TRUE(residual_matches(256));
  // The slowest of the three is graded: every kernel of a memory-bound chain must stream.
  const double worst = std::min({bias_add.best_gbps(), gelu.best_gbps(), residual.best_gbps()});
  rooflab::grading::note(fmt::format("bias add {:.0f} GB/s, GELU {:.0f} GB/s, residual add {:.0f} GB/s",
                                     bias_add.best_gbps(), gelu.best_gbps(), residual.best_gbps()));
  rooflab::grading::award(ROOFLAB_LAB_ID, "unfused", rooflab::units::bytes_per_s_from_gb(worst));
}

ROOFLAB_TEST(Lab03Perf, FusionSpeedupAsPredicted) {
  ROOFLAB_REQUIRE_GPU();
  const auto [rows, cols] = perf_shape();
  const std::size_t n = rows * cols;
  Chain c(n, cols);
  const auto unfused = rooflab::benchmark(
      [&](cudaStream_t s) {
        lab03::unfused_chain<float>(c.x.device.data(), c.bias.device.data(), c.r.device.data(), c.t.data(), c.u.data(), c.y.data(), rows,
                                    cols, s);
      },
      lab03::perf::unfused_work(rows, cols),
      rooflab::checking_each_sample(kTimed, [&] { return chain_output_matches(c, "unfused chain", kEachSample); }),
      {rooflab::timed_output(c.t), rooflab::timed_output(c.u), rooflab::timed_output(c.y)}, c.chain_inputs());
  ASSERT_TRUE(chain_output_matches(c, "unfused chain"));
  const auto fused = rooflab::benchmark(
      [&](cudaStream_t s) { lab03::fused_chain<float>(c.x.device.data(), c.bias.device.data(), c.r.device.data(), c.y.data(), rows, cols, s); },
      lab03::perf::fused_work(rows, cols),
      rooflab::checking_each_sample(kTimed, [&] { return chain_output_matches(c, "fused chain", kEachSample); }),
      {rooflab::timed_output(c.y)}, c.chain_inputs());
  ASSERT_TRUE(chain_output_matches(c, "fused chain"));
  // The predicted speedup is the byte ratio (both are memory-bound), counted here, not by the answers.
  const double predicted = unfused.work.bytes() / fused.work.bytes();
  const double measured = unfused.min_s / fused.min_s;
  const auto& t = rooflab::threshold(ROOFLAB_LAB_ID, "fusion_speedup");
  const double fraction = measured / predicted;
  rooflab::grading::award(rooflab::sliding_score(t, fraction),
                          fmt::format("fusion speedup {:.2f}x measured, {:.2f}x predicted from the bytes ({:.0f}%)",
                                      measured, predicted, 100 * fraction));
  // The bound on plausibility is the fused chain's own bandwidth, not the speedup: the speedup may beat the
  // byte ratio when the three unfused kernels sit lower on the memory roof than the fused one (on an H100
  // the reference's unfused kernels reached 78% of the copy ceiling and the speedup was 106% of the byte
  // ratio, docs/measurements.md). No chain moves its bytes faster than the copy ceiling.
  const double fused_bw = fused.work.bytes() / fused.min_s;
  const double roof = rooflab::grading::ceiling_in_force(rooflab::Ceiling::copy_bandwidth);
  rooflab::grading::note(fmt::format("fused chain {:.0f} GB/s = {:.0f}% of the copy ceiling", fused_bw / 1e9,
                                     100 * fused_bw / roof));
  EXPECT_TRUE(rooflab::grading::speed_verdict(fused_bw <= rooflab::implausible_above() * roof,
                                              "fused chain within the copy ceiling"))
      << "faster than the copy ceiling: check the work";
}

ROOFLAB_TEST(Lab03Perf, IntensitySweepTracesTheRoofline) {
  ROOFLAB_REQUIRE_GPU();
  using rooflab::units::tb_per_s;
  using rooflab::units::tflop_per_s;
  // The roofline of this GPU as measured (bytes/s, FLOP/s); both go into results.json.
  const double bw = rooflab::grading::ceiling_in_force(rooflab::Ceiling::copy_bandwidth);
  const double peak = rooflab::grading::ceiling_in_force(rooflab::Ceiling::fp32_fma_peak);
  const double ridge = peak / bw;
  const std::size_t n = perf_shape().first * perf_shape().second / 2;
  // Random inputs, each point's output checked after timing (a kernel that stops its loop early cannot climb
  // the roofline).
  const rooflab::TimedInput<float> in(n, 4);
  rooflab::DeviceBuffer<float> out(n);
  const auto info = rooflab::query_device();
  rooflab::Series measured{"sweep kernel (measured)", {}, "linespoints"};
  int failures = 0;
  std::string report;
  for (int k = 1; k <= 4096; k *= 2) {
    const double intensity = 2.0 * k / 8.0;
    const auto sweep_matches = [&](std::size_t count) {
      return rooflab::timed_output_matches(fmt::format("sweep_kernel at k = {}", k), out, rooflab::sampled_indices(n, count),
                                           [&](std::size_t i) { return lab03::sweep_ref(in.host(i), 0.999f, 0.001f, k); },
                                           {1e-6, 1e-6});
    };
    const auto m = rooflab::benchmark([&](cudaStream_t s) { lab03::sweep(in.device.data(), out.data(), n, 0.999f, 0.001f, k, s); },
                                      lab03::perf::sweep_work(n, k),
                                      rooflab::checking_each_sample(rooflab::expecting_kernels({.max_seconds = 1.0}, kTimed.kernels),
                                                                    [&] { return sweep_matches(kEachSample); }),
                                      {rooflab::timed_output(out)}, {rooflab::timed_input(in, "in")});
    ASSERT_TRUE(sweep_matches(64));
    const double got = m.work.flops / m.min_s;
    const double roof = std::min(peak, intensity * bw);
    const bool near_ridge = intensity > ridge / 2 && intensity < ridge * 2;
    const double need = rooflab::threshold(ROOFLAB_LAB_ID, near_ridge ? "sweep_near" : "sweep_far").ratio_min();
    const bool ok = got >= need * roof;
    failures += ok ? 0 : 1;
    report += fmt::format("  I = {:>7.2f}: {:>8.2f} of {:>8.2f} TFLOP/s ({:.0f}%, need {:.0f}%){}\n", intensity,
                          tflop_per_s(got), tflop_per_s(roof), 100 * got / roof, 100 * need, ok ? "" : "  <- below");
    measured.points.emplace_back(intensity, tflop_per_s(got));
  }
  rooflab::grading::note("intensity sweep against this GPU's measured roofline:\n" + report);
  auto p = rooflab::roofline_plot("Intensity sweep on " + info.name, 0.1, 2000, {}, "TFLOP/s");
  p.series.push_back(measured);
  // Beside each measured point the model's (hollow), where the grader handed this run its predictions: the sweep
  // at k = 64 (I = 16), the one its registry predicts.
  rooflab::add_model_point(p, info.name, {"sweep (k = 64)"}, 2.0 * 64 / 8.0, 0);
  // The student's chain, unfused and fused, as labelled points (FP32, 4096-column rows).
  {
    const auto [rows, cols] = perf_shape();
    const std::size_t elems = rows * cols;
    Chain c(elems, cols);
    const double flops = lab03::perf::unfused_work(rows, cols).flops;
    const auto unfused = rooflab::benchmark(
        [&](cudaStream_t s) {
          lab03::unfused_chain<float>(c.x.device.data(), c.bias.device.data(), c.r.device.data(), c.t.data(), c.u.data(), c.y.data(), rows,
                                      cols, s);
        },
        lab03::perf::unfused_work(rows, cols), {.max_seconds = 1.0},
        {rooflab::timed_output(c.t), rooflab::timed_output(c.u), rooflab::timed_output(c.y)}, c.chain_inputs());
    const auto fused = rooflab::benchmark(
        [&](cudaStream_t s) { lab03::fused_chain<float>(c.x.device.data(), c.bias.device.data(), c.r.device.data(), c.y.data(), rows, cols, s); },
        lab03::perf::fused_work(rows, cols), rooflab::expecting_kernels({.max_seconds = 1.0}, kTimed.kernels),
        {rooflab::timed_output(c.y)}, c.chain_inputs());
    const std::size_t at = p.series.size();
    p.series.push_back({"your unfused chain", {{flops / unfused.work.bytes(), tflop_per_s(flops / unfused.min_s)}}, "points pt 7 ps 2"});
    p.series.push_back({"your fused chain", {{flops / fused.work.bytes(), tflop_per_s(flops / fused.min_s)}}, "points pt 9 ps 2"});
    p.arrows.push_back({p.series[at].points[0].first, p.series[at].points[0].second, p.series[at + 1].points[0].first,
                        p.series[at + 1].points[0].second, fmt::format("fused: {:.2f}x less time", unfused.min_s / fused.min_s)});
    rooflab::add_model_point(p, info.name, {"bias_add", "gelu", "residual_add"}, p.series[at].points[0].first, at);
    rooflab::add_model_point(p, info.name, {"fused"}, p.series[at + 1].points[0].first, at + 1);
  }
  p.roofs.push_back({tb_per_s(bw), tflop_per_s(peak), "measured roof (copy BW, FMA peak)", false});
  if (const auto* spec = rooflab::find_gpu_by_cuda_name(info.name)) {
    p.roofs.push_back({tb_per_s(rooflab::units::bytes_per_s_from_gb(spec->bandwidth_gbps)), spec->fp32_tflops,
                       "datasheet roof", true});
  }
  p.vlines.emplace_back(ridge, "measured FP32 ridge");
  rooflab::grading::save_plot(p, "lab03-intensity-sweep");
  EXPECT_TRUE(rooflab::grading::speed_verdict(failures == 0, "every sweep point near the measured roofline"))
      << "points below the roofline:\n" << report;
}
