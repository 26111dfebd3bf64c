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

// STUDENT BEGIN (lab06.decode.parts)
// ---- decode attention's parts ----
//
// Decode attention does about one FLOP per byte per query head, so its speed is how many bytes a block keeps
// in flight and how few instructions it spends per byte. A warp works one page (16 tokens) at a time: it
// issues every K and V load of the page, then computes. Two lane layouts, one per product:
//   q . k: lanes 2t and 2t + 1 own token t of the page, each every other 16-byte piece of its K row (one
//          32-byte sector per lane pair and load), so a score is one lane's dot product plus one shuffle
//          (not a 5-shuffle sum over the warp). Each lane needs all of q: it is read from shared memory, a
//          broadcast (every even lane reads the same address, every odd lane the same other one).
//   p v:   lane c owns output elements [c * D / 32, (c + 1) * D / 32) of every query head, in registers,
//          and loads that slice of each V row: one coalesced 256-byte row per warp load at D = 128 (8 bytes
//          a lane). Slices of one row rather than 16-byte pieces of two rows, so that no output element is
//          accumulated twice: these accumulators, G x D / 32 registers, are what bounds occupancy at G = 8.
// The G query heads sharing the KV head all use every loaded row: bytes are read once per KV head.

inline constexpr unsigned kFullWarp = 0xffffffffu;

// The running softmax of one warp for the G query heads (FlashAttention's online softmax): max m, sum l of
// exp(s - m) over this lane's tokens (added over the warp at the end), and this lane's output slice
// accumulated with the same weights, all rescaled when the max grows.
template <int D, int G>
struct WarpSoftmax {
  float m[G], l[G], acc[G][D / 32];
};

// A lane's V slice of a row: D / 32 halves (8 bytes at D = 128, 4 at D = 64).
template <int D>
using VSlice = std::conditional_t<D / 32 == 4, uint2, unsigned>;

// Every load of one page, all issued before any is used (8 KB per warp at D = 128). The first `rows` slots
// belong to the sequence; a slot past its end may hold anything (even NaN), so its loads read the page's
// first slot instead (the sequence's, and already on its way) and the caller gives it weight 0.
template <int D>
__device__ inline void load_page(const uint4* k_rows, const VSlice<D>* v_rows, int k_stride, int v_stride, int rows,
                                 int lane, uint4 (&k_raw)[D / 16], VSlice<D> (&v_raw)[kBlockTokens]) {
  const int token = lane / 2, parity = lane % 2;
#pragma unroll
  for (int j = 0; j < D / 16; ++j) k_raw[j] = k_rows[(token < rows ? token : 0) * k_stride + 2 * j + parity];
#pragma unroll
  for (int row = 0; row < kBlockTokens; ++row) v_raw[row] = v_rows[(row < rows ? row : 0) * v_stride + lane];
}

// q . k for this lane's token, both halves added (lanes 2t and 2t + 1 end with the same scores).
template <int D, int G>
__device__ inline void page_scores(const float (&s_q)[G][D], const uint4 (&k_raw)[D / 16], int parity, float (&s)[G]) {
#pragma unroll
  for (int g = 0; g < G; ++g) s[g] = 0.0f;
#pragma unroll
  for (int j = 0; j < D / 16; ++j) {
    float k[8];
    rooflab::halves_to_floats(k_raw[j], k);
    const int d0 = (2 * j + parity) * 8;
#pragma unroll
    for (int g = 0; g < G; ++g) {
      const float4 qa = *reinterpret_cast<const float4*>(&s_q[g][d0]);
      const float4 qb = *reinterpret_cast<const float4*>(&s_q[g][d0 + 4]);
      s[g] = fmaf(qa.x, k[0], s[g]);
      s[g] = fmaf(qa.y, k[1], s[g]);
      s[g] = fmaf(qa.z, k[2], s[g]);
      s[g] = fmaf(qa.w, k[3], s[g]);
      s[g] = fmaf(qb.x, k[4], s[g]);
      s[g] = fmaf(qb.y, k[5], s[g]);
      s[g] = fmaf(qb.z, k[6], s[g]);
      s[g] = fmaf(qb.w, k[7], s[g]);
    }
  }
#pragma unroll
  for (int g = 0; g < G; ++g) s[g] += __shfl_xor_sync(kFullWarp, s[g], 1);
}

