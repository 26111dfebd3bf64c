// Lab @LAB_ID@ graders: performance on the GPU, against the ceiling its rule in thresholds.json names (here the
// copy bandwidth measured on this GPU by rooflab calibrate). The arrays outgrow the L2 so the kernel streams
// from DRAM; the bytes are counted here, not by the student's answers; the output is checked after timing so
// a kernel that skips work earns no speed points. The same file runs as a dry run on the CPU backend (sizes
// scaled by rooflab::perf_scale(), timings meaningless). fill in: one ROOFLAB_TEST per graded kernel.
#include "kernels.hpp"

#include <rooflab/testing/buffer.hpp>
#include <rooflab/testing/device.hpp>
#include <rooflab/testing/device_info.hpp>
#include <rooflab/testing/grading.hpp>
#include <rooflab/testing/timed_data.hpp>
#include <rooflab/testing/timing.hpp>

ROOFLAB_TEST(@LAB_SUITE@Perf, Scale) {
  ROOFLAB_REQUIRE_GPU();
  const @LAB_NS@::Kernel& k = @LAB_NS@::kernel("scale");
  const std::size_t n = rooflab::streaming_bytes(rooflab::query_device().l2_bytes) / sizeof(float);
  const rooflab::TimedInput<float> x(n, 1);
  rooflab::DeviceBuffer<float> y(n);
  constexpr float a = 0.5f;
  const rooflab::Work work{.bytes_read = 4.0 * static_cast<double>(n), .bytes_written = 4.0 * static_cast<double>(n)};
  const rooflab::Measurement m = rooflab::benchmark(
      [&](cudaStream_t s) { @LAB_NS@::scale(x.device.data(), y.data(), a, n, s); }, work,
      {.kernels = rooflab::registry_kernels(@LAB_NS@::kKernelDecls)}, {rooflab::timed_output(y)},
      {rooflab::timed_input(x, "x")});
  ASSERT_TRUE(rooflab::timed_output_matches(k.id(), y.download(), rooflab::sampled_indices(n, 256),
                                            [&](std::size_t i) { return a * x.host(i); }, {0, 1e-6}));
  rooflab::grading::note(std::string(k.id()) + ": " + m.summary());
  // The lab id comes from the folder's name (ROOFLAB_LAB_ID); the rule is the kernel's graded_by.
  rooflab::grading::award(ROOFLAB_LAB_ID, k.decl.graded_by[0], m.work.bytes() / m.min_s);
}
