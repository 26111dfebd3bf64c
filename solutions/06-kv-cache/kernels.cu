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
#include <rooflab/mma.hpp>
#include <rooflab/stub.hpp>
#include <rooflab/warp.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
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
// Decode attention reads each K and V byte once and does a few FLOPs per byte and query head, so its speed is
// the bytes a warp keeps in flight and the instructions it spends per byte. A warp works one page (16 tokens) at
// a time: it issues every K and V load of the page, then computes both products on the tensor cores with
// mma.sync m16n8k16 (rooflab/mma.hpp has the fragment maps; g = lane / 4, t = lane % 4):
//
//   S = Q K^T       M = 16 rows, the group's G query heads (rows G..15 are zero), N = 8 tokens, K = 16 of the
//                   head dimension: D / 8 mma per page. Q is the A operand, held in registers for the whole
//                   chunk. K^T is the B operand, straight from the loaded rows: lane (g, t) holds token g at rows
//                   2t, 2t + 1 and 2t + 8, 2t + 9 of a 16-wide step of d. A dot product does not care in which
//                   order d is summed, so each lane loads the 16 bytes d = [32p + 8t, 32p + 8t + 8) of its token
//                   and uses them as its rows of two steps, and Q's fragments take the same 16 bytes of Q's row:
//                   both operands are permuted alike, and every K load is 16 bytes with no shuffling.
//   O^T += V^T P^T  M = 16 elements of d, N = 8 query heads, K = 16 tokens: D / 16 mma per page (times two:
//                   below). P^T is the B operand: lane (g, t) needs head g's weights for tokens 2t, 2t + 1 and
//                   2t + 8, 2t + 9, which is what its score registers (the C fragments of S) hold. V^T is the A
//                   operand: two tokens at one d per register, built with a byte permute (__byte_perm) from
//                   16-byte loads of rows 2t, 2t + 1, 2t + 8 and 2t + 9. The order of d in O^T follows those
//                   loads; the kernel's end writes it back in order.
//
// On the tensor cores a page costs the same for one query head as for eight: with an FMA per head and element,
// GQA 8 ran out of issue slots. FP16 weights would cost the FP32 accuracy the test holds the output to (a weight
// rounded to 11 bits), so P goes in as two FP16 parts, p = hi + lo, and P V takes two mma per tile: still a few
// percent of what the tensor cores can do while the page streams in.

inline constexpr unsigned kFullWarp = 0xffffffffu;

// One page's loads for one lane, all issued before any is used (8 KB per warp at D = 128):
//   k[j][p]: token g + 8j, the 16-byte piece 4p + t of its row (d = 32p + 8t ...);
//   v[i][h]: token 2t, 2t + 1, 2t + 8, 2t + 9 for i = 0..3, the 16-byte piece 8h + g (d = 64h + 8g ...).
template <int D>
struct PageLoads {
  uint4 k[2][D / 32];
  uint4 v[4][D / 64];
};

// The page's first `rows` slots belong to the sequence; a slot past its end may hold anything (even NaN), so its
// loads read the page's first slot instead (the sequence's, and already on its way) and its weight is 0.
// `stride`: 16-byte pieces from one slot of a block to the next.
template <int D>
__device__ inline void load_page(const uint4* k_rows, const uint4* v_rows, int stride, int rows, int lane,
                                 PageLoads<D>& r) {
  const int g = lane / 4, t = lane % 4;
#pragma unroll
  for (int j = 0; j < 2; ++j) {
    const int token = g + 8 * j;
#pragma unroll
    for (int p = 0; p < D / 32; ++p) r.k[j][p] = k_rows[(token < rows ? token : 0) * stride + 4 * p + t];
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int token = 2 * t + i % 2 + 8 * (i / 2);
#pragma unroll
    for (int h = 0; h < D / 64; ++h) r.v[i][h] = v_rows[(token < rows ? token : 0) * stride + 8 * h + g];
  }
}

