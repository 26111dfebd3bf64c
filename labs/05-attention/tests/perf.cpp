// Lab 05 graders on the GPU: the tensor-core flash kernel against the naive path (cuBLAS, your softmax,
// cuBLAS) timed in the same run at 16 heads of 64, L = 4096, FP16; the softmax against the copy ceiling on
// the bytes it must move; and the plot of time and extra memory against L, measured beside the roofline's
// predictions, with the GPU's memory as a line.
//
// The same file runs as a dry run on the CPU backend (sizes scaled by rooflab::perf_scale(), timings
// meaningless): tests/dryrun.cpp and docs/cpu-mode.md say what that proves.
#include "kernels.hpp"
#include "naive.hpp"
#include "perf_work.hpp"

#include <rooflab/testing/buffer.hpp>
#include <rooflab/testing/calibration.hpp>
#include <rooflab/cublas.hpp>
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
#include <string>
#include <utility>
#include <vector>

namespace {

const rooflab::BenchOptions kOptions{.warmup = 2, .min_samples = 5, .max_seconds = 1.0, .flush_l2 = false};
// The same, and every timed launch must start a kernel of the lab's registry (the dry run checks it).
const rooflab::BenchOptions kTimed = rooflab::expecting_kernels(kOptions, rooflab::registry_kernels(lab05::kKernels));
// Outputs checked after every sample at a few elements (rooflab::BenchOptions::check_each_sample), after timing at more.
constexpr std::size_t kEachSample = 2;

// Random Q, K and V (rooflab/testing/timed_data.hpp; queries in [-3, 3) so that a row's softmax is far from uniform),
// the output checked after timing against the double-precision reference at elements picked at random: a
// kernel that skips keys or rows, or recognises its inputs, earns no speed points.
struct Inputs {
  explicit Inputs(const lab05::Shape& s)
      : shape(s), n(lab05::elements(s)), q(n, 1, -3.0f, 3.0f), k(n, 2), v(n, 3), o(n), lse(s.batch_heads * s.len) {}
  // The double-precision reference of one row of one head: its output row and its log-sum-exp.
  struct ReferenceRow {
    std::vector<double> out;
    double lse = 0;
  };
  ReferenceRow reference_row(std::size_t head, std::size_t row) const {
    const std::size_t per_head = shape.len * shape.head_dim;
    const auto qh = q.host_range(head * per_head, per_head), kh = k.host_range(head * per_head, per_head),
               vh = v.host_range(head * per_head, per_head);
    ReferenceRow r{std::vector<double>(shape.head_dim), 0};
    lab05::attention_ref(qh.data(), kh.data(), vh.data(), shape.len, shape.head_dim, scale(), shape.causal,
                         r.out.data(), &r.lse, row, 1);
    return r;
  }
  // At `count` elements drawn at random (and the first and last); a check after every sample takes a few.
  ::testing::AssertionResult output_is_right(const std::string& what, std::size_t count = 48) const {
    const std::size_t len = shape.len, d = shape.head_dim;
    const auto want = [&](std::size_t i) { return reference_row(i / (len * d), i / d % len).out[i % d]; };
    auto r = rooflab::timed_output_matches(what, o, rooflab::sampled_indices(n, count), want, {2e-3, 1e-2});
    if (!r) r << " (" << shape.batch_heads << " heads of " << d << ", L = " << len << (shape.causal ? ", causal)" : ")");
    return r;
  }
  // The log-sum-exp flash writes beside O ([head][L]; the backward pass needs it), checked after timing like O:
  // a kernel that stops writing it at the timed shape loses the speed points too.
  ::testing::AssertionResult lse_is_right(const std::string& what, std::size_t count = 48) const {
    const std::size_t len = shape.len;
    const auto want = [&](std::size_t i) { return reference_row(i / len, i % len).lse; };
    // FP32 sums of L exponentials: the correctness tests' bound, with room for L = 4096 terms.
    auto r = rooflab::timed_output_matches(what, lse, rooflab::sampled_indices(lse.size(), count), want, {2e-3, 1e-3});
    if (!r) r << " (log-sum-exp, [head][L], " << shape.batch_heads << " heads, L = " << len << ")";
    return r;
  }
  float scale() const { return 1.0f / std::sqrt(static_cast<float>(shape.head_dim)); }

