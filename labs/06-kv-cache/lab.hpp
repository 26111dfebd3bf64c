// Lab 06: KV-cache sizing and paged decode attention - the lab API.  PROVIDED: do not modify.
//
// The analytic questions (answers.cpp), the cache layout the kernels share, the CPU reference and the
// kernels' declared work. Launchers are in kernels.hpp. Handout: README.md beside this file.
#pragma once

#include <rooflab/inspect.hpp>
#include <rooflab/specs.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <span>
#include <vector>

namespace lab06 {

// Tokens per KV block: vLLM's default block size.
inline constexpr int kBlockTokens = 16;

// ---- analytic questions (answers.cpp; handout sections "Sizing the cache" and "Paging") ----
// Rules: K and V are both cached, for every layer and every KV head, head_dim elements each, at
// `elem_bytes` per element (2 for FP16/BF16, 1 for INT8/FP8). GB is 10^9 bytes, GiB 2^30: each function's
// name says which it returns or takes. A GPU's memory is its listed memory_gb x 10^9 bytes; a model's
// weights are params_b x 10^9 parameters at `weight_bytes` each (every expert of a mixture stays resident).
// A sequence of `context` tokens caches tokens_cached(m, context) of them (Q5): use it wherever a context
// is given.

double kv_bytes_per_token(const rooflab::ModelSpec& m, double elem_bytes);                                 // Q1
double kv_gb_per_sequence(const rooflab::ModelSpec& m, std::size_t context, double elem_bytes);           // Q2
double kv_gib_for_batch(const rooflab::ModelSpec& m, std::size_t batch, std::size_t context, double elem_bytes);  // Q3
// Q4: how many times more cache the same model would need with one KV head per query head (MHA).
double gqa_saving(const rooflab::ModelSpec& m);
// Q5: tokens a sequence of `context` tokens keeps in its cache (a sliding window caps it; none: all of them).
std::size_t tokens_cached(const rooflab::ModelSpec& m, std::size_t context);
// Q6: the largest batch of `context`-token sequences whose caches fit beside the weights and `reserve_gb`
// GB (activations, workspace) on `gpu`; 0 when not even one fits.
std::size_t max_batch(const rooflab::ModelSpec& m, const rooflab::GpuSpec& gpu, std::size_t context,
                      double weight_bytes, double elem_bytes, double reserve_gb);
// Q7: the same, the other way round: the longest context (tokens per sequence) for `batch` sequences, 0
// when none fits. A model with a sliding window never caches more than the window: when `batch` full
// windows fit, every context does, and the answer is kUnlimited.
inline constexpr std::size_t kUnlimited = static_cast<std::size_t>(-1);
std::size_t max_context(const rooflab::ModelSpec& m, const rooflab::GpuSpec& gpu, std::size_t batch,
                        double weight_bytes, double elem_bytes, double reserve_gb);
// Q8: how many whole blocks of `block_tokens` tokens fit in `budget_gib` GiB of cache.
std::size_t blocks_for_budget_gib(const rooflab::ModelSpec& m, double budget_gib, std::size_t block_tokens,
                                  double elem_bytes);
// Q9: cache slots (tokens) reserved but holding nothing, for sequences of the given lengths: when each
// sequence reserves `max_len` tokens up front (contiguous), and when it holds whole blocks of
// `block_tokens` (paged).
struct Waste {
  std::size_t contiguous_tokens = 0;
  std::size_t paged_tokens = 0;
};
Waste reserved_but_unused(std::span<const std::size_t> lengths, std::size_t max_len, std::size_t block_tokens);
// Q10: the fraction of `gpu`'s memory that the caches of `batch` sequences of `context` tokens take.
double kv_share_of_gpu(const rooflab::ModelSpec& m, const rooflab::GpuSpec& gpu, std::size_t batch,
                       std::size_t context, double elem_bytes);
// Q11: the bytes one layer's decode attention must read from DRAM for one step over a batch: every cached
// K and V element of each sequence once (query and output are negligible beside them).
double decode_attention_bytes(std::span<const std::size_t> lengths, int kv_heads, int head_dim, double elem_bytes);

// ---- the paged cache (the kernels' shared layout) ----
//
// Two pools of FP16 blocks, one for K and one for V, each [num_blocks][kBlockTokens][kv_heads][head_dim].
// Sequence b's token p lives in physical block block_table[b * max_blocks + p / kBlockTokens], at slot
// p % kBlockTokens of it. Physical blocks are handed out in any order (the tests shuffle them).
struct PagedCacheLayout {
  int max_blocks = 0;  // row length of the block table: logical blocks per sequence, at most
  int kv_heads = 0;
  int head_dim = 0;  // 64 or 128
};
// The element index of (physical block, slot, kv head, dim) in a pool: callable from kernels and host code
// (the analytic binary includes this header without CUDA, hence the macro).
#if defined(__CUDACC__)
#define LAB06_HOST_DEVICE __host__ __device__
#else
#define LAB06_HOST_DEVICE
#endif
LAB06_HOST_DEVICE inline std::size_t pool_index(const PagedCacheLayout& l, int block, int slot, int kv_head, int dim) {
  return ((static_cast<std::size_t>(block) * kBlockTokens + slot) * l.kv_heads + kv_head) * l.head_dim + dim;
}

// Decode attention may split long sequences into chunks that run in parallel and combine them at the
// end; a chunk's partial result (running max, running sum, head_dim unnormalized outputs) goes to a
// workspace of this many bytes, which the caller allocates. A kernel that needs none may ignore it.
inline constexpr int kChunkTokens = 256;
inline std::size_t decode_workspace_bytes(int batch, int heads, int head_dim, int max_len) {
  const std::size_t chunks = (static_cast<std::size_t>(max_len) + kChunkTokens - 1) / kChunkTokens;
  return static_cast<std::size_t>(batch) * heads * chunks * (head_dim + 2) * sizeof(float);
}

// ---- CPU reference ----

// Decode attention for one sequence and one query head from a contiguous cache: k and v hold `len` rows of
// head_dim (this head's KV head only). softmax(scale q.k) v in double.
inline void attention_ref(const float* q, const float* k, const float* v, int len, int head_dim, double scale,
                          double* out) {
  std::vector<double> s(static_cast<std::size_t>(len));
  double m = -INFINITY;
  for (int t = 0; t < len; ++t) {
    double dot = 0;
    for (int d = 0; d < head_dim; ++d) dot += static_cast<double>(q[d]) * k[static_cast<std::size_t>(t) * head_dim + d];
    s[t] = scale * dot;
    m = std::max(m, s[t]);
  }
  double sum = 0;
  for (int t = 0; t < len; ++t) sum += (s[t] = std::exp(s[t] - m));
  for (int d = 0; d < head_dim; ++d) {
    double o = 0;
    for (int t = 0; t < len; ++t) o += s[t] * v[static_cast<std::size_t>(t) * head_dim + d];
    out[d] = o / sum;
  }
}

// ---- the kernels' declared work (rooflab inspect): n = cached tokens in the batch, Llama-3-8B-like layer
// (8 KV heads, head dim 128, GQA ratio 4), FP16. Per token and KV head: K and V rows read (2 x 2 x 128
// bytes); 4 query heads x 128 x 2 FLOPs each for the dot products and as many for the weighted sum.
inline constexpr rooflab::inspect::KernelDecl kKernels[] = {
    {"lab06::paged_kv_append_kernel", "append", 128, 0, [](double) { return 0.0; },
     [](double n) { return 2 * 2 * 8 * 128 * 2 * n; }, rooflab::DType::fp16_nontensor},
    {"lab06::decode_attention_kernel<128, 4>", "decode", 128, 0, [](double n) { return 8 * 4 * 128 * 4 * n; },
     [](double n) { return 2 * 8 * 128 * 2 * n; }, rooflab::DType::fp32, {"decode"}},
    // The GQA test's two kernels (tests/perf.cpp, TimeFollowsKvHeadsNotQueryHeads): the same cache read by one
    // query head per KV head and by eight, so the same bytes and 1/4 and 2x the FLOPs of GQA 4.
    {"lab06::decode_attention_kernel<128, 1>", "decode (GQA 1)", 128, 0, [](double n) { return 8 * 1 * 128 * 4 * n; },
     [](double n) { return 2 * 8 * 128 * 2 * n; }, rooflab::DType::fp32, {"gqa_time_ratio"}},
    {"lab06::decode_attention_kernel<128, 8>", "decode (GQA 8)", 128, 0, [](double n) { return 8 * 8 * 128 * 4 * n; },
     [](double n) { return 2 * 8 * 128 * 2 * n; }, rooflab::DType::fp32, {"gqa_time_ratio"}},
};

}  // namespace lab06
