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
  // TODO(lab06.append): a grid-stride loop, `for (i = global_thread(); i < total; i += grid_threads())`, over
  //   every element (or 16-byte uint4 vector: a row is kv_heads * head_dim halves, a multiple of 8) of every
  //   new token. For token t: seq = seq_of[t], pos = pos_of[t]; its physical block is
  //   block_table[seq * layout.max_blocks + pos / kBlockTokens], its slot pos % kBlockTokens;
  //   pool_index(layout, block, slot, 0, 0) is where its row starts in k_pool and v_pool. About 12 lines.
  //   Handout: "Paging".
  rooflab::unused(k_new, v_new, seq_of, pos_of, tokens, k_pool, v_pool, block_table, layout);  // delete when written
  // STUDENT END
}

// STUDENT BEGIN (lab06.decode.parts)
// TODO(lab06.decode.parts): optional: __device__ helpers for decode_attention_kernel (loading a page,
//   scoring it, one online-softmax step, ...). They must be defined here, above the kernel that calls them.
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
  // TODO(lab06.decode): block (chunk, kv_head, b) = (blockIdx.x, blockIdx.y, blockIdx.z) handles sequence b's
  //   tokens [chunk * kChunkTokens, min(seq_lens[b], (chunk + 1) * kChunkTokens)) for the G query heads
  //   kv_head * G ... kv_head * G + G - 1: read each K and V row once for all G heads. Keep an online softmax
  //   per query head (running max m, running sum l, unnormalized output acc), merge the 4 warps in shared
  //   memory after __syncthreads(), and write m, l, acc[0..D) of each query head to the workspace slot
  //   ((b * heads + h) * chunks + chunk) * (D + 2). A first version: each warp takes tokens t = begin + warp,
  //   += 4, lane owns D / 32 elements of every row (load_halves), warp_sum adds the lanes' dot products (about
  //   60 lines). It is right, but a warp has one row in flight at a time and spends a 5-shuffle sum per score:
  //   to reach the roof, let each warp take whole pages of 16 tokens, issue all of a page's K and V loads
  //   before using any (16-byte loads), and spend few instructions per byte (the reference solution computes
  //   both products of a page with mma.sync, rooflab/mma.hpp). Handout: "Decode attention is a bandwidth
  //   problem" and "Tensor cores in a memory-bound kernel".
  rooflab::unused(q, k_pool, v_pool, block_table, seq_lens, layout, scale, chunks, workspace);  // delete when written
  // STUDENT END
}

// Grid (heads, batch), D threads: thread d merges every chunk's output element d for one query head.
template <int D>
__global__ void decode_combine_kernel(const float* __restrict__ workspace, const int* __restrict__ seq_lens,
                                      int chunks, __half* __restrict__ out) {
  // STUDENT BEGIN (lab06.combine)
  // TODO(lab06.combine): thread d of block (h, b) merges the seq_lens[b] / kChunkTokens (rounded up) chunks'
  //   slots: rescale each to the largest running max, sum, and write out[(b * heads + h) * D + d] = o / l as
  //   FP16 (__float2half). About 14 lines.
  rooflab::unused(workspace, seq_lens, chunks, out);  // delete when written
  // STUDENT END
}

// ---- launchers ----

void paged_kv_append(const __half* k_new, const __half* v_new, const int* seq_of, const int* pos_of, int tokens,
                     __half* k_pool, __half* v_pool, const int* block_table, PagedCacheLayout layout,
                     cudaStream_t stream) {
  // STUDENT BEGIN (lab06.append.launch)
  // TODO(lab06.append.launch): launch paged_kv_append_kernel<<<blocks, kAppendBlock, 0, stream>>>(...) on
  //   rooflab::grid_for(work items, kAppendBlock, 8 * sm_count()) blocks, then ROOFLAB_LAUNCH_CHECK().
  ROOFLAB_TODO("lab06.append.launch", k_new, v_new, seq_of, pos_of, tokens, k_pool, v_pool, block_table, layout, stream);
  // STUDENT END
}

// STUDENT BEGIN (lab06.decode.helpers)
// TODO(lab06.decode.helpers): whatever helpers your launcher needs, e.g. a template that launches
//   decode_attention_kernel<D, G><<<dim3(chunks, kv_heads, batch), kDecodeBlock, 0, stream>>>(...) and then
//   decode_combine_kernel<D><<<dim3(heads, batch), D, 0, stream>>>(...) for one (D, G).
// STUDENT END

void paged_decode_attention(const __half* q, const __half* k_pool, const __half* v_pool, const int* block_table,
                            const int* seq_lens, int batch, int heads, int max_len, PagedCacheLayout layout,
                            float scale, float* workspace, __half* out, cudaStream_t stream) {
  // STUDENT BEGIN (lab06.decode.launch)
  // TODO(lab06.decode.launch): chunks = ceil(max_len / kChunkTokens); G = heads / layout.kv_heads (1, 2, 4
  //   or 8) and D = layout.head_dim (64 or 128) must be compile-time constants: dispatch to the matching
  //   template instance; anything else throws std::invalid_argument.
  ROOFLAB_TODO("lab06.decode.launch", q, k_pool, v_pool, block_table, seq_lens, batch, heads, max_len, layout, scale,
               workspace, out, stream);
  // STUDENT END
}

}  // namespace lab06