  lab05::Shape shape;
  std::size_t n;
  // What a timed launch must read (the dry run counts it): Q, K and V.
  std::vector<rooflab::TimedRead> inputs() const {
    return {rooflab::timed_input(q, "Q"), rooflab::timed_input(k, "K"), rooflab::timed_input(v, "V")};
  }
  rooflab::TimedInput<__half> q, k, v;
  rooflab::DeviceBuffer<__half> o;
  rooflab::DeviceBuffer<float> lse;
};

int as_int(std::size_t x) { return static_cast<int>(x); }

// A path's roofline time: its bytes at `bytes_per_s`, its FLOPs at `flops_per_s`, whichever is longer. A ceiling
// that is 0 (the calibration could not measure it) bounds nothing.
double roofline_s(const rooflab::Work& w, double bytes_per_s, double flops_per_s) {
  return std::max(bytes_per_s > 0 ? w.bytes() / bytes_per_s : 0.0, flops_per_s > 0 ? w.flops / flops_per_s : 0.0);
}

// The naive path and flash v2 at one shape, timed back to back: FLOP/s of each (medians) and the extra
// device memory each needed (the scores for the naive path; whatever the flash launcher allocates).
struct Pair {
  double naive_flops = 0, flash_flops = 0, naive_s = 0, flash_s = 0, naive_min_s = 0, flash_min_s = 0;
  rooflab::Work naive_work, flash_work;
  std::size_t naive_bytes_held = 0, flash_bytes_held = 0;
};
// `each_sample`: check the outputs after every sample too (the graded shape); the plot against L checks after
// timing only, since one reference row costs the head's whole Q, K and V on the host (at L = 65536, most of a
// second per element).
Pair time_both(const lab05::Shape& s, const rooflab::CublasHandle& handle, bool each_sample) {
  Inputs in(s);
  Pair p;
  const auto with_checks = [&](auto check) {
    return each_sample ? rooflab::checking_each_sample(kTimed, std::move(check)) : kTimed;
  };
  {
    rooflab::DeviceBuffer<__half> scores(lab05::naive_scores_bytes(as_int(s.batch_heads), as_int(s.len)) / sizeof(__half));
    p.naive_bytes_held = scores.bytes();
    const auto naive = rooflab::benchmark(
        [&](cudaStream_t st) {
          lab05::naive_attention(handle.get(), in.q.device.data(), in.k.device.data(), in.v.device.data(), scores.data(), in.o.data(),
                                 as_int(s.batch_heads), as_int(s.len), as_int(s.head_dim), in.scale(), s.causal, st);
        },
        lab05::perf::naive_work(s),
        with_checks([&] { return in.output_is_right("the naive path", kEachSample); }),
        {rooflab::timed_output(scores), rooflab::timed_output(in.o)}, in.inputs());
    p.naive_flops = naive.flops_per_s();
    p.naive_s = naive.median_s;
    p.naive_min_s = naive.min_s;
    p.naive_work = naive.work;
    EXPECT_TRUE(in.output_is_right("the naive path"));
  }
  auto flash_options = with_checks([&] {
    auto r = in.output_is_right("flash v2", kEachSample);
    return r ? in.lse_is_right("flash v2", kEachSample) : r;
  });
  flash_options.watch_device_memory = true;  // what the flash launcher allocates (not the harness's buffers)
  const auto flash = rooflab::benchmark(
      [&](cudaStream_t st) {
        lab05::flash_attention_fp16(in.q.device.data(), in.k.device.data(), in.v.device.data(), in.o.data(), in.lse.data(), as_int(s.batch_heads),
                                    as_int(s.len), as_int(s.head_dim), in.scale(), s.causal, st);
      },
      lab05::perf::flash_work(s), flash_options, {rooflab::timed_output(in.o), rooflab::timed_output(in.lse)}, in.inputs());
  p.flash_bytes_held = flash.peak_extra_device_bytes;
  p.flash_flops = flash.flops_per_s();
  p.flash_s = flash.median_s;
  p.flash_min_s = flash.min_s;
  p.flash_work = flash.work;
  EXPECT_TRUE(in.output_is_right("flash v2"));
  EXPECT_TRUE(in.lse_is_right("flash v2"));
  return p;
}

}  // namespace

