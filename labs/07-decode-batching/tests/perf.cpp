// Lab 07 graders on the GPU: the GEMV against the copy ceiling on its weight bytes; the batched kernel's
// time nearly flat in the batch (weights read once); and one Llama-3-8B block's decode step against its
// floor, with the plot of tokens/s against batch.
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
#include <rooflab/specs.hpp>
#include <rooflab/testing/timed_data.hpp>
#include <rooflab/testing/timing.hpp>

#include <cuda_fp16.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace {

// Random weights and inputs (rooflab/testing/timed_data.hpp), the output checked after timing against the reference at
// rows picked at random: a kernel that skips rows, columns or batch rows, or recognises its inputs, cannot
// earn speed points.
struct Linear {
  Linear(int rows, int cols, int max_batch, std::uint64_t salt)
      : n(rows), k(cols), w(static_cast<std::size_t>(rows) * cols, 2 * salt),
        x(static_cast<std::size_t>(max_batch) * cols, 2 * salt + 1), y(static_cast<std::size_t>(max_batch) * rows) {}
  // At `count` outputs drawn at random (and the first and last); a check after every sample takes a few.
  ::testing::AssertionResult check(int batch, const char* what, std::size_t count = 64) const {
    const std::size_t outputs = static_cast<std::size_t>(batch) * n;
    const auto at = rooflab::sampled_indices(outputs, count);
    const auto want = [&](std::size_t i) {
      const auto row = w.host_range(i % n * k, k), input = x.host_range(i / n * k, k);
      double ref = 0;
      lab07::linear_ref(row.data(), input.data(), &ref, 1, k, 1);
      return ref;
    };
    // The correctness tests' tolerance: FP32 sums of k products rounded to FP16.
    const rooflab::Tolerance tol{2e-3 * std::sqrt(static_cast<double>(k)), 2e-3};
    auto r = rooflab::timed_output_matches(what, y, at, want, tol);
    if (!r) r << " (n = " << n << ", k = " << k << ", batch " << batch << ")";
    return r;
  }
  // What a timed launch at this batch must read (the dry run counts it): the weights and the batch's inputs.
  rooflab::TimedRead weights() const { return rooflab::timed_input(w, "weights W"); }
  rooflab::TimedRead inputs(int batch) const {
    return rooflab::timed_input(x, "inputs x", 0, static_cast<std::size_t>(batch) * k);
  }
  int n, k;
  rooflab::TimedInput<__half> w, x;
  rooflab::DeviceBuffer<__half> y;
};

// Outputs checked after every sample at a few elements (rooflab::BenchOptions::check_each_sample), after timing at more.
constexpr std::size_t kEachSample = 4;

int side() { return lab07::perf::gemv_side(rooflab::query_device().l2_bytes); }

rooflab::Measurement time_batched(Linear& l, int batch, double max_seconds = 3.0) {
  return rooflab::benchmark(
      [&](cudaStream_t s) { lab07::batched_gemv(l.w.device.data(), l.x.device.data(), l.y.data(), l.n, l.k, batch, s); },
      lab07::perf::linear_work(l.n, l.k, batch),
      rooflab::checking_each_sample({.max_seconds = max_seconds, .kernels = rooflab::registry_kernels(lab07::kKernels)},
                                    [&l, batch] { return l.check(batch, "batched_gemv", kEachSample); }),
      {rooflab::timed_output(l.y)},
      {l.weights(), l.inputs(batch)});
}

// The roofline's time at `batch` over its time at batch 1 for an n x k layer on this GPU: each time is the
// longer of the bytes (weights once, inputs, outputs) over the copy ceiling and the FLOPs over the FP32 FMA
// ceiling (CUDA cores, the slower unit a correct kernel may use). While the FLOPs hide under the bytes the
// ratio is about 1; once they take longer (batch 64 on an H100: 3.2x batch 1's memory time) the time
// grows with the batch however the weights are read. Both ceilings come from this GPU's calibration.
double roofline_s(int n, int k, int batch) {
  const double bw = rooflab::grading::ceiling_in_force(rooflab::Ceiling::copy_bandwidth);
  const double fma = rooflab::grading::ceiling_in_force(rooflab::Ceiling::fp32_fma_peak);
  const auto work = lab07::perf::linear_work(n, k, batch);
  return std::max(work.bytes() / bw, work.flops / fma);
}
double roofline_ratio(int n, int k, int batch) { return roofline_s(n, k, batch) / roofline_s(n, k, 1); }

}  // namespace

ROOFLAB_TEST(Lab07Perf, GemvOnTheMemoryRoof) {
  ROOFLAB_REQUIRE_GPU();
  const int s = side();
  Linear l(s, s, 1, 1);
  l.y.poison();
  const auto m = rooflab::benchmark([&](cudaStream_t st) { lab07::gemv(l.w.device.data(), l.x.device.data(), l.y.data(), s, s, st); },
                                    lab07::perf::linear_work(s, s, 1),
                                    rooflab::checking_each_sample({.kernels = rooflab::registry_kernels(lab07::kKernels)},
                                                                  [&] { return l.check(1, "gemv", kEachSample); }),
                                    {rooflab::timed_output(l.y)},
                                    {l.weights(), l.inputs(1)});
  ASSERT_TRUE(l.check(1, "gemv"));
  rooflab::grading::note(fmt::format("GEMV {} x {} (FP16): {:.1f} MB of weights in {:.1f} us, {:.0f} GB/s", s, s,
                                     m.work.bytes() / 1e6, m.min_s * 1e6, m.best_gbps()));
  rooflab::grading::award(ROOFLAB_LAB_ID, "gemv", m.work.bytes() / m.min_s);
}