// One softmax step per page and query head: the page's max over its 16 tokens (a lane pair holds the same
// score, so offsets 2 to 16), the rescale of what came before, and this lane's token's weight p.
template <int D, int G>
__device__ inline void softmax_step(WarpSoftmax<D, G>& w, const float (&s)[G], bool token_valid, float (&p)[G]) {
#pragma unroll
  for (int g = 0; g < G; ++g) {
    const float score = token_valid ? s[g] : -INFINITY;
    float page_max = score;
    for (int offset = 2; offset < 32; offset *= 2) page_max = fmaxf(page_max, __shfl_xor_sync(kFullWarp, page_max, offset));
    const float m_new = fmaxf(w.m[g], page_max);  // finite: a page holds at least one token of the sequence
    const float correction = __expf(w.m[g] - m_new);  // 0 on the first page (m = -inf)
    p[g] = __expf(score - m_new);                     // 0 past the sequence's end (score = -inf)
    w.l[g] = w.l[g] * correction + p[g];
#pragma unroll
    for (int e = 0; e < D / 32; ++e) w.acc[g][e] *= correction;
    w.m[g] = m_new;
  }
}

// p v: this lane's slice of every row of the page, weighted by the row's p fetched from lane 2 * row.
template <int D, int G>
__device__ inline void add_values(WarpSoftmax<D, G>& w, const VSlice<D> (&v_raw)[kBlockTokens], const float (&p)[G]) {
#pragma unroll
  for (int row = 0; row < kBlockTokens; ++row) {
    __half2 pairs[D / 64];
    memcpy(static_cast<void*>(pairs), &v_raw[row], sizeof pairs);
#pragma unroll
    for (int g = 0; g < G; ++g) {
      const float weight = __shfl_sync(kFullWarp, p[g], 2 * row);
#pragma unroll
      for (int e = 0; e < D / 64; ++e) {
        const float2 v = __half22float2(pairs[e]);
        w.acc[g][2 * e] = fmaf(weight, v.x, w.acc[g][2 * e]);
        w.acc[g][2 * e + 1] = fmaf(weight, v.y, w.acc[g][2 * e + 1]);
      }
    }
  }
}
// STUDENT END

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
  // The block's 4 warps take the chunk's pages round-robin, each keeping its own running softmax; the warps
  // merge in shared memory at the end. The layouts and the why: "decode attention's parts" above.
  constexpr int kChunkPages = kChunkTokens / kBlockTokens;
  static_assert(kBlockTokens == 16, "a page's 16 tokens map onto the warp's 16 lane pairs");
  static_assert(kChunkPages / kDecodeWarps <= 32, "one lane holds each page number of the warp");
  const int b = blockIdx.z, kv_head = blockIdx.y, chunk = blockIdx.x;
  const int heads = layout.kv_heads * G;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int len = seq_lens[b];
  const int first_page = chunk * kChunkPages;
  if (first_page * kBlockTokens >= len) return;  // the whole block is past this sequence's end
  const int pages = min(kChunkPages, (len - first_page * kBlockTokens + kBlockTokens - 1) / kBlockTokens);

  // The group's G queries (contiguous in q), pre-multiplied by the softmax scale: one multiply per element
  // here instead of one per score.
  __shared__ __align__(16) float s_q[G][D];
  const __half* q_group = q + (static_cast<std::size_t>(b) * heads + kv_head * G) * D;
  for (int i = threadIdx.x; i < G * D; i += kDecodeBlock) s_q[i / D][i % D] = scale * __half2float(q_group[i]);
  __syncthreads();

  // The block table is a pointer chase (table entry, then the page): lane i fetches the block number of the
  // warp's i-th page up front, one load for the whole chunk, and the page loop takes it with a shuffle.
  const int lane_page = warp + kDecodeWarps * lane;
  const int lane_block = lane_page < pages ? block_table[static_cast<std::size_t>(b) * layout.max_blocks + first_page + lane_page] : 0;

  WarpSoftmax<D, G> w;