// Q's A fragments, one per 16-wide step of d: row g is query head g of the group (zero past G); rows g + 8 are
// zero. Step 2p takes the first 8 bytes of the 16 that load_page gives lane (g, t) of each K row, step 2p + 1 the
// last 8.
template <int D, int G>
__device__ inline void load_queries(const __half* q_group, int lane, std::uint32_t (&qa)[D / 16][4]) {
  const int g = lane / 4, t = lane % 4;
#pragma unroll
  for (int p = 0; p < D / 32; ++p) {
    const uint4 piece = g < G ? reinterpret_cast<const uint4*>(q_group + g * D)[4 * p + t] : make_uint4(0, 0, 0, 0);
    qa[2 * p][0] = piece.x;
    qa[2 * p][2] = piece.y;
    qa[2 * p + 1][0] = piece.z;
    qa[2 * p + 1][2] = piece.w;
    qa[2 * p][1] = qa[2 * p][3] = qa[2 * p + 1][1] = qa[2 * p + 1][3] = 0;
  }
}

// S = Q K^T over the page's two tiles of 8 tokens. s[j][0], s[j][1]: head g's scores of tokens 8j + 2t and
// 8j + 2t + 1 (s[j][2], s[j][3] belong to the zero rows).
template <int D>
__device__ inline void page_scores(const std::uint32_t (&qa)[D / 16][4], const PageLoads<D>& r, float (&s)[2][4]) {
#pragma unroll
  for (int j = 0; j < 2; ++j) {
#pragma unroll
    for (int e = 0; e < 4; ++e) s[j][e] = 0.0f;
#pragma unroll
    for (int p = 0; p < D / 32; ++p) {
      const std::uint32_t first[2] = {r.k[j][p].x, r.k[j][p].y}, second[2] = {r.k[j][p].z, r.k[j][p].w};
      rooflab::mma_m16n8k16(s[j], qa[2 * p], first, s[j]);
      rooflab::mma_m16n8k16(s[j], qa[2 * p + 1], second, s[j]);
    }
  }
}

// One online-softmax step for head g (FlashAttention's, per page): the four lanes of quad g hold its 16 scores,
// 4 each, so the page's max takes two shuffles. Scores past the sequence's end weigh 0. Returns the factor that
// rescales what came before; p gets this lane's 4 weights, l this lane's part of the running sum.
__device__ inline float softmax_step(float& m, float& l, const float (&s)[2][4], float scale, int valid, int t,
                                     float (&p)[4]) {
  float x[4] = {s[0][0], s[0][1], s[1][0], s[1][1]};
  float page_max = -INFINITY;
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    const int token = 2 * t + e % 2 + 8 * (e / 2);
    x[e] = token < valid ? scale * x[e] : -INFINITY;
    page_max = fmaxf(page_max, x[e]);
  }
  page_max = fmaxf(page_max, __shfl_xor_sync(kFullWarp, page_max, 1));
  page_max = fmaxf(page_max, __shfl_xor_sync(kFullWarp, page_max, 2));
  const float m_new = fmaxf(m, page_max);  // finite: a page holds at least one token of the sequence
  const float correction = __expf(m - m_new);  // 0 on the first page (m = -inf)
  l *= correction;
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    p[e] = __expf(x[e] - m_new);  // 0 past the sequence's end (x = -inf)
    l += p[e];
  }
  m = m_new;
  return correction;
}

// Two floats as FP16 hi (rounded) and lo (what the rounding dropped, rounded): hi + lo keeps about 22 bits.
__device__ inline void split_half2(float a, float b, std::uint32_t& hi, std::uint32_t& lo) {
  hi = rooflab::pack_half2(a, b);
  __half2 rounded;
  memcpy(static_cast<void*>(&rounded), &hi, sizeof hi);
  const float2 back = __half22float2(rounded);  // what FP16 kept
  lo = rooflab::pack_half2(a - back.x, b - back.y);
}

