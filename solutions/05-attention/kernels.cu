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
  // One warp per row. The row's max must be known before any exp(x - max) is final, so a row is either held
  // in registers (Pieces > 0: the timed rows) or read twice (any other row).
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int row = static_cast<int>(blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32);
  if (row >= rows) return;  // the whole warp leaves together: no collective is left waiting
  const std::size_t base = static_cast<std::size_t>(row) * static_cast<std::size_t>(len);
  const __half* in = s + base;
  __half* out = p + base;
  const int seen = Causal ? row % len + 1 : len;  // keys this query sees: 0 .. seen - 1

  if constexpr (Pieces > 0) {
    // The row in registers: each lane loads its pieces (lane, lane + 32, ... of 8 halves) all at once, Pieces
    // x 16 bytes in flight before any is used, and the row then costs one read of DRAM and three unrolled
    // passes over registers: the max, the sum of exp(x - max), and p. At the copy ceiling an SM must finish
    // about 4 scores per clock, so every instruction per score counts: the online softmax below spends a
    // compare, a branch and a rescale on each; here a piece the query sees whole (every piece of an unmasked
    // row) needs no mask, and only the piece that straddles `seen` is taken score by score.
    uint4 raw[Pieces];
#pragma unroll
    for (int i = 0; i < Pieces; ++i) {
      const int j = (lane + 32 * i) * 8;
      raw[i] = j < len ? *reinterpret_cast<const uint4*>(in + j) : make_uint4(0, 0, 0, 0);
    }
    const auto halves = [&](int i, __half2 (&h)[4]) { memcpy(static_cast<void*>(h), &raw[i], sizeof h); };
    // Whether the query sees all of the piece at j (unmasked rows: every piece inside the row, len being a
    // multiple of 8), and how many of its scores it sees when it straddles `seen` (causal rows only).
    const auto whole = [&](int j) { return Causal ? j + 8 <= seen : j < len; };
    const auto straddles = [&](int j) { return Causal && j < seen && seen < j + 8; };
    // The max of scale x: of x itself in FP16 (exact, two scores per instruction), its largest value for a
    // positive scale and its smallest for a negative one, times the scale once.
    __half2 top = __half2half2(__float2half(-INFINITY)), bottom = __half2half2(__float2half(INFINITY));
#pragma unroll
    for (int i = 0; i < Pieces; ++i) {
      const int j = (lane + 32 * i) * 8;
      __half2 h[4];
      halves(i, h);
      if (whole(j)) {
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          top = __hmax2(top, h[q]);
          bottom = __hmin2(bottom, h[q]);
        }
      } else if (straddles(j)) {
#pragma unroll
        for (int t = 0; t < 8; ++t) {
          if (j + t >= seen) break;
          const __half2 x = __half2half2(t % 2 == 0 ? __low2half(h[t / 2]) : __high2half(h[t / 2]));
          top = __hmax2(top, x);
          bottom = __hmin2(bottom, x);
        }
      }
    }
    const float x_top = fmaxf(__low2float(top), __high2float(top));
    const float x_bottom = fminf(__low2float(bottom), __high2float(bottom));
    const float row_max = warp_max(scale >= 0.0f ? scale * x_top : scale * x_bottom);  // finite: key 0 is seen
    // exp(scale x - max) = 2^(x k - shift): one fused multiply-add and one exp2 per score, computed once and
    // kept in registers (FP32, 8 per piece) until p is written. The exponential is the costliest instruction
    // here: the special-function unit does 16 per clock per SM, an eighth of the FP32 FMA rate (the CUDA C++
    // Programming Guide's throughput table); computed twice, for the sum and again for p, it and not DRAM was
    // the limit the performance model found at an H200's bandwidth. The weights cost registers (128 at 16
    // pieces): three blocks of 128 threads per SM instead of five, and each warp still issues its row's loads
    // together, far more bytes in flight per SM than DRAM needs to stream.
    constexpr float kLog2e = 1.4426950408889634f;
    const float k = scale * kLog2e, shift = row_max * kLog2e;
    const auto weight = [&](__half2 pair, int t) { return exp2f(fmaf(t == 0 ? __low2float(pair) : __high2float(pair), k, -shift)); };
    float w[Pieces][8];  // the row's weights exp(scale x - max), 0 for the keys the query does not see
