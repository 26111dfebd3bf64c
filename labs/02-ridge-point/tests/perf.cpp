// Lab 02 graders on the GPU: the FP32 FMA kernel against the FMA ceiling measured on this GPU (rooflab
// calibrate), with the theoretical peak at the SM clock shown beside it; the half2 kernel and cuBLAS tensor GEMMs reported against the datasheet (information);
// and the empirical roofline: measured bandwidth and peaks next to the datasheet's, on one chart.
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
#include <rooflab/specs.hpp>
#include <rooflab/testing/timed_data.hpp>
#include <rooflab/testing/timing.hpp>

#include <cuda_bf16.h>
#include <fmt/format.h>


namespace {

std::size_t perf_threads(const rooflab::DeviceInfo& info) { return lab02::perf::threads(info.sms); }

}  // namespace

ROOFLAB_TEST(Lab02Perf, FmaFp32Peak) {
  ROOFLAB_REQUIRE_GPU();
  const auto info = rooflab::query_device();
  const std::size_t threads = perf_threads(info);
  rooflab::DeviceBuffer<float> out(threads);
  const int iterations = lab02::perf::iterations();
  // Each thread's chain of FMAs, exactly, at threads drawn at random when the check runs (a kernel that runs the
  // chain only in the threads a fixed check reads cannot know them): a few after every sample, more after timing.
  const auto matches = [&](std::size_t count) {
    return rooflab::timed_output_matches(
        "fma_fp32", out, rooflab::sampled_indices(threads, count),
        [&](std::size_t t) { return lab02::reference_fma_fp32(t, 1.000001f, 1e-7f, iterations); }, {0, 0});
  };
  const auto m = rooflab::benchmark(
      [&](cudaStream_t s) { lab02::fma_fp32(1.000001f, 1e-7f, iterations, out.data(), threads, s); },
      lab02::perf::fma_fp32_work(threads, iterations),
      rooflab::checking_each_sample({.flush_l2 = false, .kernels = rooflab::registry_kernels(lab02::kKernels)},
                                    [&] { return matches(4); }),
      {rooflab::timed_output(out)});
  ASSERT_TRUE(matches(64));
  const double clock = m.mean_sm_clock_mhz > 0 ? m.mean_sm_clock_mhz : info.max_sm_clock_mhz;
  // For the student's information: the theoretical peak at that clock, from the datasheet's lanes per SM
  // (the graded ceiling is the FMA rate measured on this GPU, which the threshold names).
  std::string theory = "this GPU is not in data/gpus.json: no theoretical peak to show";
  if (const auto* spec = rooflab::find_gpu_by_cuda_name(info.name)) {
    const double peak = 2.0 * info.sms * spec->fp32_lanes_per_sm * clock * 1e6;  // an FMA is 2 FLOPs; MHz
    theory = fmt::format("theoretical peak {} ({} lanes x {} SMs x 2 x the clock)",
                         rooflab::units::readable(peak, "FLOP/s"), spec->fp32_lanes_per_sm, info.sms);
  }
  rooflab::grading::note(fmt::format("{}; SM clock {:.0f} MHz ({}); {}", m.summary(), clock,
                                     m.mean_sm_clock_mhz > 0 ? "measured" : "maximum: NVML absent", theory));
  // The best sample, as the calibration's ceilings are measured.
  rooflab::grading::award(ROOFLAB_LAB_ID, "fma_fp32", m.work.flops / m.min_s);
}

ROOFLAB_TEST(Lab02Perf, FmaHalf2AgainstDatasheet) {
  ROOFLAB_REQUIRE_GPU();
  const auto info = rooflab::query_device();
  const std::size_t threads = perf_threads(info);
  rooflab::DeviceBuffer<__half2> out(threads);
  const int iterations = lab02::perf::iterations();
  const auto m = rooflab::benchmark(
      [&](cudaStream_t s) {
        lab02::fma_half2(__float2half2_rn(0.999f), __float2half2_rn(0.0005f), iterations, out.data(), threads, s);
      },
      lab02::perf::fma_half2_work(threads, iterations), {.flush_l2 = false, .kernels = rooflab::registry_kernels(lab02::kKernels)},
      {rooflab::timed_output(out)});
  const auto* spec = rooflab::find_gpu_by_cuda_name(info.name);
  std::string vs = "no datasheet FP16 CUDA-core figure for this GPU";
  if (const auto peak = spec != nullptr ? rooflab::peak_flops(*spec, rooflab::DType::fp16_nontensor) : std::nullopt) {
    vs = fmt::format("{:.0f}% of the datasheet's {}", 100 * m.flops_per_s() / *peak, rooflab::units::readable(*peak, "FLOP/s"));
  }
  rooflab::grading::note(fmt::format("half2 FMA: {}, {}", rooflab::units::readable(m.flops_per_s(), "FLOP/s"), vs));
}

