// Lab 06: KV-cache sizing and paged decode attention - the two kernels a paged KV cache needs.
//
//   paged_kv_append_kernel     writes new tokens' K and V rows into their blocks, through the block table
//   decode_attention_kernel    one query token per sequence against its whole cache, one chunk of it
//   decode_combine_kernel      merges the chunks' partial softmaxes into the output
//
// Decode attention reads every cached K and V byte and does about one FLOP per byte read per query head:
// it is memory-bound on every GPU, so its speed is the bytes it reads. The design follows from that: read
// each K and V row once per KV head (all the query heads that share it are computed from the same load),
// keep enough rows in flight to fill the memory system (many blocks: split long sequences into chunks),
// and never write the L x L-free but still per-token scores to DRAM (an online softmax in registers).
// Handout: README.md, sections "Paging" and "Decode attention is a bandwidth problem".
#include "kernels.hpp"

#include <rooflab/grid.hpp>
#include <rooflab/launch.hpp>
#include <rooflab/stub.hpp>
#include <rooflab/warp.hpp>

#include <cmath>
#include <stdexcept>
#include <string>

namespace lab06 {

// ---- PROVIDED: do not modify ----

using rooflab::global_thread;  // this thread's index in the grid (rooflab/grid.hpp)
using rooflab::grid_threads;   // threads in the grid
using rooflab::sm_count;       // SMs of the current device
using rooflab::warp_sum;       // the sum over the warp, in every lane (rooflab/warp.hpp)
using rooflab::load_halves;    // 2 or 4 halves as floats in one 4- or 8-byte load (rooflab/warp.hpp)

inline constexpr unsigned kAppendBlock = 128;
inline constexpr unsigned kDecodeBlock = 128;  // 4 warps per (sequence, KV head, chunk)
inline constexpr int kDecodeWarps = kDecodeBlock / 32;

// ---- paged KV append ----

__global__ void paged_kv_append_kernel(const __half* __restrict__ k_new, const __half* __restrict__ v_new,
                                       const int* __restrict__ seq_of, const int* __restrict__ pos_of, int tokens,
                                       __half* __restrict__ k_pool, __half* __restrict__ v_pool,
                                       const int* __restrict__ block_table, PagedCacheLayout layout) {
  // STUDENT BEGIN (lab06.append)
  // A token's row ([kv_heads][head_dim] halves) is contiguous both in k_new and in its pool slot, and
  // head_dim is a multiple of 8, so the copy moves 16-byte vectors: row / 8 of them per token. One
  // grid-stride loop over every vector of every token keeps all threads busy whatever the token count.
  const std::size_t row_vecs = static_cast<std::size_t>(layout.kv_heads) * layout.head_dim / 8;
  const std::size_t total = row_vecs * static_cast<std::size_t>(tokens);
  const uint4* k_src = reinterpret_cast<const uint4*>(k_new);
  const uint4* v_src = reinterpret_cast<const uint4*>(v_new);
  uint4* k_dst = reinterpret_cast<uint4*>(k_pool);
  uint4* v_dst = reinterpret_cast<uint4*>(v_pool);
  for (std::size_t i = global_thread(); i < total; i += grid_threads()) {
    const std::size_t t = i / row_vecs, e = i % row_vecs;
    const int seq = seq_of[t], pos = pos_of[t];
    // The indirection that makes the cache paged: logical block pos / 16 of this sequence lives in the
    // physical block its table names; the slot inside it is pos % 16.
    const int block = block_table[static_cast<std::size_t>(seq) * layout.max_blocks + pos / kBlockTokens];
    const std::size_t slot_vec = pool_index(layout, block, pos % kBlockTokens, 0, 0) / 8;
    k_dst[slot_vec + e] = k_src[i];
    v_dst[slot_vec + e] = v_src[i];
  }
  // STUDENT END
}

// ---- decode attention ----
//
// Block (chunk, kv_head, b): sequence b's tokens [chunk * kChunkTokens, ...) against the G query heads that
// share KV head kv_head. Each partial result goes to the workspace:
//   workspace[((b * heads + h) * chunks + chunk) * (D + 2) + {0: running max, 1: running sum, 2 + d: output}]
template <int D, int G>
__global__ void decode_attention_kernel(const __half* __restrict__ q, const __half* __restrict__ k_pool,
                                        const __half* __restrict__ v_pool, const int* __restrict__ block_table,
                                        const int* __restrict__ seq_lens, PagedCacheLayout layout, float scale,
                                        int chunks, float* __restrict__ workspace) {
  // STUDENT BEGIN (lab06.decode)
  // Each lane owns D / 32 consecutive elements of every row (2 for D = 64, 4 for D = 128): a warp reads a
  // whole K or V row (128 or 256 bytes) in one coalesced load, and the dot product is the lanes' partial
  // sums added by warp_sum. The G query heads that share the KV head reuse every row from registers: this
  // is what grouped-query attention saves, bytes read once per KV head, not once per query head.
  constexpr int kPer = D / 32;
  const int b = blockIdx.z, kv_head = blockIdx.y, chunk = blockIdx.x;
  const int heads = layout.kv_heads * G;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int len = seq_lens[b];
  const int begin = chunk * kChunkTokens;
  const int end = min(len, begin + kChunkTokens);

  // The G queries, this lane's slice, pre-multiplied by the softmax scale (one multiply per element, not
  // one per score).
  float qr[G][kPer];
#pragma unroll
  for (int g = 0; g < G; ++g) {
    load_halves<kPer>(q + (static_cast<std::size_t>(b) * heads + kv_head * G + g) * D + lane * kPer, qr[g]);
#pragma unroll
    for (int j = 0; j < kPer; ++j) qr[g][j] *= scale;
  }

  // Online softmax (the same trick as FlashAttention): a running max m, a running sum l of exp(s - m) and
  // an output accumulated with the same weights, rescaled whenever the max grows. Scores never leave
  // registers, so the chunk costs one pass over K and V.
  float m[G], l[G], acc[G][kPer];
#pragma unroll
  for (int g = 0; g < G; ++g) {
    m[g] = -INFINITY;
    l[g] = 0.0f;
#pragma unroll
    for (int j = 0; j < kPer; ++j) acc[g][j] = 0.0f;
  }
  // Warps take tokens round-robin: four rows in flight per block at once, independent of each other.
  for (int t = begin + warp; t < end; t += kDecodeWarps) {
    const int block = block_table[static_cast<std::size_t>(b) * layout.max_blocks + t / kBlockTokens];
    const std::size_t at = pool_index(layout, block, t % kBlockTokens, kv_head, lane * kPer);
    float kr[kPer], vr[kPer];
    load_halves<kPer>(k_pool + at, kr);
    load_halves<kPer>(v_pool + at, vr);
#pragma unroll
    for (int g = 0; g < G; ++g) {
      float partial = 0.0f;
#pragma unroll
      for (int j = 0; j < kPer; ++j) partial = fmaf(qr[g][j], kr[j], partial);
      const float s = warp_sum(partial);
      const float m_new = fmaxf(m[g], s);
      const float correction = __expf(m[g] - m_new);  // 0 on the first token (m = -inf)
      const float p = __expf(s - m_new);
      l[g] = l[g] * correction + p;
#pragma unroll
      for (int j = 0; j < kPer; ++j) acc[g][j] = fmaf(p, vr[j], acc[g][j] * correction);
      m[g] = m_new;
    }
  }

  // Merge the four warps' partial softmaxes through shared memory, then write the chunk's result.
  __shared__ float s_m[kDecodeWarps][G], s_l[kDecodeWarps][G];
  __shared__ float s_acc[kDecodeWarps][G][D];
#pragma unroll
  for (int g = 0; g < G; ++g) {
    if (lane == 0) {
      s_m[warp][g] = m[g];
      s_l[warp][g] = l[g];
    }
#pragma unroll
    for (int j = 0; j < kPer; ++j) s_acc[warp][g][lane * kPer + j] = acc[g][j];
  }
  __syncthreads();
  for (int i = threadIdx.x; i < G * D; i += kDecodeBlock) {
    const int g = i / D, d = i % D;
    float m_all = -INFINITY;
    for (int w = 0; w < kDecodeWarps; ++w) m_all = fmaxf(m_all, s_m[w][g]);
    float l_all = 0.0f, out = 0.0f;
    if (m_all != -INFINITY) {  // an empty chunk (past this sequence's end) contributes nothing
      for (int w = 0; w < kDecodeWarps; ++w) {
        const float weight = __expf(s_m[w][g] - m_all);
        l_all += s_l[w][g] * weight;
        out += s_acc[w][g][d] * weight;
      }
    }
    float* slot = workspace + ((static_cast<std::size_t>(b) * heads + kv_head * G + g) * chunks + chunk) * (D + 2);
    if (d == 0) {
      slot[0] = m_all;
      slot[1] = l_all;
    }
    slot[2 + d] = out;
  }
  // STUDENT END
}

// Grid (heads, batch), D threads: thread d merges every chunk's output element d for one query head.
template <int D>
__global__ void decode_combine_kernel(const float* __restrict__ workspace, const int* __restrict__ seq_lens,
                                      int chunks, __half* __restrict__ out) {
  // STUDENT BEGIN (lab06.combine)
  // The chunks' partial softmaxes merge exactly like the warps' did: rescale each to the global max. Only
  // the chunks this sequence reaches hold data.
  const int h = blockIdx.x, b = blockIdx.y, heads = gridDim.x, d = threadIdx.x;
  const int used = (seq_lens[b] + kChunkTokens - 1) / kChunkTokens;
  const float* slots = workspace + (static_cast<std::size_t>(b) * heads + h) * chunks * (D + 2);
  float m_all = -INFINITY;
  for (int c = 0; c < used; ++c) m_all = fmaxf(m_all, slots[c * (D + 2)]);
  float l_all = 0.0f, o = 0.0f;
  for (int c = 0; c < used; ++c) {
    const float* slot = slots + c * (D + 2);
    const float weight = __expf(slot[0] - m_all);
    l_all += slot[1] * weight;
    o += slot[2 + d] * weight;
  }
  out[(static_cast<std::size_t>(b) * heads + h) * D + d] = __float2half(o / l_all);
  // STUDENT END
}

// ---- launchers ----

void paged_kv_append(const __half* k_new, const __half* v_new, const int* seq_of, const int* pos_of, int tokens,
                     __half* k_pool, __half* v_pool, const int* block_table, PagedCacheLayout layout,
                     cudaStream_t stream) {
  // STUDENT BEGIN (lab06.append.launch)
  const std::size_t vectors = static_cast<std::size_t>(tokens) * layout.kv_heads * layout.head_dim / 8;
  const unsigned blocks = rooflab::grid_for(vectors, kAppendBlock, 8 * sm_count());
  paged_kv_append_kernel<<<blocks, kAppendBlock, 0, stream>>>(k_new, v_new, seq_of, pos_of, tokens, k_pool, v_pool,
                                                              block_table, layout);
  ROOFLAB_LAUNCH_CHECK();
  // STUDENT END
}

// STUDENT BEGIN (lab06.decode.helpers)
// One (head dim, group) instantiation: the attention kernel over (chunks, KV heads, batch), then the merge.
// Templates make G and D compile-time constants, so the per-lane arrays above live in registers.
template <int D, int G>
void launch_decode(const __half* q, const __half* k_pool, const __half* v_pool, const int* block_table,
                   const int* seq_lens, int batch, int heads, int chunks, PagedCacheLayout layout, float scale,
                   float* workspace, __half* out, cudaStream_t stream) {
  decode_attention_kernel<D, G><<<dim3(chunks, layout.kv_heads, batch), kDecodeBlock, 0, stream>>>(
      q, k_pool, v_pool, block_table, seq_lens, layout, scale, chunks, workspace);
  ROOFLAB_LAUNCH_CHECK();
  decode_combine_kernel<D><<<dim3(heads, batch), D, 0, stream>>>(workspace, seq_lens, chunks, out);
  ROOFLAB_LAUNCH_CHECK();
}

template <int D>
void launch_decode_for_group(int group, const __half* q, const __half* k_pool, const __half* v_pool,
                             const int* block_table, const int* seq_lens, int batch, int heads, int chunks,
                             PagedCacheLayout layout, float scale, float* workspace, __half* out, cudaStream_t stream) {
  switch (group) {
    case 1: return launch_decode<D, 1>(q, k_pool, v_pool, block_table, seq_lens, batch, heads, chunks, layout, scale, workspace, out, stream);
    case 2: return launch_decode<D, 2>(q, k_pool, v_pool, block_table, seq_lens, batch, heads, chunks, layout, scale, workspace, out, stream);
    case 4: return launch_decode<D, 4>(q, k_pool, v_pool, block_table, seq_lens, batch, heads, chunks, layout, scale, workspace, out, stream);
    case 8: return launch_decode<D, 8>(q, k_pool, v_pool, block_table, seq_lens, batch, heads, chunks, layout, scale, workspace, out, stream);
    default: throw std::invalid_argument("decode attention: query heads per KV head must be 1, 2, 4 or 8, not " + std::to_string(group));
  }
}
// STUDENT END

void paged_decode_attention(const __half* q, const __half* k_pool, const __half* v_pool, const int* block_table,
                            const int* seq_lens, int batch, int heads, int max_len, PagedCacheLayout layout,
                            float scale, float* workspace, __half* out, cudaStream_t stream) {
  // STUDENT BEGIN (lab06.decode.launch)
  // Chunks of kChunkTokens give a long sequence many blocks (a batch of 8 sequences x 8 KV heads is only 64
  // blocks otherwise: half an H100 idle); short sequences pay one extra small kernel for the merge.
  const int group = heads / layout.kv_heads;
  const int chunks = (max_len + kChunkTokens - 1) / kChunkTokens;
  if (layout.head_dim == 64) {
    launch_decode_for_group<64>(group, q, k_pool, v_pool, block_table, seq_lens, batch, heads, chunks, layout, scale, workspace, out, stream);
  } else if (layout.head_dim == 128) {
    launch_decode_for_group<128>(group, q, k_pool, v_pool, block_table, seq_lens, batch, heads, chunks, layout, scale, workspace, out, stream);
  } else {
    throw std::invalid_argument("decode attention: head_dim must be 64 or 128, not " + std::to_string(layout.head_dim));
  }
  // STUDENT END
}

}  // namespace lab06