ROOFLAB_TEST(Lab05Perf, FlashAgainstNaiveSameRun) {
  ROOFLAB_REQUIRE_GPU();
  const auto s = lab05::perf::shape();
  const rooflab::CublasHandle handle;
  const Pair p = time_both(s, handle, true);
  if (HasFailure()) return;
  rooflab::grading::note(fmt::format("{} heads of {}, L = {}, FP16: naive path {:.1f} TFLOP/s ({:.3f} ms), flash v2 "
                                     "{:.1f} TFLOP/s ({:.3f} ms): {:.2f}x",
                                     s.batch_heads, s.head_dim, s.len, p.naive_flops / 1e12, p.naive_s * 1e3,
                                     p.flash_flops / 1e12, p.flash_s * 1e3, p.flash_flops / p.naive_flops));
  // The ratio's baseline is the student's own naive path, so the ratio has no cap ("caps": false); the roof each
  // path cannot pass is its roofline time on this GPU's measured ceilings (its bytes at the copy ceiling, its
  // FLOPs at cuBLAS's FP16 tensor rate). A time under it is a timing error or work not done.
  const double bw = rooflab::grading::ceiling_in_force(rooflab::Ceiling::copy_bandwidth);
  const double tensor = rooflab::grading::ceiling_in_force(rooflab::Ceiling::fp16_tensor_peak);
  const double flash_floor = roofline_s(p.flash_work, bw, tensor), naive_floor = roofline_s(p.naive_work, bw, tensor);
  rooflab::grading::note(fmt::format("roofline times: flash v2 {:.3f} ms (best sample {:.3f} ms), naive path {:.3f} ms "
                                     "(best {:.3f} ms)", flash_floor * 1e3, p.flash_min_s * 1e3, naive_floor * 1e3,
                                     p.naive_min_s * 1e3));
  EXPECT_TRUE(rooflab::grading::speed_verdict(flash_floor <= rooflab::implausible_above() * p.flash_min_s,
                                              "flash v2 no faster than its roofline time"))
      << "flash v2 ran faster than its FLOPs allow at this GPU's FP16 tensor rate: check the work";
  EXPECT_TRUE(rooflab::grading::speed_verdict(naive_floor <= rooflab::implausible_above() * p.naive_min_s,
                                              "naive path no faster than its roofline time"))
      << "the naive path ran faster than its bytes allow at this GPU's copy ceiling: check the work";
  // The naive path is the student's own: slowed on purpose it would raise flash's ratio. It counts as no slower
  // than its roofline time over the rule's share (thresholds.json "student_baseline").
  const double naive_s = naive_floor > 0 ? rooflab::grading::capped_baseline_s(ROOFLAB_LAB_ID, "flash_vs_naive",
                                                                               p.naive_s, naive_floor)
                                         : p.naive_s;
  rooflab::grading::award(ROOFLAB_LAB_ID, "flash_vs_naive", p.flash_flops, p.naive_work.flops / naive_s);
}

ROOFLAB_TEST(Lab05Perf, SoftmaxOnTheCopyRoof) {
  ROOFLAB_REQUIRE_GPU();
  // The naive path's softmax alone, out of place, on the graded shape's 16 x 4096 rows of 4096 scores: it
  // must read S and write P once each. Random scores, checked after timing at elements picked at random.
  const auto s = lab05::perf::shape();
  const std::size_t cols = s.len, elems = s.batch_heads * s.len * s.len;
  const float scale = 0.125f;
  const rooflab::TimedInput<__half> scores(elems, 4, -8.0f, 8.0f);
  rooflab::DeviceBuffer<__half> probs(elems);
  const auto want = [&](std::size_t i) {
    const auto row = scores.host_range(i / cols * cols, cols);
    double top = -INFINITY, sum = 0;
    for (const float x : row) top = std::max(top, static_cast<double>(scale) * x);
    for (const float x : row) sum += std::exp(static_cast<double>(scale) * x - top);
    return std::exp(static_cast<double>(scale) * row[i % cols] - top) / sum;
  };
  // FP16 probabilities of about 1 / L: relative error of a few FP16 ulps.
  const auto matches = [&](std::size_t count) {
    return rooflab::timed_output_matches("softmax_rows", probs, rooflab::sampled_indices(elems, count), want, {1e-6, 1e-2});
  };
  const auto m = rooflab::benchmark(
      [&](cudaStream_t st) {
        lab05::softmax_rows(scores.device.data(), probs.data(), as_int(s.batch_heads * s.len), as_int(cols), scale,
                            false, st);
      },
      lab05::perf::softmax_work(s), rooflab::checking_each_sample(kTimed, [&] { return matches(kEachSample); }),
      {rooflab::timed_output(probs)}, {rooflab::timed_input(scores, "scores")});
  ASSERT_TRUE(matches(64));
  rooflab::grading::note(fmt::format("softmax over {} rows of {}: {:.0f} GB/s", s.batch_heads * s.len, s.len, m.best_gbps()));
  rooflab::grading::award(ROOFLAB_LAB_ID, "softmax", m.work.bytes() / m.min_s);
}

