// Lab 02 graders: the FMA kernels compute exactly what they claim (on the GPU, "gpu"; on the CPU backend,
// "emu"). The stored result is checked element by element, so a kernel whose work the compiler deleted,
// or that does fewer iterations than asked, fails.
#include "kernels.hpp"

#include <rooflab/testing/buffer.hpp>
#include <rooflab/testing/device.hpp>
#include <rooflab/testing/grading.hpp>
#include <rooflab/testing/kernel_watch.hpp>

#include <cuda_fp16.h>

#include <string>
#include <vector>

namespace {

using rooflab::grading::all_close;
using rooflab::grading::named;

constexpr std::size_t kThreads = 2 * lab02::kBlock;

// What thread t of the half2 kernel stores (kernels.hpp), lane by lane on the host: an FMA rounded once
// (as __hfma2 is), additions rounded once (as __hadd2). The host has no __hfma2, so it is written out.
__half fma_half(__half x, __half a, __half b) {
  return __double2half(static_cast<double>(__half2float(x)) * __half2float(a) + __half2float(b));
}

__half2 reference_half2(std::size_t t, __half2 a, __half2 b, int iterations) {
  __half lo = __float2half(0.0f), hi = __float2half(0.0f);
  for (int c = 0; c < lab02::kChains; ++c) {
    const __half start = __float2half(static_cast<float>(t % 64 + static_cast<std::size_t>(c)) / 64.0f);
    __half xl = start, xh = start;
    for (int i = 0; i < iterations; ++i) {
      xl = fma_half(xl, a.x, b.x);
      xh = fma_half(xh, a.y, b.y);
    }
    lo = __float2half(__half2float(lo) + __half2float(xl));
    hi = __float2half(__half2float(hi) + __half2float(xh));
  }
  return __half2(lo, hi);
}

}  // namespace

ROOFLAB_TEST(Lab02Kernels, FmaFp32) {
  ROOFLAB_REQUIRE_GPU();
  rooflab::DeviceBuffer<float> out(kThreads);
  for (int iterations : {0, 1, 7, 300}) {
    const float a = 0.999f, b = 0.0013f + 0.001f * static_cast<float>(iterations % 5);
    out.poison();
    const rooflab::KernelWatch watch;
    const double flops = lab02::fma_fp32(a, b, iterations, out.data(), kThreads, nullptr);
    ROOFLAB_CUDA_CHECK(cudaDeviceSynchronize());
    const std::string who = "fma_fp32_kernel at iterations = " + std::to_string(iterations);
    ROOFLAB_EXPECT(watch.kernels_did_the_work(who, kThreads));
    ROOFLAB_EXPECT(named(who + ", the FLOPs the launcher returns",
                         rooflab::grading::same(flops, 2.0 * lab02::kChains * iterations * kThreads)));
    std::vector<float> want(kThreads);
    for (std::size_t t = 0; t < kThreads; ++t) want[t] = lab02::reference_fma_fp32(t, a, b, iterations);
    const auto got = out.download();
    ROOFLAB_EXPECT(named(who, all_close<float, float>(got, want, {1e-5, 1e-6})));
  }
}

ROOFLAB_TEST(Lab02Kernels, FmaHalf2) {
  ROOFLAB_REQUIRE_GPU();
  rooflab::DeviceBuffer<__half2> out(kThreads);
  // The last case is the precision check: with a = 1 the chains grow by b each step and FP16 stalls where b
  // falls under half an ulp of x (at 128 for b = 1/16), while FP32 arithmetic keeps growing. A kernel that
  // computes in FP32 and rounds only the result fails it.
  struct Case {
    int iterations;
    float a_lo, a_hi, b_lo, b_hi;
  };
  for (const Case& c : {Case{0, 0.875f, 0.9375f, 0.0625f, 0.03125f}, Case{1, 0.875f, 0.9375f, 0.0625f, 0.03125f},
                        Case{5, 0.875f, 0.9375f, 0.0625f, 0.03125f}, Case{40, 0.875f, 0.9375f, 0.0625f, 0.03125f},
                        Case{3000, 1.0f, 1.0f, 0.0625f, 0.125f}}) {
    const int iterations = c.iterations;
    const __half2 a = __floats2half2_rn(c.a_lo, c.a_hi), b = __floats2half2_rn(c.b_lo, c.b_hi);
    out.poison();
    const rooflab::KernelWatch watch;
    const double flops = lab02::fma_half2(a, b, iterations, out.data(), kThreads, nullptr);
    ROOFLAB_CUDA_CHECK(cudaDeviceSynchronize());
    const std::string who = "fma_half2_kernel at iterations = " + std::to_string(iterations);
    ROOFLAB_EXPECT(watch.kernels_did_the_work(who, kThreads));
    ROOFLAB_EXPECT(named(who + ", the FLOPs the launcher returns",
                         rooflab::grading::same(flops, 4.0 * lab02::kChains * iterations * kThreads)));
    const auto got = out.download();
    std::vector<float> got_f, want_f;
    for (std::size_t t = 0; t < kThreads; ++t) {
      const __half2 w = reference_half2(t, a, b, iterations);
      got_f.push_back(__low2float(got[t]));
      got_f.push_back(__high2float(got[t]));
      want_f.push_back(__low2float(w));
      want_f.push_back(__high2float(w));
    }
    ROOFLAB_EXPECT(named(who, all_close<float, float>(got_f, want_f, rooflab::kFp16Tolerance)));
  }
}
