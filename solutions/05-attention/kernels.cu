// Lab 05: naive vs Flash attention - the softmax the naive path needs, and Flash attention twice.
//
//   softmax_rows_kernel   the naive path's middle step: one warp per row of scores, FP16 in and out
//   flash_fp32_kernel     v1: FP32 on the CUDA cores; K and V tiles in shared memory, the online softmax
//   flash_wmma_kernel     v2: FP16 tiles, Q K^T and P V on the tensor cores (WMMA), FP32 accumulation
//
// The naive path (naive.hpp: cuBLAS, this softmax, cuBLAS) writes an L x L score matrix per head and reads
// it back twice: its bytes grow with L^2, and so does its memory. Flash attention never writes the scores:
// each block keeps a tile of queries, streams K and V through shared memory, and folds each tile of scores
// into its output with the online softmax (a running max and sum, and the output rescaled whenever the max
// grows). Its bytes are Q, K, V and O once (plus K and V once per query tile, from L2), its memory O(L).
// Handout: README.md, sections "The naive path" to "Tensor cores win it back".
#include "kernels.hpp"

#include <rooflab/launch.hpp>
#include <rooflab/stub.hpp>
#include <rooflab/warp.hpp>

#include <mma.h>

#include <cmath>
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
    // exp(scale x - max) = 2^(x k - shift): one fused multiply-add and one exp2 per score.
    constexpr float kLog2e = 1.4426950408889634f;
    const float k = scale * kLog2e, shift = row_max * kLog2e;
    const auto weight = [&](__half2 pair, int t) { return exp2f(fmaf(t == 0 ? __low2float(pair) : __high2float(pair), k, -shift)); };
    float l = 0.0f;
#pragma unroll
    for (int i = 0; i < Pieces; ++i) {
      const int j = (lane + 32 * i) * 8;
      __half2 h[4];
      halves(i, h);
      if (whole(j)) {
#pragma unroll
        for (int t = 0; t < 8; ++t) l += weight(h[t / 2], t % 2);
      } else if (straddles(j)) {
#pragma unroll
        for (int t = 0; t < 8; ++t) l += j + t < seen ? weight(h[t / 2], t % 2) : 0.0f;
      }
    }
    const float inv_sum = 1.0f / warp_sum(l);
