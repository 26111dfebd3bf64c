// Lab 05: naive vs Flash attention - the kernels' launchers.  PROVIDED: do not modify.
//
// Layouts are lab.hpp's: Q, K, V, O [batch_heads][len][head_dim] row-major, lse [batch_heads][len]. All
// arrays are device memory; every launcher is asynchronous on `stream`, works for any len >= 1 and
// batch_heads >= 1, and throws std::invalid_argument for a head_dim it does not support.
#pragma once

#include "lab.hpp"

#include <rooflab/cuda.hpp>

#include <cuda_fp16.h>

namespace lab05 {

// The naive path's middle step (naive.hpp runs the whole path): for each of `rows` rows of `len` scores,
//   p[r][j] = exp(scale s[r][j] - m_r) / sum_j' exp(scale s[r][j'] - m_r),  m_r = max_j scale s[r][j],
// the softmax computed in FP32 and stored in FP16. With `causal`, row r is query r % len and its keys
// j > r % len are masked: they get p = 0 and take no part in the max or the sum. p may be s (in place).
void softmax_rows(const __half* s, __half* p, int rows, int len, float scale, bool causal, cudaStream_t stream);

// Flash v1: FP32 in, FP32 out, on the CUDA cores (SIMT) with the online softmax; head_dim 64 or 128.
void flash_attention_fp32(const float* q, const float* k, const float* v, float* o, float* lse, int batch_heads,
                          int len, int head_dim, float scale, bool causal, cudaStream_t stream);

// Flash v2: FP16 in and out, FP32 accumulation, Q K^T and P V on the tensor cores (WMMA); head_dim 64 or 128.
void flash_attention_fp16(const __half* q, const __half* k, const __half* v, __half* o, float* lse, int batch_heads,
                          int len, int head_dim, float scale, bool causal, cudaStream_t stream);

}  // namespace lab05