#pragma unroll
    for (int i = 0; i < Pieces; ++i) {
      const int j = (lane + 32 * i) * 8;
      if (j >= len) {  // past a row shorter than Pieces x 256 scores: nothing to compute
#pragma unroll
        for (int t = 0; t < 8; ++t) w[i][t] = 0.0f;
        continue;
      }
      __half2 h[4];
      halves(i, h);
#pragma unroll
      for (int t = 0; t < 8; ++t) {
        const float e = weight(h[t / 2], t % 2);  // straight-line code: selected below, not branched around
        w[i][t] = whole(j) || (straddles(j) && j + t < seen) ? e : 0.0f;
      }
    }
    float l = 0.0f;  // the lane's sum of its weights, in FP32
#pragma unroll
    for (int i = 0; i < Pieces; ++i) {
#pragma unroll
      for (int t = 0; t < 8; ++t) l += w[i][t];
    }
    const float inv_sum = 1.0f / warp_sum(l);
#pragma unroll
    for (int i = 0; i < Pieces; ++i) {
      const int j = (lane + 32 * i) * 8;
      if (j >= len) continue;
      __half2 h[4];
#pragma unroll
      for (int q = 0; q < 4; ++q) h[q] = __floats2half2_rn(w[i][2 * q] * inv_sum, w[i][2 * q + 1] * inv_sum);
      uint4 packed;
      memcpy(&packed, h, sizeof packed);
      *reinterpret_cast<uint4*>(out + j) = packed;
    }
  } else {
    // Any row: pass 1 reads the row once, each lane keeping a running max m and a sum l of exp(x - m)
    // rescaled whenever m grows (the online softmax, per lane); the lanes then agree on the row's max and add
    // their sums rescaled to it. Pass 2 reads the row again (from L1 or L2) and writes p. 16-byte loads and
    // stores when rows are multiples of 8 halves: a warp then moves 512 bytes per instruction instead of 64.
    const bool vec = len % 8 == 0;  // rows start on 16-byte boundaries then
    float m = -INFINITY, l = 0.0f;
    const auto fold = [&](float x) {  // one score into the lane's running max and sum
      x *= scale;
      if (x > m) {
        l = l * __expf(m - x) + 1.0f;  // the old sum, rescaled to the new max (0 when m was -inf)
        m = x;
      } else {
        l += __expf(x - m);
      }
    };
    if (vec) {
      for (int j = lane * 8; j < seen; j += 32 * 8) {
        float x[8];
        load_halves<8>(in + j, x);
        for (int t = 0; t < 8 && j + t < seen; ++t) fold(x[t]);
      }
    } else {
      for (int j = lane; j < seen; j += 32) fold(__half2float(in[j]));
    }
    const float row_max = warp_max(m);  // also the point after which no lane reads before another writes
    const float inv_sum = 1.0f / warp_sum(m == -INFINITY ? 0.0f : l * __expf(m - row_max));

    if (vec) {
      for (int j = lane * 8; j < len; j += 32 * 8) {
        float x[8];
        load_halves<8>(in + j, x);
        __half h[8];
        for (int t = 0; t < 8; ++t) h[t] = __float2half(j + t < seen ? __expf(x[t] * scale - row_max) * inv_sum : 0.0f);
        uint4 packed;
        memcpy(&packed, h, sizeof packed);
        *reinterpret_cast<uint4*>(out + j) = packed;
      }
    } else {
      for (int j = lane; j < len; j += 32) {
        out[j] = __float2half(j < seen ? __expf(__half2float(in[j]) * scale - row_max) * inv_sum : 0.0f);
      }
    }
  }
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
  constexpr int WARPS = kFlash1Block / 32;  // query rows per block
  constexpr int BC = 32;                    // keys per tile: one per lane
  constexpr int PER = D / 32;               // output columns per lane
  // ks is padded to D + 1 floats a row: lane j reads row j, so the 32 lanes' addresses are D + 1 apart and
  // fall in 32 different banks (D apart, they would all hit one bank).
  __shared__ float ks[BC][D + 1];
  __shared__ float vs[BC][D];
  __shared__ float qs[WARPS][D];  // each warp's query row, pre-scaled
  __shared__ float ps[WARPS][BC];  // each warp's probabilities for the tile, read by all its lanes
  const int warp = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);
  const std::size_t head = static_cast<std::size_t>(blockIdx.y) * static_cast<std::size_t>(len) * D;
  const int row = static_cast<int>(blockIdx.x) * WARPS + warp;
  const bool active = row < len;  // a warp past the end still takes part in every barrier
  for (int d = lane; d < D; d += 32) qs[warp][d] = active ? q[head + static_cast<std::size_t>(row) * D + d] * scale : 0.0f;
  __syncwarp();

  float m = -INFINITY, l = 0.0f, acc[PER] = {};
  const int last_row = min(len, (static_cast<int>(blockIdx.x) + 1) * WARPS) - 1;
  const int keys = causal ? last_row + 1 : len;  // with the mask, no query of this block sees further
  for (int t0 = 0; t0 < keys; t0 += BC) {
    for (int i = static_cast<int>(threadIdx.x); i < BC * D; i += static_cast<int>(blockDim.x)) {
      const int r = i / D, c = i % D, j = t0 + r;
      const bool in = j < len;  // zeros past the last key: the tail tile needs no special case below
      ks[r][c] = in ? k[head + static_cast<std::size_t>(j) * D + c] : 0.0f;
      vs[r][c] = in ? v[head + static_cast<std::size_t>(j) * D + c] : 0.0f;
    }
    __syncthreads();  // the whole tile is in shared memory before anyone reads it

    const int j = t0 + lane;
    float x = 0.0f;
    for (int d = 0; d < D; ++d) x += qs[warp][d] * ks[lane][d];
    if (!active || j >= len || (causal && j > row)) x = -INFINITY;
    const float m_new = fmaxf(m, warp_max(x));
    const float alpha = rescale_factor(m, m_new);
    const float pj = exp_or_zero(x, m_new);
    l = l * alpha + warp_sum(pj);
    ps[warp][lane] = pj;
    __syncwarp();  // every lane's probability is written before any lane reads them all
    for (int c = 0; c < PER; ++c) acc[c] *= alpha;  // the output so far, rescaled to the new max
    for (int jj = 0; jj < BC; ++jj) {
      const float pb = ps[warp][jj];
      for (int c = 0; c < PER; ++c) acc[c] += pb * vs[jj][lane + 32 * c];
    }
    m = m_new;
    __syncthreads();  // every warp is done with this tile (and ps) before the next one overwrites it
  }
  if (active) {
    for (int c = 0; c < PER; ++c) o[head + static_cast<std::size_t>(row) * D + lane + 32 * c] = acc[c] / l;
    if (lane == 0) lse[static_cast<std::size_t>(blockIdx.y) * len + row] = m + logf(l);
  }
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
  constexpr int WARPS = kFlash2Block / 32;
  // m-tiles of 16 query rows per warp: two at d = 64 (250 registers, no spills); one at d = 128, whose O alone takes
  // 64 registers an m-tile (two spill on every architecture from sm_75 to sm_90).
  constexpr int MT = D == 64 ? 2 : 1;
  constexpr int BR = WARPS * 16 * MT;  // query rows per block
  constexpr int LD = D + 8;           // halves per shared row (16 bytes of padding)
  constexpr int STAGE = 2 * BC * LD;  // halves per stage: a K tile, then a V tile
  constexpr int KSTEPS = D / 16;      // k-steps of Q K^T (16 of the head dim each)
  constexpr int NT = BC / 8;          // accumulator tiles of S (8 keys each) per m-tile
  constexpr int DT = D / 8;           // accumulator tiles of O (8 output columns each) per m-tile
  constexpr int ROWS = 2 * MT;        // rows a lane holds: g and g + 8 of each m-tile (row h: m-tile h / 2)
  static_assert(BR * LD <= 2 * STAGE, "the Q tile is staged in the two stages' space");
  __shared__ __align__(16) __half smem[2 * STAGE];
  const int warp = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);
  const int g = lane / 4, t = lane % 4;  // the lane's rows (g, g + 8) and columns (2t, 2t + 1) in a fragment
  const std::size_t head = static_cast<std::size_t>(blockIdx.y) * static_cast<std::size_t>(len) * D;
  const int block_row0 = static_cast<int>(blockIdx.x) * BR;
  const int row0 = block_row0 + warp * 16 * MT;  // this warp's first query

  // Rows [r0, r0 + rows) of X into a shared tile, 16 bytes per cp.async; rows past len are zero-filled (the
  // source address stays inside X: a zero-filled copy reads nothing, but its address must be valid).
  const auto copy_rows = [&](const __half* x, int r0, int rows, __half* tile) {
    for (int i = static_cast<int>(threadIdx.x); i < rows * (D / 8); i += static_cast<int>(blockDim.x)) {
      const int r = i / (D / 8), c = i % (D / 8) * 8;
      const bool in = r0 + r < len;
      const __half* src = x + head + static_cast<std::size_t>(in ? r0 + r : 0) * D + c;
      __pipeline_memcpy_async(tile + r * LD + c, src, 16, in ? 0 : 16);
    }
  };

  // Q, staged through the space the K and V tiles use later, then held for the whole loop as A fragments: lanes
  // 0-15 name rows 0-15 of an m-tile at column 16 kk, lanes 16-31 the same rows at column 16 kk + 8 (rooflab/mma.hpp).
  copy_rows(q, block_row0, BR, smem);
  __pipeline_commit();
  __pipeline_wait_prior(0);
  __syncthreads();
  std::uint32_t qa[MT][KSTEPS][4];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
    for (int kk = 0; kk < KSTEPS; ++kk) {
      rooflab::ldmatrix_x4(qa[mt][kk], smem + (warp * 16 * MT + 16 * mt + lane % 16) * LD + 16 * kk + lane / 16 * 8);
    }
  }
  __syncthreads();  // every warp holds its Q before K and V overwrite it

  // Scores are kept in log2 units, x = scale log2(e) q.k, so that each exponential is one ex2 (fast_exp2).
  constexpr float kLog2e = 1.4426950408889634f;
  const float scale_log2 = scale * kLog2e;
  float acc[MT][DT][4] = {};  // O: tile j of m-tile mt holds columns 8j + 2t, 2t + 1 of its rows g and g + 8
  float m[ROWS], l[ROWS];     // running max (log2 units) and this lane's part of the running sum of row h