#pragma unroll
    for (int i = 0; i < Pieces; ++i) {
      const int j = (lane + 32 * i) * 8;
      if (j >= len) continue;
      __half2 h[4];
      halves(i, h);
      if (whole(j)) {
#pragma unroll
        for (int q = 0; q < 4; ++q) h[q] = __floats2half2_rn(weight(h[q], 0) * inv_sum, weight(h[q], 1) * inv_sum);
      } else {  // keys past `seen` get 0
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          const float lo = j + 2 * q < seen ? weight(h[q], 0) * inv_sum : 0.0f;
          const float hi = j + 2 * q + 1 < seen ? weight(h[q], 1) * inv_sum : 0.0f;
          h[q] = __floats2half2_rn(lo, hi);
        }
      }
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
// Block (query tile, head): 4 warps, warp w owns 16 query rows. Per tile of BC keys: S (16 x BC) = Q K^T
// with WMMA into FP32, the online softmax on S in shared memory (two lanes per row), P in FP16, and
// O (16 x D, FP32 accumulator fragments) rescaled and += P V with WMMA. Shared memory rows are padded by
// 8 halves / 4 floats (16 bytes): rows that start at different banks, and WMMA's 32-byte alignment kept.
template <int D, int BC>
__global__ void __launch_bounds__(kFlash2Block)
    flash_wmma_kernel(const __half* __restrict__ q, const __half* __restrict__ k, const __half* __restrict__ v,
                      __half* __restrict__ o, float* __restrict__ lse, int len, float scale, bool causal) {
  // STUDENT BEGIN (lab05.flash2)
  namespace wmma = nvcuda::wmma;
  constexpr int WARPS = kFlash2Block / 32;
  constexpr int BR = WARPS * 16;  // query rows per block
  constexpr int LDK = D + 8;      // halves per row of the Q, K and V tiles
  constexpr int LDS = BC + 4;     // floats per row of a warp's score tile
  constexpr int LDP = BC + 8;     // halves per row of a warp's probability tile
  static_assert(BR <= 2 * BC, "the Q tile is staged in the K and V tiles' space");
  __shared__ __align__(32) __half kv[2 * BC * LDK];  // K tile, then V tile (first: this block's Q tile)
  __shared__ __align__(32) float sw[WARPS][16 * LDS];
  __shared__ __align__(32) __half pw[WARPS][16 * LDP];
  __shared__ float row_alpha[WARPS][16];
  __shared__ float row_sum[WARPS][16];
  __half* ks = kv;
  __half* vs = kv + BC * LDK;
  const int warp = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);
  const std::size_t head = static_cast<std::size_t>(blockIdx.y) * static_cast<std::size_t>(len) * D;
  const int block_row0 = static_cast<int>(blockIdx.x) * BR;
  const int row0 = block_row0 + warp * 16;  // this warp's first query
  float* s_tile = sw[warp];
  __half* p_tile = pw[warp];

  // Rows [r0, r0 + rows) of X into a shared tile of LDK halves a row, 16 bytes at a time (D is a multiple
  // of 8 and rows are D halves: every load is aligned), zeros past the last row.
  const auto stage = [&](const __half* x, int r0, int rows, __half* tile) {
    for (int i = static_cast<int>(threadIdx.x); i < rows * (D / 8); i += static_cast<int>(blockDim.x)) {
      const int r = i / (D / 8), c = i % (D / 8) * 8;
      uint4 chunk = make_uint4(0, 0, 0, 0);
      if (r0 + r < len) chunk = *reinterpret_cast<const uint4*>(x + head + static_cast<std::size_t>(r0 + r) * D + c);
      *reinterpret_cast<uint4*>(tile + r * LDK + c) = chunk;
    }
  };

  // The warp's Q rows as D / 16 matrix_a fragments, held in registers for the whole loop.
  stage(q, block_row0, BR, kv);
  __syncthreads();
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> qa[D / 16];
  for (int kk = 0; kk < D / 16; ++kk) wmma::load_matrix_sync(qa[kk], kv + warp * 16 * LDK + kk * 16, LDK);
  __syncthreads();  // every warp has its Q before the K and V tiles overwrite it

  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[D / 16];
  for (int c = 0; c < D / 16; ++c) wmma::fill_fragment(acc[c], 0.0f);
  // Two lanes per query row: lane 2r + h takes the columns c of row r with c % 2 == h.
  const int my_row = lane / 2, my_half = lane % 2, my_query = row0 + my_row;
  float m = -INFINITY, l = 0.0f;

  const int keys = causal ? min(len, block_row0 + BR) : len;
  for (int t0 = 0; t0 < keys; t0 += BC) {
    stage(k, t0, BC, ks);
    stage(v, t0, BC, vs);
    __syncthreads();  // both tiles are whole before any warp reads them

    // A warp whose last query is before the tile's first key sees none of it (causal): it only keeps the
    // barriers.
    if (!causal || t0 <= row0 + 15) {
      // S = Q K^T: K is row-major [BC][D] in shared memory, which is K^T column-major.
      for (int n = 0; n < BC / 16; ++n) {
        wmma::fragment<wmma::accumulator, 16, 16, 16, float> sf;
        wmma::fill_fragment(sf, 0.0f);
        for (int kk = 0; kk < D / 16; ++kk) {
          wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> kb;
          wmma::load_matrix_sync(kb, ks + n * 16 * LDK + kk * 16, LDK);
          wmma::mma_sync(sf, qa[kk], kb, sf);
        }
        wmma::store_matrix_sync(s_tile + n * 16, sf, LDS, wmma::mem_row_major);
      }
      __syncwarp();  // the scores are in shared memory before the lanes read them row by row

      // The online softmax for this tile: masked scores are -inf, the row max is the two lanes' max.
      // The two lanes of a row take alternate columns, and rows 8-15 start one pair of columns later: each
      // step's 32 lanes then read 32 different banks. (A row starts 4 banks after the one before it, LDS = BC
      // + 4 floats, so rows r and r + 8 start in the same bank; with each lane taking half a row, lanes 2r
      // and 2r + 1 shared banks too: 4-way bank conflicts. Nsight Compute measured this kernel's shared
      // loads at 3.4-way on an H200 before, docs/measurements.md.)
      float* srow = s_tile + my_row * LDS;
      const int skew = my_row / 8;
      const auto column = [&](int i) { return 2 * ((i + skew) % (BC / 2)) + my_half; };
      float mx = -INFINITY;
      for (int i = 0; i < BC / 2; ++i) {
        const int c = column(i);
        const int j = t0 + c;
        const float x = (j >= len || (causal && j > my_query)) ? -INFINITY : srow[c] * scale;
        srow[c] = x;
        mx = fmaxf(mx, x);
      }
      const float m_new = fmaxf(m, fmaxf(mx, __shfl_xor_sync(kFullMask, mx, 1)));
      const float alpha = rescale_factor(m, m_new);
      float sum = 0.0f;
      for (int i = 0; i < BC / 2; ++i) {
        const int c = column(i);
        const float pe = exp_or_zero(srow[c], m_new);
        p_tile[my_row * LDP + c] = __float2half(pe);
        sum += pe;
      }
      l = l * alpha + sum + __shfl_xor_sync(kFullMask, sum, 1);
      m = m_new;
      if (my_half == 0) row_alpha[warp][my_row] = alpha;
      // Rescaling the output is needed only when some row's max grew; after the first tiles it rarely does.
      const bool rescale = __any_sync(kFullMask, alpha != 1.0f);
      __syncwarp();  // P and the factors are in shared memory before the lanes read them

      wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> pa[BC / 16];
      for (int kk = 0; kk < BC / 16; ++kk) wmma::load_matrix_sync(pa[kk], p_tile + kk * 16, LDP);
      for (int c = 0; c < D / 16; ++c) {
        if (rescale) {
          // A fragment's element-to-row map is the hardware's secret: rescale rows through shared memory.
          wmma::store_matrix_sync(s_tile, acc[c], LDS, wmma::mem_row_major);
          __syncwarp();
          for (int e = lane; e < 256; e += 32) s_tile[e / 16 * LDS + e % 16] *= row_alpha[warp][e / 16];
          __syncwarp();
          wmma::load_matrix_sync(acc[c], s_tile, LDS, wmma::mem_row_major);
          __syncwarp();  // every lane has loaded before the next column's store overwrites the scratch
        }
        for (int kk = 0; kk < BC / 16; ++kk) {
          wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> vb;
          wmma::load_matrix_sync(vb, vs + kk * 16 * LDK + c * 16, LDK);
          wmma::mma_sync(acc[c], pa[kk], vb, acc[c]);
        }
      }
    }
    __syncthreads();  // every warp is done with K and V before the next tiles overwrite them
  }

  // O = acc / l, row by row through the scratch tile; the log-sum-exp beside it.
  if (my_half == 0) {
    row_sum[warp][my_row] = l;
    if (my_query < len) lse[static_cast<std::size_t>(blockIdx.y) * len + my_query] = m + logf(l);
  }
  __syncwarp();
  for (int c = 0; c < D / 16; ++c) {
    wmma::store_matrix_sync(s_tile, acc[c], LDS, wmma::mem_row_major);
    __syncwarp();
    for (int e = lane; e < 256; e += 32) {
      const int r = e / 16, col = e % 16;
      if (row0 + r < len) {
        o[head + static_cast<std::size_t>(row0 + r) * D + c * 16 + col] = __float2half(s_tile[r * LDS + col] / row_sum[warp][r]);
      }
    }
    __syncwarp();
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
  // 64 query rows a block; 64 keys a tile at head dim 64, 32 at 128 (both within 48 KB of shared memory).
  const dim3 grid(ceil_div(len, kFlash2Block / 32 * 16), batch_heads);
  if (head_dim == 64) {
    flash_wmma_kernel<64, 64><<<grid, kFlash2Block, 0, stream>>>(q, k, v, o, lse, len, scale, causal);
  } else if (head_dim == 128) {
    flash_wmma_kernel<128, 32><<<grid, kFlash2Block, 0, stream>>>(q, k, v, o, lse, len, scale, causal);
  } else {
    throw std::invalid_argument("flash_attention_fp16: head_dim " + std::to_string(head_dim) + " (64 or 128)");
  }
  ROOFLAB_LAUNCH_CHECK();
  // STUDENT END
}

}  // namespace lab05