// O^T = O^T x correction + V^T P^T for the page. O^T's tile 4h + jj holds d = 64h + 8g + 2jj in its rows g and
// d + 1 in its rows g + 8 (V^T's rows, as the byte permutes lay them out); its columns 2t, 2t + 1 are query heads
// 2t and 2t + 1, whose factors quads 2t and 2t + 1 computed.
template <int D>
__device__ inline void add_values(float (&o)[D / 16][4], const PageLoads<D>& r, const float (&p)[4], float correction,
                                  int t) {
  const float own = __shfl_sync(kFullWarp, correction, 8 * t), next = __shfl_sync(kFullWarp, correction, 8 * t + 4);
  std::uint32_t hi[2], lo[2];  // P^T's B fragment: tokens 2t, 2t + 1 and 2t + 8, 2t + 9 of head g
  split_half2(p[0], p[1], hi[0], lo[0]);
  split_half2(p[2], p[3], hi[1], lo[1]);
#pragma unroll
  for (int h = 0; h < D / 64; ++h) {
    const std::uint32_t row[4][4] = {{r.v[0][h].x, r.v[0][h].y, r.v[0][h].z, r.v[0][h].w},
                                     {r.v[1][h].x, r.v[1][h].y, r.v[1][h].z, r.v[1][h].w},
                                     {r.v[2][h].x, r.v[2][h].y, r.v[2][h].z, r.v[2][h].w},
                                     {r.v[3][h].x, r.v[3][h].y, r.v[3][h].z, r.v[3][h].w}};
#pragma unroll
    for (int jj = 0; jj < 4; ++jj) {
      // 0x5410: the low halves of both words (d = 64h + 8g + 2jj), 0x7632: the high halves (d + 1).
      const std::uint32_t a[4] = {
          __byte_perm(row[0][jj], row[1][jj], 0x5410), __byte_perm(row[0][jj], row[1][jj], 0x7632),
          __byte_perm(row[2][jj], row[3][jj], 0x5410), __byte_perm(row[2][jj], row[3][jj], 0x7632)};
      float(&tile)[4] = o[4 * h + jj];
      tile[0] *= own;
      tile[1] *= next;
      tile[2] *= own;
      tile[3] *= next;
      rooflab::mma_m16n8k16(tile, a, hi, tile);
      rooflab::mma_m16n8k16(tile, a, lo, tile);
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
// At most 168 registers a thread, so that 3 blocks (12 warps) fit on an SM: their loads in flight set the speed.
__global__ void __launch_bounds__(kDecodeBlock, 3)
    decode_attention_kernel(const __half* __restrict__ q, const __half* __restrict__ k_pool,
                            const __half* __restrict__ v_pool, const int* __restrict__ block_table,
                            const int* __restrict__ seq_lens, PagedCacheLayout layout, float scale, int chunks,
                            float* __restrict__ workspace) {
  // STUDENT BEGIN (lab06.decode)
  // The block's 4 warps take the chunk's pages round-robin, each keeping its own running softmax on the tensor
  // cores' registers; the warps merge in shared memory at the end. Layouts and the why: "decode attention's
  // parts" above.
  constexpr int kChunkPages = kChunkTokens / kBlockTokens;
  static_assert(kBlockTokens == 16, "a page's 16 tokens are the K dimension of one mma.sync");
  static_assert(G <= 8, "the group's query heads are the 8 columns of O^T");
  static_assert(kChunkPages / kDecodeWarps <= 32, "one lane holds each page number of the warp");
  const int b = blockIdx.z, kv_head = blockIdx.y, chunk = blockIdx.x;
  const int heads = layout.kv_heads * G;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int len = seq_lens[b];
  const int first_page = chunk * kChunkPages;
  if (first_page * kBlockTokens >= len) return;  // the whole block is past this sequence's end
  const int pages = min(kChunkPages, (len - first_page * kBlockTokens + kBlockTokens - 1) / kBlockTokens);

  // The block table is a pointer chase (table entry, then the page): lane i fetches the block number of the
  // warp's i-th page up front, one load for the whole chunk, and the page loop takes it with a shuffle. The
  // queries load meanwhile, straight into their fragments.
  const int lane_page = warp + kDecodeWarps * lane;
  const int lane_block = lane_page < pages ? block_table[static_cast<std::size_t>(b) * layout.max_blocks + first_page + lane_page] : 0;
  std::uint32_t qa[D / 16][4];
  load_queries<D, G>(q + (static_cast<std::size_t>(b) * heads + kv_head * G) * D, lane, qa);

  float o[D / 16][4];
#pragma unroll
  for (int i = 0; i < D / 16; ++i) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.0f;
  float m = -INFINITY, l = 0.0f;  // head g's running max, and this lane's part of its running sum
  const int stride = layout.kv_heads * D / 8;  // 16-byte pieces from one slot of a block to the next
  for (int i = 0, page = warp; page < pages; ++i, page += kDecodeWarps) {
    const int block = __shfl_sync(kFullWarp, lane_block, i);
    const std::size_t at = pool_index(layout, block, 0, kv_head, 0);
    const auto* k_rows = reinterpret_cast<const uint4*>(k_pool + at);
    const auto* v_rows = reinterpret_cast<const uint4*>(v_pool + at);
    const int valid = len - (first_page + page) * kBlockTokens;  // slots of the page in the sequence, >= 1
    PageLoads<D> r;
    // Full pages (all but a sequence's last) need no clamp. The two branches also keep the loads together in
    // the machine code: as one straight run, ptxas moves each load down to its first use to save registers,
    // and the warp then waits for its loads one after another.
    if (valid >= kBlockTokens) {
      load_page<D>(k_rows, v_rows, stride, kBlockTokens, lane, r);
    } else {
      load_page<D>(k_rows, v_rows, stride, valid, lane, r);
    }
    float s[2][4], p[4];
    page_scores<D>(qa, r, s);
    const float correction = softmax_step(m, l, s, scale, valid, t, p);
    add_values<D>(o, r, p, correction, t);
  }
  l += __shfl_xor_sync(kFullWarp, l, 1);  // head g's sum over its quad
  l += __shfl_xor_sync(kFullWarp, l, 2);

  // Merge the four warps' partial softmaxes through shared memory, then write the chunk's result. A warp
  // with no page (a short last chunk) has m = -inf and weighs exp(-inf) = 0. Lane (g, t) holds d = 64h + 8g ...
  // 64h + 8g + 7 of heads 2t and 2t + 1 (add_values): it stores them in order.
  __shared__ float s_m[kDecodeWarps][G], s_l[kDecodeWarps][G];
  __shared__ __align__(16) float s_acc[kDecodeWarps][G][D];
  if (t == 0 && g < G) {
    s_m[warp][g] = m;
    s_l[warp][g] = l;
  }
#pragma unroll
  for (int e = 0; e < 2; ++e) {
    const int head = 2 * t + e;
    if (head >= G) break;
#pragma unroll
    for (int h = 0; h < D / 64; ++h) {
      const float(&c)[4][4] = *reinterpret_cast<const float(*)[4][4]>(&o[4 * h]);
      float4* to = reinterpret_cast<float4*>(&s_acc[warp][head][64 * h + 8 * g]);
      to[0] = make_float4(c[0][e], c[0][2 + e], c[1][e], c[1][2 + e]);
      to[1] = make_float4(c[2][e], c[2][2 + e], c[3][e], c[3][2 + e]);
    }
  }
  __syncthreads();
  for (int i = threadIdx.x; i < G * D; i += kDecodeBlock) {
    const int head = i / D, d = i % D;
    float m_all = -INFINITY;
    for (int v = 0; v < kDecodeWarps; ++v) m_all = fmaxf(m_all, s_m[v][head]);
    float l_all = 0.0f, out = 0.0f;
    for (int v = 0; v < kDecodeWarps; ++v) {
      const float weight = __expf(s_m[v][head] - m_all);
      l_all += s_l[v][head] * weight;
      out += s_acc[v][head][d] * weight;
    }
    float* slot = workspace + ((static_cast<std::size_t>(b) * heads + kv_head * G + head) * chunks + chunk) * (D + 2);
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