// Both paths from L = 512 up, doubling, while the naive path's scores fit in half the free memory (a dry
// run: two small lengths): measured time beside each path's roofline time (the datasheet's bandwidth and
// FP16 tensor peak, or the calibrated ones), and the extra memory each held, with the GPU's memory as a line.
ROOFLAB_TEST(Lab05Perf, TimeAndMemoryAgainstLength) {
  ROOFLAB_REQUIRE_GPU();
  const auto info = rooflab::query_device();
  std::size_t free_bytes = 0, total = 0;
  ROOFLAB_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total));
  const auto& ceilings = rooflab::ceilings();
  const double bw = ceilings.copy_gbps * 1e9;
  const double peak = ceilings.fp16_tensor_flops > 0 ? ceilings.fp16_tensor_flops : ceilings.fp32_fma_flops;
  rooflab::Series naive_t{"naive path (measured)", {}, "linespoints"}, flash_t{"flash v2 (measured)", {}, "linespoints"};
  rooflab::Series naive_p{"naive path (roofline)", {}, "lines dt 2"}, flash_p{"flash (roofline)", {}, "lines dt 2"};
  rooflab::Series naive_m{"naive path: the scores", {}, "linespoints"}, flash_m{"flash v2: what it allocated", {}, "linespoints"};
  const rooflab::CublasHandle handle;
  std::string table;
  const std::size_t first = rooflab::kDryRun ? 64 : 512, last = rooflab::kDryRun ? 128 : 65536;
  for (std::size_t len = first; len <= last; len *= 2) {
    const auto s = lab05::perf::shape(true, len);
    if (static_cast<double>(lab05::naive_scores_bytes(as_int(s.batch_heads), as_int(len))) > 0.5 * static_cast<double>(free_bytes)) break;
    const Pair p = time_both(s, handle, false);
    if (HasFailure()) return;
    const double l = static_cast<double>(len);
    naive_t.points.emplace_back(l, p.naive_s);
    flash_t.points.emplace_back(l, p.flash_s);
    naive_p.points.emplace_back(l, roofline_s(lab05::perf::naive_work(s), bw, peak));
    flash_p.points.emplace_back(l, roofline_s(lab05::perf::flash_work(s), bw, peak));
    naive_m.points.emplace_back(l, static_cast<double>(p.naive_bytes_held));
    // Log axes: a kernel that allocates nothing is drawn at 1 byte.
    flash_m.points.emplace_back(l, std::max(1.0, static_cast<double>(p.flash_bytes_held)));
    table += fmt::format("  L = {:>6}: naive {:>9.3f} ms, flash {:>9.3f} ms ({:.2f}x); scores {:.1f} MiB, flash {:.2f} MiB\n", len,
                         p.naive_s * 1e3, p.flash_s * 1e3, p.naive_s / p.flash_s, static_cast<double>(p.naive_bytes_held) / (1 << 20),
                         static_cast<double>(p.flash_bytes_held) / (1 << 20));
  }
  rooflab::grading::note("16 heads of 64, FP16, against L:\n" + table);
  rooflab::Plot time{.title = "Attention time against L on " + info.name + ", 16 heads of 64, FP16",
                     .xlabel = "sequence length L",
                     .ylabel = "time (s)",
                     .logx = true,
                     .logy = true,
                     .series = {naive_t, naive_p, flash_t, flash_p},
                     .note = "roofline: calibrated copy bandwidth and FP16 tensor peak"};
  rooflab::Plot memory{.title = "Extra device memory against L on " + info.name + ", 16 heads of 64, FP16",
                       .xlabel = "sequence length L",
                       .ylabel = "bytes",
                       .logx = true,
                       .logy = true,
                       .series = {naive_m, flash_m},
                       .hlines = {{static_cast<double>(total), "this GPU's memory"}}};
  rooflab::grading::save_plot(time, "lab05-measured-time-vs-length");
  rooflab::grading::save_plot(memory, "lab05-measured-memory-vs-length");
}
