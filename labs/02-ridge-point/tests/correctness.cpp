// Lab 02 graders: the FMA kernels compute exactly what they claim (on the GPU, "gpu"; on the CPU backend,
// "emu"). The stored result is checked element by element, so a kernel whose work the compiler deleted,
// or that does fewer iterations than asked, fails. The cuBLAS tensor GEMM is checked too (no points).
#include "kernels.hpp"

#include <rooflab/testing/buffer.hpp>
#include <rooflab/testing/device.hpp>
#include <rooflab/testing/grading.hpp>
#include <rooflab/testing/kernel_watch.hpp>
#include <rooflab/testing/random.hpp>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
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

// A tensor_gemm operand: random values rounded to FP16 or BF16, as stored (the bits) and as read back.
struct Operand {
  std::vector<unsigned short> bits;
  std::vector<float> value;
};

Operand stored(rooflab::DType type, std::size_t count, std::uint64_t seed) {
  Operand o;
  for (const float x : rooflab::random_floats(count, seed)) {
    if (type == rooflab::DType::bf16) {
      const __nv_bfloat16 h = __float2bfloat16(x);
      o.bits.push_back(__bfloat16_as_ushort(h));
      o.value.push_back(__bfloat162float(h));
    } else {
      const __half h = __float2half(x);
      o.bits.push_back(__half_as_ushort(h));
      o.value.push_back(__half2float(h));
    }
  }
  return o;
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
    rooflab::synchronize_given(nullptr);
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
    rooflab::synchronize_given(nullptr);
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

// The cuBLAS call (lab02.cublas): row-major C = A B with A and B in FP16 or BF16 and C in FP32, every element
// against a double-precision product of the stored inputs, at n = 1, a ragged 33 and 64. A transposed
// product, a swapped type or an unwritten (poisoned) element fails. The CPU backend's cuBLAS computes in
// FP32 and launches no kernel the watch could count, so this test has no KernelWatch. BF16 only where the
// GPU has BF16 tensor cores (compute capability 8.0 on; the CPU backend's pretend GPU is an sm_80).
ROOFLAB_TEST(Lab02Kernels, TensorGemm) {
  ROOFLAB_REQUIRE_GPU();
  int cc_major = 0;
  ROOFLAB_CUDA_CHECK(cudaDeviceGetAttribute(&cc_major, cudaDevAttrComputeCapabilityMajor, 0));
  for (rooflab::DType type : {rooflab::DType::fp16, rooflab::DType::bf16}) {
    if (type == rooflab::DType::bf16 && cc_major < 8) continue;
    for (int n : {1, 33, 64}) {
      const auto count = static_cast<std::size_t>(n * n);  // n x n, row-major
      const std::uint64_t seed = rooflab::test_seed() + 2 * static_cast<std::uint64_t>(n);
      const Operand a = stored(type, count, seed), b = stored(type, count, seed + 1);
      rooflab::DeviceBuffer<unsigned short> da{std::span<const unsigned short>(a.bits)};
      rooflab::DeviceBuffer<unsigned short> db{std::span<const unsigned short>(b.bits)};
      rooflab::DeviceBuffer<float> dc(count);
      dc.poison();
      lab02::tensor_gemm(type, n, da.data(), db.data(), dc.data(), nullptr);
      rooflab::synchronize_given(nullptr);
      std::vector<float> want(count);
      for (int i = 0; i < n; ++i) {
        for (int j = 0; j < n; ++j) {
          double sum = 0;
          for (int k = 0; k < n; ++k) sum += static_cast<double>(a.value[i * n + k]) * b.value[k * n + j];
          want[i * n + j] = static_cast<float>(sum);
        }
      }
      const std::string who = std::string("tensor_gemm (") + (type == rooflab::DType::bf16 ? "BF16" : "FP16") +
                              " A and B, FP32 C) at n = " + std::to_string(n);
      ROOFLAB_EXPECT(named(who, all_close<float, float>(dc.download(), want, {1e-3, 1e-3})));
    }
  }
}