#pragma unroll
  for (int h = 0; h < ROWS; ++h) {
    m[h] = -INFINITY;
    l[h] = 0.0f;  // (the quad adds up its four parts at the end)
  }

  const int keys = causal ? min(len, block_row0 + BR) : len;  // with the mask no query of the block sees further
  const int tiles = ceil_div(keys, BC);
  copy_rows(k, 0, BC, smem);
  copy_rows(v, 0, BC, smem + BC * LD);
  __pipeline_commit();
  for (int tile = 0; tile < tiles; ++tile) {
    const int t0 = tile * BC;
    const __half* ks = smem + tile % 2 * STAGE;
    const __half* vs = ks + BC * LD;
    if (tile + 1 < tiles) {  // the next tile into the other stage, in flight while this one is worked on
      __half* next = smem + (tile + 1) % 2 * STAGE;
      copy_rows(k, t0 + BC, BC, next);
      copy_rows(v, t0 + BC, BC, next + BC * LD);
    }
    __pipeline_commit();       // (an empty batch after the last tile: the count below stays the same)
    __pipeline_wait_prior(1);  // this thread's copies of this tile have landed ...
    __syncthreads();           // ... and every other thread's

    // A warp whose queries all come before the tile's first key sees none of it (causal): barriers only.
    if (!causal || t0 <= row0 + 16 * MT - 1) {
      // S = Q K^T. K's rows are keys: as stored they are the B operand's columns (ldmatrix without .trans); one
      // ldmatrix_x4 gives two tiles of 8 keys (lanes 0-7 / 8-15 name keys 0-7 at columns 16 kk / + 8, lanes 16-31
      // keys 8-15), and each serves both m-tiles.
      float s[MT][NT][4] = {};
#pragma unroll
      for (int kk = 0; kk < KSTEPS; ++kk) {
#pragma unroll
        for (int j = 0; j < NT; j += 2) {
          std::uint32_t kb[4];
          rooflab::ldmatrix_x4(kb, ks + (8 * j + lane % 8 + lane / 16 * 8) * LD + 16 * kk + lane / 8 % 2 * 8);
          const std::uint32_t b0[2] = {kb[0], kb[1]}, b1[2] = {kb[2], kb[3]};
#pragma unroll
          for (int mt = 0; mt < MT; ++mt) {
            rooflab::mma_m16n8k16(s[mt][j], qa[mt][kk], b0, s[mt][j]);
            rooflab::mma_m16n8k16(s[mt][j + 1], qa[mt][kk], b1, s[mt][j + 1]);
          }
        }
      }

      // The online softmax, in registers. s[mt][j][e] is row h = 2 mt + e / 2 of the lane (query row0 + 16 mt + g +
      // 8 (e / 2)), key t0 + 8j + 2t + e % 2. Masked keys (past len, or after the query) exist only in the last tile
      // and, causal, in the tiles the diagonal crosses, so the mask is a loop of its own that the other tiles branch
      // around (a test inside the loop below would be compiled into selects that every tile pays for: a quarter of
      // the loop's instructions).
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
        for (int j = 0; j < NT; ++j) {
#pragma unroll
          for (int e = 0; e < 4; ++e) s[mt][j][e] *= scale_log2;
        }
      }
      if (t0 + BC > len || (causal && t0 + BC - 1 > row0)) {
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
          for (int j = 0; j < NT; ++j) {
#pragma unroll
            for (int e = 0; e < 4; ++e) {
              const int key = t0 + 8 * j + 2 * t + e % 2, query = row0 + 16 * mt + g + 8 * (e / 2);
              if (key >= len || (causal && key > query)) s[mt][j][e] = -INFINITY;
            }
          }
        }
      }
      float mx[ROWS];