ROOFLAB_TEST(Lab07Perf, BatchedReadsTheWeightsOnce) {
  ROOFLAB_REQUIRE_GPU();
  const int s = side();
  Linear l(s, s, 64, 2);
  const auto t1 = time_batched(l, 1);
  ASSERT_TRUE(l.check(1, "batched_gemv"));
  const auto t8 = time_batched(l, 8);
  ASSERT_TRUE(l.check(8, "batched_gemv"));
  const auto t64 = time_batched(l, 64);
  ASSERT_TRUE(l.check(64, "batched_gemv"));
  // Each limit is the lab's slack (thresholds.json) times the roofline's own ratio on this GPU, so that a
  // kernel that reads W once passes on any GPU and one that rereads it per batch row (8x, 64x) fails.
  // Batch 1 is the student's own kernel: slowed on purpose it would pass slow batches. Each ratio counts it as no
  // slower than its roofline time over the rule's share (thresholds.json "student_baseline").
  const double roof1_s = roofline_s(s, s, 1);
  const double t1_8 = rooflab::grading::capped_baseline_s(ROOFLAB_LAB_ID, "batch8_time_ratio", t1.min_s, roof1_s);
  const double t1_64 = rooflab::grading::capped_baseline_s(ROOFLAB_LAB_ID, "batch64_time_ratio", t1.min_s, roof1_s);
  const double r8 = t8.min_s / t1_8, r64 = t64.min_s / t1_64;
  const double roof8 = roofline_ratio(s, s, 8), roof64 = roofline_ratio(s, s, 64);
  const double max8 = rooflab::threshold(ROOFLAB_LAB_ID, "batch8_time_ratio").ratio_max() * roof8;
  const double max64 = rooflab::threshold(ROOFLAB_LAB_ID, "batch64_time_ratio").ratio_max() * roof64;
  rooflab::grading::note(fmt::format("batched {} x {}: batch 1 {:.1f} us; batch 8 {:.2f}x that (roofline {:.2f}x, limit "
                                     "{:.2f}x); batch 64 {:.2f}x (roofline {:.2f}x, limit {:.2f}x)",
                                     s, s, t1.min_s * 1e6, r8, roof8, max8, r64, roof64, max64));
  EXPECT_TRUE(rooflab::grading::speed_verdict(r8 <= max8, "time(batch 8) / time(batch 1) <= slack x roofline ratio"))
      << "eight tokens should cost little more than one: read each weight once for the whole batch";
  EXPECT_TRUE(rooflab::grading::speed_verdict(r64 <= max64, "time(batch 64) / time(batch 1) <= slack x roofline ratio"))
      << "64 tokens cost little more than the roofline allows if the weights are read once and the inputs come "
         "from cache";
}

ROOFLAB_TEST(Lab07Perf, DecodeStepAgainstTheFloor) {
  ROOFLAB_REQUIRE_GPU();
  // One Llama-3-8B block's linear layers (attention left out) at batches 1 to 64 with your batched kernel:
  // tokens/s of the whole 32-layer model against the floor of its weights over the copy ceiling.
  const auto info = rooflab::query_device();
  const double bw = rooflab::ceilings().copy_gbps * 1e9;
  std::vector<Linear> layers;
  double weight_bytes = 0;
  for (const auto& shape : lab07::perf::kBlockLayers) {
    const int n = rooflab::kDryRun ? 64 : shape.n, k = rooflab::kDryRun ? 64 : shape.k;
    layers.emplace_back(n, k, 64, 3 + layers.size());
    weight_bytes += 2.0 * n * k;
  }
  const double model_layers = 32;
  rooflab::Series measured{"your batched kernel (measured)", {}, "linespoints"}, floor{"bound: weights once per step at the copy ceiling", {}, "lines"};
  std::string table;
  for (int batch = 1; batch <= 64; batch *= 2) {
    double step = 0;
    for (auto& l : layers) {
      step += time_batched(l, batch, 0.3).min_s;
      EXPECT_TRUE(l.check(batch, "batched_gemv"));
    }
    const double tokens = batch / (step * model_layers), best = batch / (weight_bytes * model_layers / bw);
    measured.points.emplace_back(batch, tokens);
    floor.points.emplace_back(batch, best);
    table += fmt::format("  batch {:>2}: {:>8.0f} tokens/s ({:.0f}% of the {:.0f} the weights allow)\n", batch, tokens,
                         100 * tokens / best, best);
  }
  rooflab::grading::note("Llama-3-8B's linear layers, 32 blocks, batched decode:\n" + table);
  rooflab::Plot p{.title = "Decode batching on " + info.name,
                  .xlabel = "batch (sequences)",
                  .ylabel = "tokens/s",
                  .logx = true,
                  .logy = true};
  p.series.push_back(measured);
  p.series.push_back(floor);
  rooflab::grading::save_plot(p, "lab07-decode-batching");
}
