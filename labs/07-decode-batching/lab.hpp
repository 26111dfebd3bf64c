// Lab 07: decode batching - the lab API.  PROVIDED: do not modify.
//
// The analytic questions (answers.cpp), the CPU reference and the kernels' declared work. Launchers are in
// kernels.hpp. Handout: README.md beside this file.
#pragma once

#include <rooflab/inspect.hpp>
#include <rooflab/specs.hpp>

#include <cstddef>

namespace lab07 {

// ---- analytic questions (answers.cpp; handout sections "Decode reads every weight" and "Batching") ----
// Rules: a model's weights are params_b x 10^9 parameters at `bytes_per_param` each, and all of them are
// read from DRAM once per decode step: for a mixture of experts Q2 and Q3 count every expert at every batch,
// batch 1 included, as if the batch's tokens touched them all (Q7 is the batch-1 floor that reads the
// active experts alone). A token costs 2 FLOPs per active parameter (active_params_b for a mixture, else
// params_b).
// The KV cache of a sequence of `context` tokens is 2 x layers x kv_heads x head_dim x kv_elem_bytes per
// token (Lab 06), read once per step. Bandwidth is the GPU's datasheet GB/s (10^9 bytes per second), peaks
// are rooflab::peak_flops(gpu, type).

double weight_bytes(const rooflab::ModelSpec& m, double bytes_per_param);  // Q1
// Q2: the roofline's least time of one decode step for `batch` sequences of `context` tokens: the larger of
// the bytes it must read (all the weights, every expert of a mixture, then every sequence's KV cache) over
// the bandwidth and the FLOPs it must do over the peak of `compute`.
double step_floor_s(const rooflab::ModelSpec& m, const rooflab::GpuSpec& gpu, std::size_t batch, std::size_t context,
                    double bytes_per_param, double kv_elem_bytes, rooflab::DType compute);
// Q3: tokens per second at that floor (every sequence gains one token per step).
double tokens_per_s(const rooflab::ModelSpec& m, const rooflab::GpuSpec& gpu, std::size_t batch, std::size_t context,
                    double bytes_per_param, double kv_elem_bytes, rooflab::DType compute);
// Q4: the arithmetic intensity of a linear layer n_in -> n_out applied to `batch` tokens: 2 x batch x n_in x
// n_out FLOPs over the bytes of the weights, the inputs and the outputs at `elem_bytes` each.
double linear_intensity(std::size_t n_in, std::size_t n_out, std::size_t batch, double elem_bytes);
// Q5: the smallest batch at which that layer's intensity reaches the GPU's ridge point for `type`
// (peak / bandwidth); 0 if no batch up to 1,000,000 does.
std::size_t crossover_batch(std::size_t n_in, std::size_t n_out, const rooflab::GpuSpec& gpu, rooflab::DType type,
                            double elem_bytes);
// Q6: the smallest batch at which the roofline lets the layer run at `fraction` of the peak of `type`
// (min(P, I x BW) >= fraction x P); 0 if none up to 1,000,000.
std::size_t batch_for_fraction(std::size_t n_in, std::size_t n_out, const rooflab::GpuSpec& gpu, rooflab::DType type,
                               double elem_bytes, double fraction);
// Q7: a mixture of experts at batch 1 reads only the experts its token uses: the least time of one step
// reading the active parameters alone (weights only, memory-bound).
double moe_batch1_floor_s(const rooflab::ModelSpec& m, const rooflab::GpuSpec& gpu, double bytes_per_param);

// ---- CPU reference ----

// Y[b][j] = sum_k X[b][k] W[j][k] in double, from FP16 inputs given as floats. W is n x k, X batch x k.
inline void linear_ref(const float* w, const float* x, double* y, int n, int k, int batch) {
  for (int b = 0; b < batch; ++b) {
    for (int j = 0; j < n; ++j) {
      double acc = 0;
      for (int i = 0; i < k; ++i) acc += static_cast<double>(w[static_cast<std::size_t>(j) * k + i]) * x[static_cast<std::size_t>(b) * k + i];
      y[static_cast<std::size_t>(b) * n + j] = acc;
    }
  }
}

// ---- the kernels' declared work (rooflab inspect): n = weights (N x K), FP16, the input and output
// vectors negligible beside them; the batched kernels at batch 1 (the perf test's baseline of both batch ratios),
// 4 (CUDA cores, the largest batch they take; not graded on its own), 8 and 64 (tensor cores).
inline constexpr rooflab::inspect::KernelDecl kKernels[] = {
    {"lab07::gemv_kernel", "gemv", 256, 0, [](double n) { return 2 * n; }, [](double n) { return 2 * n; },
     rooflab::DType::fp32, {"gemv"}},
    {"lab07::batched_kernel<1>", "batched (B = 1, CUDA cores)", 256, 0, [](double n) { return 2 * n; },
     [](double n) { return 2 * n; }, rooflab::DType::fp32, {"batch8_time_ratio", "batch64_time_ratio"}},
    {"lab07::batched_kernel<4>", "batched (B = 4, CUDA cores)", 256, 0, [](double n) { return 2 * 4 * n; },
     [](double n) { return 2 * n; }, rooflab::DType::fp32, {}},
    {"lab07::batched_tc_kernel<1>", "batched (B = 8)", 128, 0, [](double n) { return 2 * 8 * n; },
     [](double n) { return 2 * n; }, rooflab::DType::fp16, {"batch8_time_ratio"}},
    {"lab07::batched_tc_kernel<4>", "batched (B = 64, tensor cores)", 128, 0, [](double n) { return 2 * 64 * n; },
     [](double n) { return 2 * n; }, rooflab::DType::fp16, {"batch64_time_ratio"}},
};

}  // namespace lab07