#pragma unroll
      for (int h = 0; h < ROWS; ++h) mx[h] = -INFINITY;
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
        for (int j = 0; j < NT; ++j) {
#pragma unroll
          for (int e = 0; e < 4; ++e) mx[2 * mt + e / 2] = fmaxf(mx[2 * mt + e / 2], s[mt][j][e]);
        }
      }
      float alpha[ROWS], shift[ROWS];
#pragma unroll
      for (int h = 0; h < ROWS; ++h) {  // a row's max is its quad's: lanes 4g .. 4g + 3
        mx[h] = fmaxf(mx[h], __shfl_xor_sync(kFullMask, mx[h], 1));
        mx[h] = fmaxf(mx[h], __shfl_xor_sync(kFullMask, mx[h], 2));
        const float m_new = fmaxf(m[h], mx[h]);
        shift[h] = m_new == -INFINITY ? 0.0f : m_new;  // a row that has seen no key yet: exp2(-inf - 0) = 0
        alpha[h] = rooflab::fast_exp2(m[h] - shift[h]);  // 0 on the row's first keys (m = -inf)
        m[h] = m_new;
        l[h] *= alpha[h];
      }
      // P, rounded to FP16 pairs: tiles 2kk and 2kk + 1 of an m-tile's S (keys 16 kk .. 16 kk + 15) are exactly
      // the A fragment of step kk of its P V, so P never leaves the registers.
      std::uint32_t pa[MT][BC / 16][4];
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
        for (int j = 0; j < NT; ++j) {
          float p[4];
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            p[e] = rooflab::fast_exp2(s[mt][j][e] - shift[2 * mt + e / 2]);
            l[2 * mt + e / 2] += p[e];
          }
          pa[mt][j / 2][j % 2 * 2] = rooflab::pack_half2(p[0], p[1]);
          pa[mt][j / 2][j % 2 * 2 + 1] = rooflab::pack_half2(p[2], p[3]);
        }
      }
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
        for (int j = 0; j < DT; ++j) {  // the output so far, rescaled to the new max
          acc[mt][j][0] *= alpha[2 * mt];
          acc[mt][j][1] *= alpha[2 * mt];
          acc[mt][j][2] *= alpha[2 * mt + 1];
          acc[mt][j][3] *= alpha[2 * mt + 1];
        }
      }

      // O += P V. V's rows are keys, the B operand's K dimension: ldmatrix .trans hands out its columns. One
      // ldmatrix_x4_trans gives two tiles of 8 output columns (lanes 0-7 / 8-15 name keys 0-7 / 8-15 at column
      // 16 dd, lanes 16-31 the same keys at column 16 dd + 8), and each serves both m-tiles.
