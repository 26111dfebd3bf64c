// Lab 05: naive vs Flash attention - the lab API.  PROVIDED: do not modify.
//
// The analytic questions (answers.cpp), the tensor layout every kernel shares, the CPU reference every
// correctness test compares with and the kernels' declared work for `rooflab inspect`. Launchers are in
// kernels.hpp; the naive path's cuBLAS steps are in naive.hpp. Handout: README.md beside this file.
#pragma once

#include <rooflab/inspect.hpp>
#include <rooflab/specs.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace lab05 {

// Self-attention of `batch_heads` independent heads (batch x heads), each with `len` queries and `len` keys
// of `head_dim` elements: O = softmax(scale Q K^T) V, row by row. With `causal`, query i sees keys 0..i only.
struct Shape {
  std::size_t batch_heads = 1, len = 0, head_dim = 0;
  bool causal = false;
};

enum class Path { naive, flash };

// ---- analytic questions (answers.cpp; handout sections "Counting attention" to "Memory") ----
// Counting rules (the handout explains them):
//   FLOPs: 2 per multiply-add of Q K^T and of P V; the softmax's few FLOPs per score are not counted. With
//     the causal mask only the scores at or below the diagonal count: L (L + 1) / 2 per head, not L^2.
//   Bytes, at `elem_bytes` per element for every tensor (Q, K, V, S, P, O alike; 2 for FP16, 4 for FP32):
//     naive: read Q and K, write S; read S, write P; read P and V, write O. The mask changes none of it (the
//            GEMMs compute every score; the mask only zeroes P).
//     flash: read Q, K and V once, write O once (the ideal: scores never leave the chip; the log-sum-exp
//            per row is not counted).
//   The naive path's FLOPs are the unmasked count whatever the mask: its GEMMs compute every score.
//   A GPU's peak for `elem_bytes` 2 is its dense FP16 tensor-core peak (DType::fp16), for 4 its FP32 peak.

double flops(const Shape& s);                                           // Q1: the shape's useful FLOPs
double naive_bytes(const Shape& s, double elem_bytes);                  // Q2
double flash_bytes(const Shape& s, double elem_bytes);                  // Q3
// Q4: FLOP per byte of a path: the FLOPs it does (the naive path: the unmasked count) / its bytes.
double intensity(const Shape& s, Path path, double elem_bytes);
// Q5: is the path compute-bound on `gpu` (its intensity at or above the ridge point peak / bandwidth)?
bool compute_bound(const Shape& s, Path path, double elem_bytes, const rooflab::GpuSpec& gpu);
// Q6: the roofline's least time for the path: max(bytes / bandwidth, FLOPs it does / peak).
double time_floor_s(const Shape& s, Path path, double elem_bytes, const rooflab::GpuSpec& gpu);
// Q7: device memory the naive path needs beyond Q, K, V and O: one L x L score matrix per head (the softmax
// writes P over S in place).
double naive_extra_bytes(const Shape& s, double elem_bytes);
// Q8: the longest L whose score matrices (batch_heads of them, L x L at elem_bytes) fit in the GPU's memory
// (memory_gb x 10^9 bytes), ignoring everything else; 0 when not even L = 1 fits.
std::size_t longest_fitting_len(std::size_t batch_heads, double elem_bytes, const rooflab::GpuSpec& gpu);
// Q9: elements one head of FlashAttention-2 moves between HBM and an on-chip memory of `sram_elems`
// elements: query tiles of B = floor(sram_elems / (4 head_dim)) rows (a Q tile, a K tile, a V tile and an
// output tile of B x head_dim must fit), clamped to [1, len]; each of the ceil(len / B) query tiles reads
// all of K and V; Q is read once and O written once. So 2 L d + 2 L d ceil(L / B): Theta(L^2 d^2 / M).
double flash_hbm_elements(std::size_t len, std::size_t head_dim, std::size_t sram_elems);
// Q10: the speedup of flash over naive that the roofline predicts on `gpu`: time_floor(naive) /
// time_floor(flash).
double predicted_speedup(const Shape& s, double elem_bytes, const rooflab::GpuSpec& gpu);

