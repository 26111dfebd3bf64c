// Lab 02: the ridge point - the lab API.  PROVIDED: do not modify.
//
// The analytic questions (answers.cpp) and the CPU references the tests compare kernels with. The kernels'
// launchers are declared in kernels.hpp. Handout: README.md beside this file; theory: docs/roofline.md.
#pragma once

#include <rooflab/inspect.hpp>
#include <rooflab/specs.hpp>

#include <cmath>
#include <cstddef>
#include <optional>

namespace lab02 {

// ---- the kernels: launch shape and declared work (rooflab inspect and the static checks) ----

inline constexpr unsigned kBlock = 256;
// Independent FMA chains per thread in the FP32 kernel: each FMA waits ~4 cycles for the previous one in
// its chain, so with one chain per thread a scheduler needs about four warps to switch between to keep its
// FMA pipe busy; eight chains keep it busy with fewer (handout: "Latency and independent chains").
inline constexpr int kChains = 8;
// Iterations of the FMA loop in the performance tests.
inline constexpr int kPerfIterations = 4096;
// n = threads launched; each does kPerfIterations x kChains FMAs and stores one 4-byte result. The last
// field is the thresholds.json rule that grades the kernel (none: reported, no points).
inline constexpr rooflab::inspect::KernelDecl kKernels[] = {
    {"lab02::fma_fp32_kernel", "fma_fp32", kBlock, 0, [](double n) { return 2.0 * kChains * kPerfIterations * n; },
     [](double n) { return 4 * n; }, rooflab::DType::fp32, {"fma_fp32"}},
    {"lab02::fma_half2_kernel", "fma_half2", kBlock, 0,
     [](double n) { return 4.0 * kChains * kPerfIterations * n; }, [](double n) { return 4 * n; },
     rooflab::DType::fp16_nontensor},  // half2 on the CUDA cores: its floor uses the FP16 non-tensor peak
};

// ---- analytic questions (answers.cpp; handout section "Peaks and ridges") ----

// Q1. FP32 FMA lanes per SM for a compute capability (handout table; A100 is not an H100).
int fp32_lanes_per_sm(int cc_major, int cc_minor);

// Q2. Peak FP32 FLOP/s from the SM count, FP32 lanes per SM and the clock in MHz (an FMA is 2 FLOPs).
double fp32_peak_flops(int sms, int lanes_per_sm, double clock_mhz);

// Q3. The ridge point of `gpu` for a data type, in FLOP per byte: the dense datasheet peak over the
//     datasheet bandwidth (decimal units). Empty if the GPU has no such unit (rooflab::peak_flops).
std::optional<double> ridge_point(const rooflab::GpuSpec& gpu, rooflab::DType type);

// Q4. The best FLOP/s a kernel of `intensity` FLOP/byte can reach on `gpu` for a data type.
double attainable_flops(double intensity, const rooflab::GpuSpec& gpu, rooflab::DType type);

// Q5. Is a kernel of this intensity memory-bound on `gpu` for this data type?
bool memory_bound(double intensity, const rooflab::GpuSpec& gpu, rooflab::DType type);

// Q6. The fraction of the data type's peak such a kernel can reach at best.
double fraction_of_peak(double intensity, const rooflab::GpuSpec& gpu, rooflab::DType type);

// Q7. Decoding one token of a dense model at batch `batch`: every weight is read once per step, and each
//     weight does 2 FLOPs per sequence in the batch. The least time per step on `gpu` for a data type,
//     in seconds (weights only; ignore the KV cache and activations). exercises 3 and 7 of docs/sources.md.
double decode_step_s(double params, double bytes_per_param, int batch, const rooflab::GpuSpec& gpu,
                     rooflab::DType type);

// Q8. Tokens per second over the whole batch at that step time.
double decode_tokens_per_s(double params, double bytes_per_param, int batch, const rooflab::GpuSpec& gpu,
                           rooflab::DType type);

// Q9. Arithmetic intensity of a linear layer y = x W (W is in_features x out_features) for `batch` rows
//     of x: FLOPs over the bytes of W, x and y, each read or written once at bytes_per_element.
double linear_intensity(int batch, int in_features, int out_features, double bytes_per_element);

// Q10. The smallest batch at which that linear layer reaches the ridge point of `gpu` for the data type
//      (exercise 8 of docs/sources.md). 0 if no batch up to 1,000,000 does.
int batch_at_ridge(int in_features, int out_features, double bytes_per_element, const rooflab::GpuSpec& gpu,
                   rooflab::DType type);

// ---- CPU references ----

// What thread t of the FP32 FMA kernel stores: kChains chains, chain c starting at x = (t % 1024) + c and
// updated `iterations` times by x = fma(x, a, b); out[t] = the chains' final values summed in order c = 0, 1, ...
inline float reference_fma_fp32(std::size_t t, float a, float b, int iterations) {
  float sum = 0.0f;
  for (int c = 0; c < kChains; ++c) {
    float x = static_cast<float>(t % 1024 + static_cast<std::size_t>(c));
    for (int i = 0; i < iterations; ++i) x = std::fma(x, a, b);
    sum += x;
  }
  return sum;
}

}  // namespace lab02