// cuBLAS on the tensor cores: first checked against a CPU reference, then timed at 8192^3.
ROOFLAB_TEST(Lab02Perf, TensorGemmAgainstDatasheet) {
  ROOFLAB_REQUIRE_GPU();
  const auto info = rooflab::query_device();
  const auto* spec = rooflab::find_gpu_by_cuda_name(info.name);
  for (rooflab::DType type : {rooflab::DType::fp16, rooflab::DType::bf16}) {
    if (type == rooflab::DType::bf16 && info.cc_major < 8) continue;  // no BF16 tensor cores before Ampere
    const bool bf = type == rooflab::DType::bf16;
    // Correctness at 64 x 64: row-major C = A B.
    const int small = 64;
    const auto fa = rooflab::random_floats(small * small, 1), fb = rooflab::random_floats(small * small, 2);
    std::vector<unsigned short> ha(fa.size()), hb(fb.size());
    for (std::size_t i = 0; i < fa.size(); ++i) {
      const auto pa = bf ? __bfloat16_as_ushort(__float2bfloat16(fa[i])) : __half_as_ushort(__float2half(fa[i]));
      const auto pb = bf ? __bfloat16_as_ushort(__float2bfloat16(fb[i])) : __half_as_ushort(__float2half(fb[i]));
      ha[i] = pa;
      hb[i] = pb;
    }
    rooflab::DeviceBuffer<unsigned short> da{std::span<const unsigned short>(ha)}, db{std::span<const unsigned short>(hb)};
    rooflab::DeviceBuffer<float> dc(small * small);
    dc.poison();
    lab02::tensor_gemm(type, small, da.data(), db.data(), dc.data(), nullptr);
    ROOFLAB_CUDA_CHECK(cudaDeviceSynchronize());
    const auto c = dc.download();
    const auto value = [&](const std::vector<unsigned short>& v, std::size_t i) {
      return bf ? __bfloat162float(__ushort_as_bfloat16(v[i])) : __half2float(__ushort_as_half(v[i]));
    };
    for (int i = 0; i < small; i += 9) {
      for (int j = 0; j < small; j += 7) {
        double want = 0;
        for (int k = 0; k < small; ++k) want += static_cast<double>(value(ha, i * small + k)) * value(hb, k * small + j);
        ASSERT_NEAR(c[i * small + j], want, 1e-2) << (bf ? "BF16" : "FP16") << " C[" << i << "][" << j << "]";
      }
    }
    // Throughput at 8192^3 (scaled on a dry run).
    const int n = lab02::perf::gemm_n();
    rooflab::DeviceBuffer<unsigned short> a(static_cast<std::size_t>(n) * n), b(static_cast<std::size_t>(n) * n);
    rooflab::DeviceBuffer<float> cc(static_cast<std::size_t>(n) * n);
    ROOFLAB_CUDA_CHECK(cudaMemset(a.data(), 0x3c, a.bytes()));
    ROOFLAB_CUDA_CHECK(cudaMemset(b.data(), 0x3c, b.bytes()));
    const auto m = rooflab::benchmark([&](cudaStream_t s) { lab02::tensor_gemm(type, n, a.data(), b.data(), cc.data(), s); },
                                      {.flops = 2.0 * n * n * static_cast<double>(n)}, {.max_seconds = 5, .flush_l2 = false},
                                      {rooflab::timed_output(cc)}, {rooflab::timed_input(a, "A"), rooflab::timed_input(b, "B")});
    const auto peak = spec != nullptr ? rooflab::peak_flops(*spec, type) : std::nullopt;
    rooflab::grading::note(fmt::format("{} tensor GEMM {}^3: {}{}", bf ? "BF16" : "FP16", n,
                                       rooflab::units::readable(m.flops_per_s(), "FLOP/s"),
                                       peak ? fmt::format(" = {:.0f}% of the dense datasheet {:.0f}", 100 * m.flops_per_s() / *peak,
                                                          rooflab::units::tflop_per_s(*peak))
                                            : ""));
  }
}

// The empirical roofline: measured copy bandwidth and peaks (rooflab calibrate) beside the datasheet's.
ROOFLAB_TEST(Lab02Plots, MeasuredRoofline) {
  ROOFLAB_REQUIRE_GPU();
  const auto info = rooflab::query_device();
  const auto& c = rooflab::ceilings();
  auto p = rooflab::roofline_plot("Roofline of " + info.name + ": measured (solid) and datasheet (dashed)", 0.1, 4000);
  using rooflab::Ceiling;
  using rooflab::units::tb_per_s;
  using rooflab::units::tflop_per_s;
  const double bw = c.si(Ceiling::copy_bandwidth), fp32 = c.si(Ceiling::fp32_fma_peak), fp16 = c.si(Ceiling::fp16_tensor_peak);
  p.roofs.push_back({tb_per_s(bw), tflop_per_s(fp32), fmt::format("FP32 measured (ridge {:.1f})", fp32 / bw), false});
  if (fp16 > 0) {
    p.roofs.push_back({tb_per_s(bw), tflop_per_s(fp16), fmt::format("FP16 tensor measured (ridge {:.0f})", fp16 / bw), false});
  }
  if (const auto* spec = rooflab::find_gpu_by_cuda_name(info.name)) {
    const double dbw = tb_per_s(rooflab::units::bytes_per_s_from_gb(spec->bandwidth_gbps));
    p.roofs.push_back({dbw, spec->fp32_tflops, "FP32 datasheet", true});
    if (spec->fp16_tflops) p.roofs.push_back({dbw, *spec->fp16_tflops, "FP16 tensor datasheet", true});
  }
  rooflab::grading::save_plot(p, "lab02-roofline-measured");
}