#pragma unroll
      for (int kk = 0; kk < BC / 16; ++kk) {
#pragma unroll
        for (int j = 0; j < DT; j += 2) {
          std::uint32_t vb[4];
          rooflab::ldmatrix_x4_trans(vb, vs + (16 * kk + lane % 16) * LD + 8 * j + lane / 16 * 8);
          const std::uint32_t b0[2] = {vb[0], vb[1]}, b1[2] = {vb[2], vb[3]};
#pragma unroll
          for (int mt = 0; mt < MT; ++mt) {
            rooflab::mma_m16n8k16(acc[mt][j], pa[mt][kk], b0, acc[mt][j]);
            rooflab::mma_m16n8k16(acc[mt][j + 1], pa[mt][kk], b1, acc[mt][j + 1]);
          }
        }
      }
    }
    __syncthreads();  // every warp is done with this stage before the tile after next overwrites it
  }

  // O = acc / l, the quad's four partial sums added first; the log-sum-exp in natural units beside it. The rows go
  // out through shared memory (the stages are free after the loop's last barrier: each warp takes its own rows),
  // so that global memory sees whole 16-byte pieces of each row rather than 4 bytes from every lane.
  constexpr float kLn2 = 0.6931471805599453f;
  __half* rows = smem + warp * 16 * MT * LD;