#pragma unroll
  for (int g = 0; g < G; ++g) {
    w.m[g] = -INFINITY;
    w.l[g] = 0.0f;
#pragma unroll
    for (int e = 0; e < D / 32; ++e) w.acc[g][e] = 0.0f;
  }
  const int slot_stride = layout.kv_heads * D;  // halves from one slot of a block to the next
  for (int i = 0, page = warp; page < pages; ++i, page += kDecodeWarps) {
    const int block = __shfl_sync(kFullWarp, lane_block, i);
    const std::size_t at = pool_index(layout, block, 0, kv_head, 0);
    const auto* k_rows = reinterpret_cast<const uint4*>(k_pool + at);  // 16-byte pieces
    const auto* v_rows = reinterpret_cast<const VSlice<D>*>(v_pool + at);
    const int valid = len - (first_page + page) * kBlockTokens;  // slots of the page in the sequence, >= 1
    uint4 k_raw[D / 16];
    VSlice<D> v_raw[kBlockTokens];
    // Full pages (all but a sequence's last) need no clamp. The two branches also keep the loads together
    // in the machine code: as one straight run, ptxas moves each load down to its first use to save
    // registers, and the warp then waits for its loads one after another.
    if (valid >= kBlockTokens) {
      load_page<D>(k_rows, v_rows, slot_stride / 8, slot_stride / (D / 32), kBlockTokens, lane, k_raw, v_raw);
    } else {
      load_page<D>(k_rows, v_rows, slot_stride / 8, slot_stride / (D / 32), valid, lane, k_raw, v_raw);
    }
    float s[G], p[G];
    page_scores<D, G>(s_q, k_raw, lane % 2, s);
    softmax_step<D, G>(w, s, lane / 2 < valid, p);
    add_values<D, G>(w, v_raw, p);
  }
  // l counted every token twice, once per lane of its pair: add the even lanes only.
#pragma unroll
  for (int g = 0; g < G; ++g) w.l[g] = warp_sum(lane % 2 == 0 ? w.l[g] : 0.0f);

  // Merge the four warps' partial softmaxes through shared memory, then write the chunk's result. A warp
  // with no page (a short last chunk) has m = -inf and weighs exp(-inf) = 0.
  __shared__ float s_m[kDecodeWarps][G], s_l[kDecodeWarps][G];
  __shared__ float s_acc[kDecodeWarps][G][D];
#pragma unroll
  for (int g = 0; g < G; ++g) {
    if (lane == 0) {
      s_m[warp][g] = w.m[g];
      s_l[warp][g] = w.l[g];
    }
#pragma unroll
    for (int e = 0; e < D / 32; ++e) s_acc[warp][g][lane * (D / 32) + e] = w.acc[g][e];
  }
  __syncthreads();
  for (int i = threadIdx.x; i < G * D; i += kDecodeBlock) {
    const int g = i / D, d = i % D;
    float m_all = -INFINITY;
    for (int v = 0; v < kDecodeWarps; ++v) m_all = fmaxf(m_all, s_m[v][g]);
    float l_all = 0.0f, out = 0.0f;
    for (int v = 0; v < kDecodeWarps; ++v) {
      const float weight = __expf(s_m[v][g] - m_all);
      l_all += s_l[v][g] * weight;
      out += s_acc[v][g][d] * weight;
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
