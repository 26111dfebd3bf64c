// Lab 03: elementwise intensity - the lab API.  PROVIDED: do not modify.
//
// The analytic questions (answers.cpp), the kernels' declared work and the CPU references. Launchers are
// in kernels.hpp. Handout: README.md beside this file; theory: docs/roofline.md.
#pragma once

#include <rooflab/inspect.hpp>
#include <rooflab/specs.hpp>

#include <cmath>
#include <cstddef>

namespace lab03 {

inline constexpr unsigned kBlock = 256;

// FLOPs and DRAM bytes of one operation.
struct Cost {
  double flops = 0;
  double bytes = 0;
};

// ---- analytic questions (answers.cpp; handout section "Counting elementwise work") ----
// Counting rules (the handout explains them): every input read once and every output written once from
// DRAM, at `elem_bytes` per element; a compare, add or multiply is 1 FLOP; GELU (tanh form) is 9 FLOPs per
// element; LayerNorm is 8 FLOPs per element (per-row constants ignored) and also reads gamma and beta (D
// each); an Adam step is 12 FLOPs per parameter and keeps parameter, gradient, m and v in FP32.

Cost relu(std::size_t n, std::size_t elem_bytes);                                 // y = max(x, 0)
Cost add(std::size_t n, std::size_t elem_bytes);                                  // y = a + b
Cost bias_relu(std::size_t rows, std::size_t cols, std::size_t elem_bytes);       // y = max(x + bias[col], 0), fused
Cost gelu(std::size_t n, std::size_t elem_bytes);                                 // y = gelu(x)
Cost layernorm(std::size_t b, std::size_t l, std::size_t d, std::size_t elem_bytes);  // over the last dim
Cost adam_step(std::size_t params);                                               // one optimizer step

// Arithmetic intensity (FLOP per byte) of a cost.
double intensity(const Cost& c);

// The roofline's least time for a cost on `gpu` with the compute roof of `type`: max(bytes / BW, FLOPs / P).
double predicted_time_s(const Cost& c, const rooflab::GpuSpec& gpu, rooflab::DType type);

// The chain y = residual + gelu(x + bias[col]) over rows x cols: as three kernels (bias add, GELU,
// residual add, each reading its inputs and writing its output to DRAM) and as one fused kernel.
Cost chain_unfused(std::size_t rows, std::size_t cols, std::size_t elem_bytes);
Cost chain_fused(std::size_t rows, std::size_t cols, std::size_t elem_bytes);
// The speedup fusion can give a memory-bound chain: the ratio of bytes moved.
double fusion_speedup(std::size_t rows, std::size_t cols, std::size_t elem_bytes);

// ---- CPU references ----

// GELU, tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
inline double gelu_ref(double x) {
  return 0.5 * x * (1.0 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}

// The sweep kernel's element: y = x, then k times y = fma(y, a, b).
inline float sweep_ref(float x, float a, float b, int k) {
  float y = x;
  for (int i = 0; i < k; ++i) y = std::fma(y, a, b);
  return y;
}

// ---- the kernels: the work each does as timed (FP32), in one place ----
// The registry below (`rooflab inspect`) and the perf tests (tests/perf_work.hpp) both read these. n =
// elements (rows x cols); the bias row is `cols` floats.
struct KernelWork {
  double bytes_read = 0;
  double bytes_written = 0;
  double flops = 0;
  constexpr double bytes() const { return bytes_read + bytes_written; }
};
namespace work {
// x and the bias row in, t out; one add an element.
constexpr KernelWork bias_add(double n, double cols) { return {4 * (n + cols), 4 * n, n}; }
// t in, u out; GELU is 9 FLOPs an element.
constexpr KernelWork gelu(double n) { return {4 * n, 4 * n, 9 * n}; }
// u and r in, y out; one add an element.
constexpr KernelWork residual_add(double n) { return {8 * n, 4 * n, n}; }
// The three kernels above in one: x, the bias row and r in, y out; the intermediates never reach DRAM.
constexpr KernelWork fused_chain(double n, double cols) { return {4 * (2 * n + cols), 4 * n, 11 * n}; }
// The sweep: one float in and one out, k FMAs (2k FLOPs) an element.
constexpr KernelWork sweep(double n, int k) { return {4 * n, 4 * n, 2.0 * k * n}; }
}  // namespace work

// The registry. The bias row is left out of the declared work (one row against rows x cols elements); the
// last field is the thresholds.json rule that grades the kernel.
inline constexpr rooflab::inspect::KernelDecl kKernels[] = {
    {"lab03::bias_add_kernel<float>", "bias_add", kBlock, 0, [](double n) { return work::bias_add(n, 0).flops; },
     [](double n) { return work::bias_add(n, 0).bytes(); }, rooflab::DType::fp32, {"unfused"}},
    {"lab03::gelu_kernel<float>", "gelu", kBlock, 0, [](double n) { return work::gelu(n).flops; },
     [](double n) { return work::gelu(n).bytes(); }, rooflab::DType::fp32, {"unfused"}},
    {"lab03::residual_add_kernel<float>", "residual_add", kBlock, 0, [](double n) { return work::residual_add(n).flops; },
     [](double n) { return work::residual_add(n).bytes(); }, rooflab::DType::fp32, {"unfused"}},
    {"lab03::fused_chain_kernel<float>", "fused", kBlock, 0, [](double n) { return work::fused_chain(n, 0).flops; },
     [](double n) { return work::fused_chain(n, 0).bytes(); }, rooflab::DType::fp32, {"fusion_speedup"}},
    {"lab03::sweep_kernel", "sweep (k = 64)", kBlock, 0, [](double n) { return work::sweep(n, 64).flops; },
     [](double n) { return work::sweep(n, 64).bytes(); }, rooflab::DType::fp32, {"sweep_far", "sweep_near"}},
};

}  // namespace lab03