// ---- the layout every kernel shares ----
// Q, K, V and O are [batch_heads][len][head_dim], row-major and dense; the log-sum-exp is [batch_heads][len]:
// lse[i] = log(sum over the keys j query i sees of exp(scale q_i . k_j)), natural log, in the units of the
// scaled scores (what a backward pass needs to rebuild P without storing it).
inline std::size_t elements(const Shape& s) { return s.batch_heads * s.len * s.head_dim; }

// ---- CPU reference ----
// One head in double: o (len x head_dim) and lse (len) from q, k, v (len x head_dim each, as floats).
inline void attention_ref(const float* q, const float* k, const float* v, std::size_t len, std::size_t head_dim,
                          double scale, bool causal, double* o, double* lse, std::size_t first_row = 0,
                          std::size_t rows = static_cast<std::size_t>(-1)) {
  std::vector<double> p(len);
  const std::size_t last = std::min(len, rows == static_cast<std::size_t>(-1) ? len : first_row + rows);
  for (std::size_t i = first_row; i < last; ++i) {
    const std::size_t keys = causal ? i + 1 : len;
    double m = -INFINITY;
    for (std::size_t j = 0; j < keys; ++j) {
      double dot = 0;
      for (std::size_t d = 0; d < head_dim; ++d) dot += static_cast<double>(q[i * head_dim + d]) * k[j * head_dim + d];
      p[j] = scale * dot;
      m = std::max(m, p[j]);
    }
    double sum = 0;
    for (std::size_t j = 0; j < keys; ++j) sum += (p[j] = std::exp(p[j] - m));
    for (std::size_t d = 0; d < head_dim; ++d) {
      double acc = 0;
      for (std::size_t j = 0; j < keys; ++j) acc += p[j] * v[j * head_dim + d];
      o[(i - first_row) * head_dim + d] = acc / sum;
    }
    lse[i - first_row] = m + std::log(sum);
  }
}

// ---- the perf tests' shape and the kernels' declared work (rooflab inspect): n = L, 16 heads of 64 ----
inline constexpr std::size_t kPerfHeads = 16;
inline constexpr std::size_t kPerfHeadDim = 64;

inline constexpr unsigned kSoftmaxBlock = 128;  // 4 warps, one row each
inline constexpr unsigned kFlash1Block = 256;   // 8 warps, one query row each
inline constexpr unsigned kFlash2Block = 128;   // 4 warps, 32 query rows each

inline constexpr rooflab::inspect::KernelDecl kKernels[] = {
    // The softmax reads S and writes P, FP16, every row of every head (unmasked rows of 4096, held in registers).
    {"lab05::softmax_rows_kernel<16, false>", "softmax", kSoftmaxBlock, 0, [](double) { return 0.0; },
     [](double n) { return static_cast<double>(kPerfHeads) * n * n * 2 * 2; }, rooflab::DType::fp16_nontensor,
     {"softmax"}},
    {"lab05::flash_fp32_kernel<64>", "flash v1 fp32", kFlash1Block, 0,
     [](double n) { return static_cast<double>(kPerfHeads) * 4 * n * n * kPerfHeadDim; },
     [](double n) { return static_cast<double>(kPerfHeads) * 4 * n * kPerfHeadDim * 4; }, rooflab::DType::fp32},
    {"lab05::flash_mma_kernel<64, 64>", "flash v2 mma", kFlash2Block, 0,
     [](double n) { return static_cast<double>(kPerfHeads) * 4 * n * n * kPerfHeadDim; },
     [](double n) { return static_cast<double>(kPerfHeads) * 4 * n * kPerfHeadDim * 2; }, rooflab::DType::fp16,
     {"flash_vs_naive"}},
};

}  // namespace lab05