#pragma unroll
  for (int h = 0; h < ROWS; ++h) {
    l[h] += __shfl_xor_sync(kFullMask, l[h], 1);
    l[h] += __shfl_xor_sync(kFullMask, l[h], 2);
    const float inv = 1.0f / l[h];
    const int r = 16 * (h / 2) + g + 8 * (h % 2);  // the row among the warp's 16 MT
#pragma unroll
    for (int j = 0; j < DT; ++j) {
      *reinterpret_cast<__half2*>(rows + r * LD + 8 * j + 2 * t) =
          __floats2half2_rn(acc[h / 2][j][2 * (h % 2)] * inv, acc[h / 2][j][2 * (h % 2) + 1] * inv);
    }
    const int query = row0 + r;
    if (t == 0 && query < len) lse[static_cast<std::size_t>(blockIdx.y) * len + query] = m[h] * kLn2 + logf(l[h]);
  }
  __syncwarp();  // the warp's rows are whole before its lanes read them back
  for (int i = lane; i < 16 * MT * (D / 8); i += 32) {
    const int r = i / (D / 8), c = i % (D / 8) * 8;
    if (row0 + r < len) {
      *reinterpret_cast<uint4*>(o + head + static_cast<std::size_t>(row0 + r) * D + c) =
          *reinterpret_cast<const uint4*>(rows + r * LD + c);
    }
  }
  // STUDENT END
}

