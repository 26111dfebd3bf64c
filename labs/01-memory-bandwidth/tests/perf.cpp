// Lab 01 graders: performance on the GPU, against the copy ceiling measured on this GPU (rooflab
// calibrate). Arrays are at least 4x the L2 (and 256 MB) so every kernel streams from DRAM; the L2 is
// flushed before every sample. The bytes are counted here, not by the student's answers, and the output
// is checked after timing so a kernel that skips work cannot earn speed points.
//
// Also draws the lab's two plots: bandwidth vs array size (the L2 plateau, then DRAM) and vs stride.
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
#include <rooflab/testing/random.hpp>
#include <rooflab/specs.hpp>
#include <rooflab/testing/timed_data.hpp>
#include <rooflab/testing/timing.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace {

using lab01::StreamOp;

std::size_t perf_elements() { return lab01::perf::elements(rooflab::query_device().l2_bytes); }

// Random a, b and c (rooflab/testing/timed_data.hpp): each kernel's output is checked after every sample and after
// timing against the host's arithmetic at elements picked at random. No kernel writes an array it reads; the
// arrays a timed kernel reads are moved before every sample (rooflab::InputMotion), and host() follows them.
struct Arrays {
  explicit Arrays(std::size_t count) : n(count), a(count, 1), b(count, 2), c(count, 3) {}
  lab01::StreamArrays view() { return {a.device.data(), b.device.data(), c.device.data(), kScalar, n}; }
  static constexpr float kScalar = 0.5f;
  rooflab::DeviceBuffer<float>& written_by(StreamOp op) {
    switch (op) {
      case StreamOp::copy: return c.device;
      case StreamOp::scale: return b.device;
      case StreamOp::add: return c.device;
      case StreamOp::triad: return a.device;
    }
    return a.device;
  }
  // What a timed launch of `op` must read (the dry run counts it): every array the kernel reads.
  std::vector<rooflab::TimedRead> read_by(StreamOp op) const {
    switch (op) {
      case StreamOp::copy: return {rooflab::timed_input(a, "a")};
      case StreamOp::scale: return {rooflab::timed_input(c, "c")};
      case StreamOp::add: return {rooflab::timed_input(a, "a"), rooflab::timed_input(b, "b")};
      case StreamOp::triad: return {rooflab::timed_input(b, "b"), rooflab::timed_input(c, "c")};
    }
    return {};
  }
  std::size_t n;
  rooflab::TimedInput<float> a, b, c;
};

// The kernel's output at `count` elements drawn at random (and the first and last) against the host's arithmetic
// on the inputs its last launch was given.
::testing::AssertionResult output_matches(const lab01::Kernel& v, const Arrays& arr, std::size_t count) {
  const auto at = rooflab::sampled_indices(arr.n, count);
  const float s = Arrays::kScalar;
  const auto check = [&](const rooflab::DeviceBuffer<float>& out, auto want) {
    return rooflab::timed_output_matches(v.id(), out, at, want, {0, 1e-6});
  };
  switch (v.op) {
    case StreamOp::copy: return check(arr.c.device, [&](std::size_t i) { return arr.a.host(i); });
    case StreamOp::scale: return check(arr.b.device, [&](std::size_t i) { return s * arr.c.host(i); });
    case StreamOp::add: return check(arr.c.device, [&](std::size_t i) { return arr.a.host(i) + arr.b.host(i); });
    case StreamOp::triad: return check(arr.a.device, [&](std::size_t i) { return arr.b.host(i) + s * arr.c.host(i); });
  }
  return ::testing::AssertionFailure() << "no such operation";
}

// Times one STREAM kernel and grades it by the threshold its registry entry names.
void grade_kernel(std::string_view id) {
  ROOFLAB_REQUIRE_GPU();
  const lab01::Kernel& v = lab01::kernel(id);
  Arrays arr(perf_elements());
  const auto view = arr.view();
  const rooflab::Measurement m =
      rooflab::benchmark([&](cudaStream_t s) { v.run(view, s); }, lab01::perf::stream_work(v.op, arr.n),
                         rooflab::checking_each_sample({.kernels = rooflab::registry_kernels(lab01::kKernelDecls)},
                                                       [&] { return output_matches(v, arr, 8); }),
                         {rooflab::timed_output(arr.written_by(v.op))}, arr.read_by(v.op));
  ASSERT_TRUE(output_matches(v, arr, 256));
  rooflab::grading::note(std::string(v.id()) + ": " + m.summary());
  // Best sample against the ceiling's best sample (calibration reports the best, as BabelStream does).
  rooflab::grading::award(ROOFLAB_LAB_ID, v.decl.graded_by[0], m.work.bytes() / m.min_s);
}

