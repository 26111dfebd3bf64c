// Lab 05: naive vs Flash attention - the softmax the naive path needs, and Flash attention twice.
//
//   softmax_rows_kernel   the naive path's middle step: one warp per row of scores, FP16 in and out
//   flash_fp32_kernel     v1: FP32 on the CUDA cores; K and V tiles in shared memory, the online softmax
//   flash_mma_kernel      v2: FP16 tiles, Q K^T and P V on the tensor cores (mma.sync), scores in registers
//
// The naive path (naive.hpp: cuBLAS, this softmax, cuBLAS) writes an L x L score matrix per head and reads
// it back twice: its bytes grow with L^2, and so does its memory. Flash attention never writes the scores:
// each block keeps a tile of queries, streams K and V through shared memory, and folds each tile of scores
// into its output with the online softmax (a running max and sum, and the output rescaled whenever the max
// grows). Its bytes are Q, K, V and O once (plus K and V once per query tile, from L2), its memory O(L).
// Handout: README.md, sections "The naive path" to "Tensor cores win it back".
#include "kernels.hpp"

#include <rooflab/launch.hpp>
#include <rooflab/mma.hpp>
#include <rooflab/stub.hpp>
#include <rooflab/warp.hpp>

#include <cuda_pipeline.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

namespace lab05 {

// ---- PROVIDED: do not modify ----

using rooflab::load_halves;  // 8 halves as floats in one 16-byte load (rooflab/warp.hpp)
using rooflab::warp_max;     // the max over the warp, in every lane
using rooflab::warp_sum;     // the sum over the warp, in every lane

inline constexpr unsigned kFullMask = 0xffffffffu;

__host__ __device__ constexpr int ceil_div(int a, int b) { return (a + b - 1) / b; }

// exp(x - m) for a score x that may be masked (-inf): 0 then, even when m is -inf too (nothing seen yet).
__device__ inline float exp_or_zero(float x, float m) { return x == -INFINITY ? 0.0f : __expf(x - m); }

// The factor that rescales what was accumulated against the old running max when the max grows to m_new:
// exp(m_old - m_new), 0 on the first tile (m_old = -inf), 1 while nothing has been seen at all.
__device__ inline float rescale_factor(float m_old, float m_new) {
  return m_new == -INFINITY ? 1.0f : __expf(m_old - m_new);
}

// ---- the naive path's softmax ----

// Pieces > 0: a lane holds its share of the row in registers, Pieces 16-byte pieces (rows of len % 8 == 0 up to
// 256 Pieces halves: 4096 at 16); 0: any row, read twice. Causal: query r % len sees keys 0 .. r % len only (a
// compile-time choice, so that the unmasked rows the perf test times carry no mask).
template <int Pieces, bool Causal>
__global__ void __launch_bounds__(kSoftmaxBlock)
    softmax_rows_kernel(const __half* s, __half* p, int rows, int len, float scale) {
  // STUDENT BEGIN (lab05.softmax)
  // TODO(lab05.softmax): one warp per row: row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32 (leave if
  //   row >= rows, the whole warp at once). Query r % len sees keys 0 .. r % len when Causal, all len otherwise.
  //   With Pieces > 0 (`if constexpr`) the row stays in registers: lane l loads pieces l, l + 32, ... of 8 halves
  //   (uint4 raw[Pieces], zeros past len), all before using any; then, unrolled, the max of scale x over the
  //   seen keys (warp_max), each weight exp(scale x - max) once, kept in registers (float w[Pieces][8]; 0 for
  //   unseen keys: compute it, then select, not branch; skip a piece past len), their sum (warp_sum), and
  //   p = w / sum, stored 16 bytes at a time; test the mask once per piece, not once per score, where the query
  //   sees the whole piece. With Pieces == 0, any row, read twice: pass 1 folds each lane's scores (times scale)
  //   into a running max m and a sum l of exp(x - m), rescaling l whenever m grows; then warp_max gives the row max
  //   and warp_sum the lanes' sums rescaled to it; pass 2 writes p. Never exp() a score without the max subtracted:
  //   scores of 1000 overflow FP32. About 140 lines. Handout: "A numerically stable softmax".
  rooflab::unused(s, p, rows, len, scale);  // delete this line when the kernel is written
  // STUDENT END
}

// ---- v1: FP32 Flash attention on the CUDA cores ----
//
// Block (query tile, head) = (blockIdx.x, blockIdx.y): 8 warps, warp w owns query row blockIdx.x * 8 + w.
// Per tile of 32 keys: lane j scores key j, the warp updates its running max and sum, and every lane
// accumulates its D / 32 output columns (lane + 32 c) from the tile's 32 rows of V.
template <int D>
__global__ void __launch_bounds__(kFlash1Block)
    flash_fp32_kernel(const float* __restrict__ q, const float* __restrict__ k, const float* __restrict__ v,
                      float* __restrict__ o, float* __restrict__ lse, int len, float scale, bool causal) {
  // STUDENT BEGIN (lab05.flash1)
  // TODO(lab05.flash1): 8 warps, warp w owns query row blockIdx.x * 8 + w of head blockIdx.y (a warp past
  //   len still takes part in every barrier). Per tile of 32 keys: all threads stage K and V rows [32][D] in
  //   __shared__ arrays (zeros past len; pad K's rows to D + 1 floats), __syncthreads(); lane j scores key
  //   t0 + j against the warp's (scaled) query, -inf if masked or past len; then the online softmax:
  //   m_new = max(m, warp_max(x)), alpha = exp(m - m_new), p = exp(x - m_new), l = alpha l + warp_sum(p),
  //   acc *= alpha (lane owns columns lane + 32 c), acc += p_j V[j] over the tile's keys; __syncthreads()
  //   before the next tile. Write o = acc / l and lse = m + log(l). exp_or_zero and rescale_factor above
  //   handle the -inf cases. About 45 lines. Handout: "The online softmax".
  rooflab::unused(q, k, v, o, lse, len, scale, causal);  // delete this line when the kernel is written
  // STUDENT END
}

// ---- v2: FP16 Flash attention on the tensor cores ----
//
// Block (query tile, head): 4 warps, warp w owns 32 query rows of the block's 128 as two m-tiles of 16 at d = 64 (the
// K and V tiles a block stages serve 128 queries: fewer rereads of K and V from L2 than with fewer rows; at d = 128,
// 16 rows a warp, 64 a block). Per tile of BC keys:
// S (32 x BC) = Q K^T with mma.sync into FP32 registers, the online softmax on those registers (each lane holds 4
// rows, 2 of each m-tile; its quad the whole row), P converted in registers into the A fragments of P V, and O (32 x
// D, FP32) rescaled and += P V with mma.sync. Operands come from shared memory with ldmatrix; each K and V fragment a
// warp loads feeds both of its m-tiles, so a tensor instruction costs one shared-memory wavefront, not two (with 16
// rows a warp, as 8 warps would have, shared memory would be the limit before the tensor cores). The next tile of K
// and V is on its way (cp.async) while this one is worked on. Shared rows are padded by 8 halves (16 bytes) so that
// the 8 rows one ldmatrix reads fall in different banks.
template <int D, int BC>
__global__ void __launch_bounds__(kFlash2Block, D == 64 ? 2 : 1)
    flash_mma_kernel(const __half* __restrict__ q, const __half* __restrict__ k, const __half* __restrict__ v,
                     __half* __restrict__ o, float* __restrict__ lse, int len, float scale, bool causal) {
  // STUDENT BEGIN (lab05.flash2)
  // TODO(lab05.flash2): 4 warps; at d = 64 warp w owns 32 query rows of the block's 128 as two m-tiles of 16
  //   (at d = 128 one m-tile: 16 rows, 64 a block); lane l holds rows g = l / 4 and g + 8 of each m-tile's
  //   fragments, columns 2t, 2t + 1 (t = l % 4; rooflab/mma.hpp has the maps). Stage the block's Q
  //   tile in shared memory with cp.async (__pipeline_memcpy_async, 16 bytes each, zero-filled past len; rows
  //   padded to D + 8 halves), load the warp's rows as D / 16 A fragments with ldmatrix_x4 and keep them; barrier.
  //   Then two stages of K and V tiles [BC][D + 8]: issue the next tile's copies before working on this one,
  //   __pipeline_wait_prior(1) and a barrier before reading it. Per tile: S (16 x BC per m-tile) = Q K^T
  //   with mma_m16n8k16 into BC / 8 float[4] accumulators (K's rows through ldmatrix_x4: two tiles of 8 keys each,
  //   each fragment used by both m-tiles); the online softmax in registers on x = scale log2(e) s (-inf for keys past len or after the query, tested
  //   only in tiles that have such keys): the row max over the quad (__shfl_xor_sync by 1 and 2), alpha =
  //   fast_exp2(m - m_new), p = fast_exp2(x - m_new), l = alpha l + the lane's p; pack P with pack_half2 into
  //   the A fragments of P V (S tiles 2kk and 2kk + 1 are step kk's fragment); rescale O's accumulators by
  //   alpha; O += P V (V through ldmatrix_x4_trans); barrier. At the end add l over the quad, lse = m ln 2 +
  //   log(l), and o = acc / l in FP16, through the warp's rows of shared memory so that each lane stores
  //   16-byte pieces of a row. Skip the compute of tiles no query of the warp sees when causal. About 190
  //   lines. Handout: "Tensor cores win it back" (its "Two m-tiles a warp").
  rooflab::unused(q, k, v, o, lse, len, scale, causal);  // delete this line when the kernel is written
  // STUDENT END
}

// ---- launchers ----

void softmax_rows(const __half* s, __half* p, int rows, int len, float scale, bool causal, cudaStream_t stream) {
  // STUDENT BEGIN (lab05.softmax.launch)
  // TODO(lab05.softmax.launch): kSoftmaxBlock threads (4 rows) a block, enough blocks for every row:
  //   softmax_rows_kernel<16, causal> when len % 8 == 0 and len <= 4096 (the row in registers),
  //   softmax_rows_kernel<0, causal> otherwise (an if/else chain: both are compile-time arguments). Then
  //   ROOFLAB_LAUNCH_CHECK().
  ROOFLAB_TODO("lab05.softmax.launch", s, p, rows, len, scale, causal, stream);
  // STUDENT END
}

void flash_attention_fp32(const float* q, const float* k, const float* v, float* o, float* lse, int batch_heads,
                          int len, int head_dim, float scale, bool causal, cudaStream_t stream) {
  // STUDENT BEGIN (lab05.flash1.launch)
  // TODO(lab05.flash1.launch): grid (query tiles of 8 rows, batch_heads); flash_fp32_kernel<64> or <128> by
  //   head_dim, std::invalid_argument for any other. About 8 lines, then ROOFLAB_LAUNCH_CHECK().
  ROOFLAB_TODO("lab05.flash1.launch", q, k, v, o, lse, batch_heads, len, head_dim, scale, causal, stream);
  // STUDENT END
}

void flash_attention_fp16(const __half* q, const __half* k, const __half* v, __half* o, float* lse, int batch_heads,
                          int len, int head_dim, float scale, bool causal, cudaStream_t stream) {
  // STUDENT BEGIN (lab05.flash2.launch)
  // TODO(lab05.flash2.launch): grid (query tiles of 128 rows at head_dim 64, 64 at 128; batch_heads);
  //   flash_mma_kernel<64, 64> or <128, 32> by head_dim (both keep shared memory under 48 KB),
  //   std::invalid_argument for any other.
  //   About 8 lines, then ROOFLAB_LAUNCH_CHECK().
  ROOFLAB_TODO("lab05.flash2.launch", q, k, v, o, lse, batch_heads, len, head_dim, scale, causal, stream);
  // STUDENT END
}

}  // namespace lab05