// ---- launchers ----

void softmax_rows(const __half* s, __half* p, int rows, int len, float scale, bool causal, cudaStream_t stream) {
  // STUDENT BEGIN (lab05.softmax.launch)
  // Rows of up to 4096 halves, a multiple of 8 (the naive path's at the timed size), stay in registers; the mask is
  // compiled in only where it is used.
  constexpr int kRowsPerBlock = kSoftmaxBlock / 32, kPieces = 16;
  const unsigned blocks = ceil_div(rows, kRowsPerBlock);
  const bool in_registers = len % 8 == 0 && len <= 32 * 8 * kPieces;
  if (in_registers && !causal) {
    softmax_rows_kernel<kPieces, false><<<blocks, kSoftmaxBlock, 0, stream>>>(s, p, rows, len, scale);
  } else if (in_registers) {
    softmax_rows_kernel<kPieces, true><<<blocks, kSoftmaxBlock, 0, stream>>>(s, p, rows, len, scale);
  } else if (!causal) {
    softmax_rows_kernel<0, false><<<blocks, kSoftmaxBlock, 0, stream>>>(s, p, rows, len, scale);
  } else {
    softmax_rows_kernel<0, true><<<blocks, kSoftmaxBlock, 0, stream>>>(s, p, rows, len, scale);
  }
  ROOFLAB_LAUNCH_CHECK();
  // STUDENT END
}

void flash_attention_fp32(const float* q, const float* k, const float* v, float* o, float* lse, int batch_heads,
                          int len, int head_dim, float scale, bool causal, cudaStream_t stream) {
  // STUDENT BEGIN (lab05.flash1.launch)
  const dim3 grid(ceil_div(len, kFlash1Block / 32), batch_heads);
  if (head_dim == 64) {
    flash_fp32_kernel<64><<<grid, kFlash1Block, 0, stream>>>(q, k, v, o, lse, len, scale, causal);
  } else if (head_dim == 128) {
    flash_fp32_kernel<128><<<grid, kFlash1Block, 0, stream>>>(q, k, v, o, lse, len, scale, causal);
  } else {
    throw std::invalid_argument("flash_attention_fp32: head_dim " + std::to_string(head_dim) + " (64 or 128)");
  }
  ROOFLAB_LAUNCH_CHECK();
  // STUDENT END
}

void flash_attention_fp16(const __half* q, const __half* k, const __half* v, __half* o, float* lse, int batch_heads,
                          int len, int head_dim, float scale, bool causal, cudaStream_t stream) {
  // STUDENT BEGIN (lab05.flash2.launch)
  // 4 warps of 32 query rows (128 a block) and 64 keys a tile at head dim 64; of 16 rows (64) and 32 keys at 128. Two
  // stages of K and V stay within 48 KB.
  const dim3 grid(ceil_div(len, head_dim == 64 ? 128 : 64), batch_heads);
  if (head_dim == 64) {
    flash_mma_kernel<64, 64><<<grid, kFlash2Block, 0, stream>>>(q, k, v, o, lse, len, scale, causal);
  } else if (head_dim == 128) {
    flash_mma_kernel<128, 32><<<grid, kFlash2Block, 0, stream>>>(q, k, v, o, lse, len, scale, causal);
  } else {
    throw std::invalid_argument("flash_attention_fp16: head_dim " + std::to_string(head_dim) + " (64 or 128)");
  }
  ROOFLAB_LAUNCH_CHECK();
  // STUDENT END
}

}  // namespace lab05
