// Lab 06: KV-cache sizing and paged decode attention - the kernels' launchers.  PROVIDED: do not modify.
//
// The cache layout is lab.hpp's PagedCacheLayout. All arrays are device memory, each starting on a 16-byte
// boundary: a kernel may count on that much alignment and no more (the tests pass some arrays 16 bytes past a
// multiple of 32, as a slice of a larger allocation would be). Every launcher is asynchronous on `stream`.
#pragma once

#include "lab.hpp"

#include <rooflab/cuda.hpp>

#include <cuda_fp16.h>

namespace lab06 {

// Writes `tokens` new tokens into the pools: token t (rows k_new[t] and v_new[t], each [kv_heads][head_dim])
// belongs to sequence seq_of[t] at position pos_of[t] of that sequence. Tokens never collide.
void paged_kv_append(const __half* k_new, const __half* v_new, const int* seq_of, const int* pos_of, int tokens,
                     __half* k_pool, __half* v_pool, const int* block_table, PagedCacheLayout layout,
                     cudaStream_t stream);

// One decode step of attention: for each sequence b < batch and query head h < heads,
//   out[b][h] = softmax(scale * q[b][h] . K_b^T) V_b
// over the seq_lens[b] cached tokens of KV head h / (heads / kv_heads) (grouped-query attention: heads is a
// multiple of kv_heads). q and out are [batch][heads][head_dim]; softmax in FP32. max_len is the largest
// seq_lens entry (every length is >= 1); workspace holds decode_workspace_bytes(batch, heads, head_dim, max_len).
void paged_decode_attention(const __half* q, const __half* k_pool, const __half* v_pool, const int* block_table,
                            const int* seq_lens, int batch, int heads, int max_len, PagedCacheLayout layout,
                            float scale, float* workspace, __half* out, cudaStream_t stream);

}  // namespace lab06