double strided_gbps(std::size_t stride) {
  // The same n_out at every stride, large enough that even at stride 1 the arrays outgrow the L2 and the
  // launch overhead is negligible; at stride 32 the input spans 4x perf_elements() floats.
  const std::size_t n_out = perf_elements() / 8;
  const rooflab::TimedInput<float> in(n_out * stride, 4 + stride);
  rooflab::DeviceBuffer<float> out(n_out);
  // Checked like the STREAM kernels: a kernel that ignores the stride reads the wrong elements.
  const auto matches = [&](std::size_t count) {
    return rooflab::timed_output_matches(fmt::format("strided_read at stride {}", stride), out,
                                         rooflab::sampled_indices(n_out, count),
                                         [&](std::size_t i) { return in.host(i * stride); }, {0, 0});
  };
  const auto m = rooflab::benchmark(
      [&](cudaStream_t s) { lab01::strided_read(in.device.data(), out.data(), n_out, stride, s); },
      lab01::perf::strided_work(n_out),
      rooflab::checking_each_sample({.kernels = rooflab::registry_kernels(lab01::kKernelDecls)}, [&] { return matches(8); }),
      {rooflab::timed_output(out)}, {rooflab::timed_input(in, "in")});
  EXPECT_TRUE(matches(256));
  return m.best_gbps();  // useful bytes per second: what the program gets out of the memory system
}

}  // namespace

ROOFLAB_TEST(Lab01Perf, Copy) { grade_kernel("copy"); }
ROOFLAB_TEST(Lab01Perf, Scale) { grade_kernel("scale"); }
ROOFLAB_TEST(Lab01Perf, Add) { grade_kernel("add"); }
ROOFLAB_TEST(Lab01Perf, Triad) { grade_kernel("triad"); }
ROOFLAB_TEST(Lab01Perf, TriadVec4) { grade_kernel("triad_vec4"); }

// The coalescing experiment: at stride 32 every 4-byte read costs a whole sector, so the useful bandwidth
// must collapse. A kernel that ignores the stride (or fakes the experiment) does not show it.
ROOFLAB_TEST(Lab01Perf, StridedCollapse) {
  ROOFLAB_REQUIRE_GPU();
  const double bw1 = strided_gbps(1);
  const double bw32 = strided_gbps(32);
  const double limit = rooflab::threshold(ROOFLAB_LAB_ID, lab01::kernel("strided_read").decl.graded_by[0]).ratio_max();
  rooflab::grading::note(fmt::format("strided read: {:.1f} GB/s at stride 1, {:.1f} GB/s at stride 32 (ratio {:.3f}, "
                                     "must be at most {:.2f})", bw1, bw32, bw32 / bw1, limit));
  EXPECT_TRUE(rooflab::grading::speed_verdict(bw32 / bw1 <= limit, "stride-32 / stride-1 bandwidth <= limit"))
      << "stride 32 should waste 7 of every 8 bytes fetched";
}

// The lab's plots (no points): where the L2 plateau ends on this GPU, and how bandwidth falls with stride.
ROOFLAB_TEST(Lab01Plots, BandwidthVsSizeAndStride) {
  ROOFLAB_REQUIRE_GPU();
  const auto& ceilings = rooflab::ceilings();
  const rooflab::DeviceInfo info = rooflab::query_device();
  rooflab::Plot size_plot{.title = fmt::format("Triad bandwidth vs array size on {}", info.name),
                          .xlabel = "bytes per array",
                          .ylabel = "GB/s (read + write)",
                          .logx = true,
                          .y_from_zero = true,
                          .xformat = "%.0s%cB"};
  rooflab::Series triad{"triad (L2 not flushed: small arrays stay in L2)", {}};
  // 1 MB to 1 GB on a GPU (scaled on a dry run).
  for (std::size_t bytes = rooflab::scaled(std::size_t{1} << 20, 4096); bytes <= rooflab::scaled(std::size_t{1} << 30);
       bytes *= 2) {
    if (3 * bytes > info.total_memory_bytes / 2) break;
    Arrays arr(bytes / sizeof(float));
    const auto view = arr.view();
    const auto m = rooflab::benchmark([&](cudaStream_t s) { lab01::triad(view.b, view.c, view.a, 0.5f, view.n, s); },
                                      {.bytes_read = 2.0 * bytes, .bytes_written = 1.0 * bytes},
                                      {.max_seconds = 0.5, .flush_l2 = false}, {}, arr.read_by(StreamOp::triad));
    triad.points.emplace_back(static_cast<double>(bytes), m.gbps());
  }
  size_plot.series.push_back(triad);
  size_plot.hlines.push_back({ceilings.copy_gbps, "measured copy ceiling (DRAM)"});
  if (const auto* spec = rooflab::find_gpu_by_cuda_name(info.name)) {
    size_plot.hlines.push_back({spec->bandwidth_gbps, "datasheet bandwidth"});
  }
  size_plot.vlines.emplace_back(static_cast<double>(info.l2_bytes), "L2 size");
  rooflab::grading::save_plot(size_plot, "lab01-bandwidth-vs-size");

  rooflab::Plot stride_plot{.title = fmt::format("Strided read: useful bandwidth vs stride on {}", info.name),
                            .xlabel = "stride (floats)",
                            .ylabel = "useful GB/s",
                            .logx = true,
                            .logy = true};
  rooflab::Series strided{"strided_read", {}};
  for (std::size_t stride = 1; stride <= 64; stride *= 2) strided.points.emplace_back(stride, strided_gbps(stride));
  stride_plot.series.push_back(strided);
  stride_plot.hlines.push_back({ceilings.copy_gbps, "measured copy ceiling"});
  rooflab::grading::save_plot(stride_plot, "lab01-bandwidth-vs-stride");
  EXPECT_GE(triad.points.size(), 2u) << "the size sweep measured fewer than two sizes";
}
