// Lab 04: GEMM - from one thread per output to tensor cores, one idea per rung.
//
//   1 sgemm_naive_kernel        one thread per C element; the warp walks down a column (uncoalesced)
//   2 sgemm_coalesced_kernel    the same, with the warp along a row of C: coalesced B and C
//   3 sgemm_smem_kernel         32 x 32 tiles of A and B staged in shared memory: 32x fewer global loads
//   4 sgemm_blocktile_kernel    128 x 128 block tile, 8 x 8 outputs per thread held in registers
//   5 sgemm_vectorized_kernel   float4 global and shared loads, A transposed in shared memory, no conflicts
//   6 sgemm_warptile_kernel     each warp owns a 64 x 32 sub-tile; 4 x 4 micro-tiles per lane
//   7 hgemm_wmma_kernel         FP16 in, FP32 accumulate on the tensor cores (nvcuda::wmma, 16 x 16 x 16)
//
// C = alpha A B + beta C, row-major, any M, N, K. A GEMM does 2MNK FLOPs on 4(MK + KN + MN) bytes, so a large
// one is compute-bound on every GPU - but only if the kernel reuses what it loads. Every rung raises the
// reuse (the intensity the kernel really sees) or removes a bottleneck between the data and the FMA units.
// Handout: README.md, sections "Counting GEMM work" to "Tensor cores".
#include "kernels.hpp"

#include <rooflab/launch.hpp>
#include <rooflab/stub.hpp>

#include <cuda_pipeline.h>
#include <mma.h>

#include <cstdint>

namespace lab04 {

// ---- PROVIDED: do not modify ----

__host__ __device__ constexpr int ceil_div(int a, int b) { return (a + b - 1) / b; }

// C[i] = alpha acc + beta C[i]; C is not read when beta is 0 (the BLAS rule: C may hold NaN then).
__device__ inline void store_c(float* c, std::size_t i, float alpha, float acc, float beta) {
  c[i] = beta == 0.0f ? alpha * acc : fmaf(alpha, acc, beta * c[i]);
}

// A pointer a float4 (or 8 halves) can be loaded through: 16-byte aligned.
inline bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

// ---- 1: naive ----

__global__ void sgemm_naive_kernel(int M, int N, int K, float alpha, const float* __restrict__ A,
                                   const float* __restrict__ B, float beta, float* __restrict__ C) {
  // STUDENT BEGIN (lab04.v1)
  // threadIdx.x picks the row: the 32 lanes of a warp read 32 different rows of A (32 transactions per load)
  // and write C 32 rows apart. Correct, and slow on purpose: rung 2 swaps the two indices.
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  const int col = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= M || col >= N) return;
  float acc = 0.0f;
  for (int p = 0; p < K; ++p) acc += A[std::size_t(row) * K + p] * B[std::size_t(p) * N + col];
  store_c(C, std::size_t(row) * N + col, alpha, acc, beta);
  // STUDENT END
}

// ---- 2: coalesced ----

__global__ void sgemm_coalesced_kernel(int M, int N, int K, float alpha, const float* __restrict__ A,
                                       const float* __restrict__ B, float beta, float* __restrict__ C) {
  // STUDENT BEGIN (lab04.v2)
  // threadIdx.x picks the column: a warp reads 32 consecutive floats of B (one 128-byte line), the same A
  // element (a broadcast) and writes 32 consecutive floats of C.
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= M || col >= N) return;
  float acc = 0.0f;
  for (int p = 0; p < K; ++p) acc += A[std::size_t(row) * K + p] * B[std::size_t(p) * N + col];
  store_c(C, std::size_t(row) * N + col, alpha, acc, beta);
  // STUDENT END
}

// ---- 3: shared-memory tiles ----

template <int TILE>
__global__ void sgemm_smem_kernel(int M, int N, int K, float alpha, const float* __restrict__ A,
                                  const float* __restrict__ B, float beta, float* __restrict__ C) {
  // STUDENT BEGIN (lab04.v3)
  // Each block stages a TILE x TILE tile of A and of B per step of K: every element it loads from global
  // memory is used TILE times from shared memory. Out-of-range elements are loaded as 0, so the tails of M,
  // N and K need no special case in the inner loop.
  __shared__ float As[TILE][TILE];
  __shared__ float Bs[TILE][TILE];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += TILE) {
    As[ty][tx] = row < M && k0 + tx < K ? A[std::size_t(row) * K + k0 + tx] : 0.0f;
    Bs[ty][tx] = k0 + ty < K && col < N ? B[std::size_t(k0 + ty) * N + col] : 0.0f;
    __syncthreads();  // the whole tile is written before anyone reads it
    // As[ty][p] is one address per warp (a broadcast); Bs[p][tx] 32 consecutive words: no bank conflicts.
    for (int p = 0; p < TILE; ++p) acc += As[ty][p] * Bs[p][tx];
    __syncthreads();  // everyone has read the tile before the next step overwrites it
  }
  if (row < M && col < N) store_c(C, std::size_t(row) * N + col, alpha, acc, beta);
  // STUDENT END
}

// ---- 4: 2D register blocking ----

template <int BM, int BN, int BK, int TM, int TN>
__global__ void __launch_bounds__((BM / TM) * (BN / TN), 2)
    sgemm_blocktile_kernel(int M, int N, int K, float alpha, const float* __restrict__ A,
                           const float* __restrict__ B, float beta, float* __restrict__ C) {
  // STUDENT BEGIN (lab04.v4)
  // A 128 x 128 tile of C per block of 256 threads, each thread an 8 x 8 patch in registers. Per step of
  // BK = 8 a thread reads TM + TN = 16 floats from shared memory and does TM x TN = 64 FMAs: 4 FMAs per
  // shared load instead of rung 3's one, and every global element is reused 128 times (Q4's 128 x 128
  // tiling: intensity about 16 FLOP/byte from DRAM instead of 4).
  constexpr int THREADS = (BM / TM) * (BN / TN);
  __shared__ float As[BM * BK];  // [BM][BK], as A is laid out
  __shared__ float Bs[BK * BN];  // [BK][BN]
  const int tid = threadIdx.x;
  const int trow = tid / (BN / TN), tcol = tid % (BN / TN);
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  float acc[TM][TN] = {};
  float a_frag[TM], b_frag[TN];
  for (int k0 = 0; k0 < K; k0 += BK) {
    // Consecutive threads load consecutive elements of a row: coalesced. Zeros pad every tail.
    // A thread's elements of each tile are tid, tid + THREADS, ...: A_PER of A and B_PER of B (4 and 4), a
    // count the compiler knows, so the loops unroll into straight code; all eight are loaded into registers
    // before the first is stored to shared memory, eight loads in flight at once. Written
    // `for (i = tid; i < BM * BK; i += THREADS) As[i] = A[...]`, the count depends on tid: nvcc compiled a loop
    // that stored each element before loading the next, one load in flight per thread, so every step waited
    // out a DRAM latency per element.
    constexpr int A_PER = BM * BK / THREADS, B_PER = BK * BN / THREADS;
    static_assert(A_PER * THREADS == BM * BK && B_PER * THREADS == BK * BN, "whole elements per thread");
    float a_ld[A_PER], b_ld[B_PER];
#pragma unroll
    for (int v = 0; v < A_PER; ++v) {
      const int i = tid + v * THREADS, r = i / BK, c = i % BK;
      a_ld[v] = row0 + r < M && k0 + c < K ? A[std::size_t(row0 + r) * K + k0 + c] : 0.0f;
    }
#pragma unroll
    for (int v = 0; v < B_PER; ++v) {
      const int i = tid + v * THREADS, r = i / BN, c = i % BN;
      b_ld[v] = k0 + r < K && col0 + c < N ? B[std::size_t(k0 + r) * N + col0 + c] : 0.0f;
    }
#pragma unroll
    for (int v = 0; v < A_PER; ++v) As[tid + v * THREADS] = a_ld[v];
#pragma unroll
    for (int v = 0; v < B_PER; ++v) Bs[tid + v * THREADS] = b_ld[v];
    __syncthreads();
#pragma unroll
    for (int p = 0; p < BK; ++p) {
#pragma unroll
      for (int i = 0; i < TM; ++i) a_frag[i] = As[(trow * TM + i) * BK + p];
#pragma unroll
      for (int j = 0; j < TN; ++j) b_frag[j] = Bs[p * BN + tcol * TN + j];
#pragma unroll
      for (int i = 0; i < TM; ++i) {
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] += a_frag[i] * b_frag[j];
      }
    }
    __syncthreads();
  }
  // One row of the patch at a time, its address computed once: the 64 stores then need no more registers than
  // the accumulators already hold (a per-element address and bounds test made ptxas spill on sm_80).
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int r = row0 + trow * TM + i;
    if (r >= M) break;  // the patch's rows go down: every later row is past M too
    float* c_row = C + std::size_t(r) * N + col0 + tcol * TN;
    const int cols = min(TN, N - (col0 + tcol * TN));
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      if (j < cols) store_c(c_row, j, alpha, acc[i][j], beta);
    }
  }
  // STUDENT END
}

// ---- 5: vectorized loads, A transposed ----

// STUDENT BEGIN (lab04.v5.loads)
// A thread's share of the BM x BK tile of A at (row0, k0) and of the BK x BN tile of B at (k0, col0), four
// floats at a time: pieces threadIdx.x, threadIdx.x + THREADS, ... of each tile, held in registers between
// the global loads (fetch_tiles) and the shared stores (stash_tiles). Shared by rungs 5 and 6: rung 5 stores
// right after loading (load_tiles_vec4), rung 6 loads the next step's tiles before this step's math.
template <int BM, int BN, int BK, int THREADS>
struct TilePieces {
  static constexpr int A_PER = BM * BK / 4 / THREADS, B_PER = BK * BN / 4 / THREADS;
  static_assert(A_PER * THREADS * 4 == BM * BK && B_PER * THREADS * 4 == BK * BN, "whole float4s per thread");
  float4 a[A_PER], b[B_PER];
};

// The global loads of a thread's pieces. The trip counts are compile-time constants (A_PER, B_PER), so the
// loops unroll into straight code; written `for (v = threadIdx.x; v < A_VECS; v += THREADS)`, nvcc cannot know
// the count and compiles a loop unrolled by 4 with a remainder, most of whose instructions are overhead.
// `vec`: K and N are multiples of 4 and A, B are 16-byte aligned, so a float4 is either wholly inside the
// matrix or wholly outside it; otherwise the same four elements are loaded one by one.
template <int BM, int BN, int BK, int THREADS>
__device__ inline void fetch_tiles(TilePieces<BM, BN, BK, THREADS>& t, const float* __restrict__ A,
                                   const float* __restrict__ B, int M, int N, int K, int row0, int col0, int k0,
                                   bool vec) {
  using Pieces = TilePieces<BM, BN, BK, THREADS>;
#pragma unroll
  for (int i = 0; i < Pieces::A_PER; ++i) {
    const int v = threadIdx.x + i * THREADS;
    const int gr = row0 + v / (BK / 4), gc = k0 + (v % (BK / 4)) * 4;
    float4 x = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (vec) {
      if (gr < M && gc < K) x = *reinterpret_cast<const float4*>(A + std::size_t(gr) * K + gc);
    } else if (gr < M) {
      const float* p = A + std::size_t(gr) * K;
      x.x = gc < K ? p[gc] : 0.0f;
      x.y = gc + 1 < K ? p[gc + 1] : 0.0f;
      x.z = gc + 2 < K ? p[gc + 2] : 0.0f;
      x.w = gc + 3 < K ? p[gc + 3] : 0.0f;
    }
    t.a[i] = x;
  }
#pragma unroll
  for (int i = 0; i < Pieces::B_PER; ++i) {
    const int v = threadIdx.x + i * THREADS;
    const int gr = k0 + v / (BN / 4), gc = col0 + (v % (BN / 4)) * 4;
    float4 x = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (vec) {
      if (gr < K && gc < N) x = *reinterpret_cast<const float4*>(B + std::size_t(gr) * N + gc);
    } else if (gr < K) {
      const float* p = B + std::size_t(gr) * N;
      x.x = gc < N ? p[gc] : 0.0f;
      x.y = gc + 1 < N ? p[gc + 1] : 0.0f;
      x.z = gc + 2 < N ? p[gc + 2] : 0.0f;
      x.w = gc + 3 < N ? p[gc + 3] : 0.0f;
    }
    t.b[i] = x;
  }
}

// The pieces into shared memory: A transposed into As ([BK][LDA]), B as it is into Bs ([BK][BN]).
template <int BM, int BN, int BK, int LDA, int THREADS>
__device__ inline void stash_tiles(const TilePieces<BM, BN, BK, THREADS>& t, float* As, float* Bs) {
  using Pieces = TilePieces<BM, BN, BK, THREADS>;
#pragma unroll
  for (int i = 0; i < Pieces::A_PER; ++i) {
    const int v = threadIdx.x + i * THREADS;
    const int r = v / (BK / 4), c = (v % (BK / 4)) * 4;
    // Transposed: a thread's column of A becomes a row of As, so the compute loop reads TM consecutive A
    // values with one 128-bit shared load. LDA = BM + 4: at BK = 8 (rung 5) the two threads that share a
    // row r (c = 0 and c = 4) store 16 banks apart, so these scalar stores do not conflict either. At BK = 16
    // (rung 6) four threads share a row, and c = 8 and 12 land in the banks of c = 0 and 4: 2-way conflicts
    // on these stores, as the CPU backend's traffic model counts. LDA must stay a multiple of 4 for the
    // float4 reads, so padding alone cannot part them.
    As[(c + 0) * LDA + r] = t.a[i].x;
    As[(c + 1) * LDA + r] = t.a[i].y;
    As[(c + 2) * LDA + r] = t.a[i].z;
    As[(c + 3) * LDA + r] = t.a[i].w;
  }
#pragma unroll
  for (int i = 0; i < Pieces::B_PER; ++i) {
    const int v = threadIdx.x + i * THREADS;
    const int r = v / (BN / 4), c = (v % (BN / 4)) * 4;
    *reinterpret_cast<float4*>(&Bs[r * BN + c]) = t.b[i];
  }
}

// Both at once, for a kernel that has nothing to do while the loads are on their way (rung 5).
template <int BM, int BN, int BK, int LDA, int THREADS>
__device__ inline void load_tiles_vec4(float* As, float* Bs, const float* __restrict__ A, const float* __restrict__ B,
                                       int M, int N, int K, int row0, int col0, int k0, bool vec) {
  TilePieces<BM, BN, BK, THREADS> t;
  fetch_tiles(t, A, B, M, N, K, row0, col0, k0, vec);
  stash_tiles<BM, BN, BK, LDA, THREADS>(t, As, Bs);
}

// C's 4 consecutive elements (r, c .. c + 3) from v: one float4 store when the row is aligned and wholly
// inside N, element by element otherwise.
__device__ inline void store_c4(float* C, int M, int N, int r, int c, float4 v, float alpha, float beta, bool vec) {
  if (r >= M) return;
  float* p = C + std::size_t(r) * N + c;
  if (vec && c + 3 < N) {
    float4 out = make_float4(alpha * v.x, alpha * v.y, alpha * v.z, alpha * v.w);
    if (beta != 0.0f) {
      const float4 old = *reinterpret_cast<const float4*>(p);
      out.x = fmaf(beta, old.x, out.x);
      out.y = fmaf(beta, old.y, out.y);
      out.z = fmaf(beta, old.z, out.z);
      out.w = fmaf(beta, old.w, out.w);
    }
    *reinterpret_cast<float4*>(p) = out;
    return;
  }
  const float e[4] = {v.x, v.y, v.z, v.w};
  for (int j = 0; j < 4 && c + j < N; ++j) store_c(p, j, alpha, e[j], beta);
}
// STUDENT END

template <int BM, int BN, int BK, int TM, int TN>
__global__ void __launch_bounds__((BM / TM) * (BN / TN))
    sgemm_vectorized_kernel(int M, int N, int K, float alpha, const float* __restrict__ A,
                            const float* __restrict__ B, float beta, float* __restrict__ C, bool vec) {
  // STUDENT BEGIN (lab04.v5)
  // Rung 4's tiling with its two shared-memory problems fixed. (1) A is stored transposed, so a thread's TM
  // values of A for one p are consecutive: 128-bit loads instead of TM scalar ones. (2) A thread's 8 columns
  // are two groups of 4, BN / 2 apart: the 8 lanes of each quarter-warp phase read 8 consecutive float4s
  // (32 different banks) instead of rung 4's 8-float stride (2-way conflicts). Same for its 8 rows.
  constexpr int THREADS = (BM / TM) * (BN / TN), LDA = BM + 4;
  // float4 arrays: 16-byte alignment for the 128-bit accesses, which a float array does not promise.
  __shared__ float4 As4[BK * LDA / 4];
  __shared__ float4 Bs4[BK * BN / 4];
  float* As = reinterpret_cast<float*>(As4);
  float* Bs = reinterpret_cast<float*>(Bs4);
  const int tid = threadIdx.x;
  const int trow = tid / (BN / TN), tcol = tid % (BN / TN);
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  float acc[TM][TN] = {};
  float a_frag[TM], b_frag[TN];
  for (int k0 = 0; k0 < K; k0 += BK) {
    load_tiles_vec4<BM, BN, BK, LDA, THREADS>(As, Bs, A, B, M, N, K, row0, col0, k0, vec);
    __syncthreads();
#pragma unroll
    for (int p = 0; p < BK; ++p) {
      // Rows trow*4 .. +3 and BM/2 + trow*4 .. +3; columns likewise with BN/2.
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const float4 a = *reinterpret_cast<const float4*>(&As[p * LDA + h * (BM / 2) + trow * 4]);
        const float4 b = *reinterpret_cast<const float4*>(&Bs[p * BN + h * (BN / 2) + tcol * 4]);
        a_frag[4 * h + 0] = a.x;
        a_frag[4 * h + 1] = a.y;
        a_frag[4 * h + 2] = a.z;
        a_frag[4 * h + 3] = a.w;
        b_frag[4 * h + 0] = b.x;
        b_frag[4 * h + 1] = b.y;
        b_frag[4 * h + 2] = b.z;
        b_frag[4 * h + 3] = b.w;
      }
#pragma unroll
      for (int i = 0; i < TM; ++i) {
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] += a_frag[i] * b_frag[j];
      }
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int r = row0 + (i / 4) * (BM / 2) + trow * 4 + i % 4;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const float4 v = make_float4(acc[i][4 * h], acc[i][4 * h + 1], acc[i][4 * h + 2], acc[i][4 * h + 3]);
      store_c4(C, M, N, r, col0 + h * (BN / 2) + tcol * 4, v, alpha, beta, vec);
    }
  }
  // STUDENT END
}

// ---- 6: warp tiling ----

template <int BM, int BN, int BK, int WM, int WN, int WMITER, int WNITER>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32, 2)
    sgemm_warptile_kernel(int M, int N, int K, float alpha, const float* __restrict__ A,
                          const float* __restrict__ B, float beta, float* __restrict__ C, bool vec) {
  // STUDENT BEGIN (lab04.v6)
  // The block's 128 x 128 tile is split among 8 warps (2 x 4), each owning WM x WN = 64 x 32 of C. A warp
  // covers its tile in WMITER x WNITER = 2 x 2 steps of 32 x 16, its 32 lanes laid out 8 x 4 with a 4 x 4
  // micro-tile each: per p a lane loads 2 + 2 float4s for 64 FMAs, and the float4s a warp loads are
  // 8 (A) and 4 (B) consecutive ones - conflict-free and mostly broadcasts. Keeping a warp's data together
  // is what the next steps (double buffering, tensor cores) build on.
  // The next step's tiles are loaded into registers before this step's math and stored to shared memory after
  // it, so their global loads (450-790 ns under load on the H100 run, data/perf_model.json) land while the FMAs
  // run. Loaded and stored back to back (rung 5), every block waits for memory at every step, and with two blocks
  // per SM the other one alone cannot keep the FMA units busy. It costs 16 registers a thread for the pieces in
  // flight; the launch bounds keep the kernel at 128 for two blocks per SM.
  constexpr int THREADS = (BM / WM) * (BN / WN) * 32, LDA = BM + 4;
  constexpr int SUB_M = WM / WMITER, SUB_N = WN / WNITER;  // 32 x 16: one step of the warp
  constexpr int TM = SUB_M / 8, TN = SUB_N / 4;              // 4 x 4 per lane and step
  __shared__ float4 As4[BK * LDA / 4];
  __shared__ float4 Bs4[BK * BN / 4];
  float* As = reinterpret_cast<float*>(As4);
  float* Bs = reinterpret_cast<float*>(Bs4);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int warp_row = (warp / (BN / WN)) * WM, warp_col = (warp % (BN / WN)) * WN;
  const int lane_row = (lane / 4) * TM, lane_col = (lane % 4) * TN;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  float acc[WMITER * TM][WNITER * TN] = {};
  float a_frag[WMITER * TM], b_frag[WNITER * TN];
  TilePieces<BM, BN, BK, THREADS> next;  // the tiles of the step to come, on their way from global memory
  fetch_tiles(next, A, B, M, N, K, row0, col0, 0, vec);
  for (int k0 = 0; k0 < K; k0 += BK) {
    stash_tiles<BM, BN, BK, LDA, THREADS>(next, As, Bs);  // the previous step's closing barrier freed the tiles
    __syncthreads();
    if (k0 + BK < K) fetch_tiles(next, A, B, M, N, K, row0, col0, k0 + BK, vec);
#pragma unroll
    for (int p = 0; p < BK; ++p) {
#pragma unroll
      for (int wm = 0; wm < WMITER; ++wm) {
        const float4 a = *reinterpret_cast<const float4*>(&As[p * LDA + warp_row + wm * SUB_M + lane_row]);
        a_frag[wm * TM + 0] = a.x;
        a_frag[wm * TM + 1] = a.y;
        a_frag[wm * TM + 2] = a.z;
        a_frag[wm * TM + 3] = a.w;
      }
#pragma unroll
      for (int wn = 0; wn < WNITER; ++wn) {
        const float4 b = *reinterpret_cast<const float4*>(&Bs[p * BN + warp_col + wn * SUB_N + lane_col]);
        b_frag[wn * TN + 0] = b.x;
        b_frag[wn * TN + 1] = b.y;
        b_frag[wn * TN + 2] = b.z;
        b_frag[wn * TN + 3] = b.w;
      }
#pragma unroll
      for (int i = 0; i < WMITER * TM; ++i) {
#pragma unroll
        for (int j = 0; j < WNITER * TN; ++j) acc[i][j] += a_frag[i] * b_frag[j];
      }
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < WMITER * TM; ++i) {
    const int r = row0 + warp_row + (i / TM) * SUB_M + lane_row + i % TM;
#pragma unroll
    for (int wn = 0; wn < WNITER; ++wn) {
      const float4 v = make_float4(acc[i][wn * TN], acc[i][wn * TN + 1], acc[i][wn * TN + 2], acc[i][wn * TN + 3]);
      store_c4(C, M, N, r, col0 + warp_col + wn * SUB_N + lane_col, v, alpha, beta, vec);
    }
  }
  // STUDENT END
}

// ---- 7: tensor cores (WMMA) ----

template <int BM, int BN, int BK, int WM, int WN, int STAGES, bool VEC>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32, 2)
    hgemm_wmma_kernel(int M, int N, int K, float alpha, const __half* __restrict__ A, const __half* __restrict__ B,
                      float beta, float* __restrict__ C) {
  // STUDENT BEGIN (lab04.v7)
  // 8 warps (2 x 4) share a 128 x 128 tile; each warp owns 64 x 32 of C as 4 x 2 accumulator fragments of
  // 16 x 16 in FP32. Per step of BK = 32 the block stages A and B in FP16 in shared memory and each warp does
  // 2 x (4 x 2) mma_sync. Zero padding of the tails makes every fragment full: the tensor cores never see a
  // partial tile, and padded rows and columns are simply not stored.
  // The tiles flow through a ring of STAGES = 3 buffers. cp.async (16 bytes each, straight from global to shared
  // memory without passing through registers) fills the buffer of step t + 2 while the tensor cores work on step t,
  // so each copy has two steps of math to land in. With one step (two buffers), a step's math on an SM (about 0.4 us
  // on an H100 at two blocks per SM) is shorter than a load's latency under load (450-790 ns, data/perf_model.json),
  // and every block waited at every step's barrier. One barrier a step does both jobs: this step's tiles are visible
  // to every warp, and every warp is done with the buffer the new copies refill. The three buffers are 55.5 KB, past
  // the 48 KB a block gets without asking: the launcher opts in, and the buffers are dynamic
  // shared memory (extern __shared__).
  using namespace nvcuda;
  constexpr int WARPS_N = BN / WN, THREADS = (BM / WM) * WARPS_N * 32;
  constexpr int FM = WM / 16, FN = WN / 16;
  // Rows padded by 8 halves (16 bytes): the row stride stays a multiple of 8 elements, as load_matrix_sync
  // needs, and the 8 rows one ldmatrix reads start in 8 different 16-byte bank groups.
  constexpr int LDA = BK + 8, LDB = BN + 8;
  constexpr int A_TILE = BM * LDA, B_TILE = BK * LDB, STAGE = A_TILE + B_TILE;  // in halves
  static_assert(STAGE * 2 % 32 == 0, "every stage must start on 32 bytes, as load_matrix_sync requires");
  // Each thread copies the same pieces of 8 halves at every step: A_PIECES of A, B_PIECES of B.
  constexpr int A_PIECES = BM * BK / 8 / THREADS, B_PIECES = BK * BN / 8 / THREADS;
  static_assert(A_PIECES * THREADS * 8 == BM * BK && B_PIECES * THREADS * 8 == BK * BN, "whole pieces per thread");
  extern __shared__ __align__(128) __half smem[];  // STAGES x (A tile, B tile); the epilogue reuses it
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int warp_row = (warp / WARPS_N) * WM, warp_col = (warp % WARPS_N) * WN;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[FM][FN];
#pragma unroll
  for (int i = 0; i < FM; ++i) {
#pragma unroll
    for (int j = 0; j < FN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);
  }
  // stage_next(buf) stages the next step's tiles into buffer `buf`, in pieces of 8 halves (16 bytes). A row of A's
  // tile is BK / 8 = 4 pieces, a row of B's BN / 8 = 16. Thread x copies the same column at every step, rows
  // THREADS / (BK / 8) apart in A (64), THREADS / (BN / 8) apart in B (16). Shared memory serves a warp's 16-byte
  // copies 8 lanes at a time, one 128-byte wavefront when the 8 pieces land in the 8 different 16-byte bank
  // groups. B's 8 lanes write 8 neighbouring pieces of one row: they do. A's cover two rows, 4 pieces each: rows
  // r and r + 1 would start 5 groups apart (LDA = 40 halves = 5 groups), and r's piece 0 and r + 1's piece 3
  // would share a group (two wavefronts); rows r and r + 4 start 20 groups apart, 4 modulo 8, and fill all 8.
  // So thread x's row of A takes the bits of q = x / 4 in the order that puts lanes 0-3 on row r and lanes 4-7
  // on row r + 4 (q = 0, 1, 2, 3, ... -> rows 0, 4, 1, 5, ...; the 8 rows of each group of 8 stay in the group).
  // With VEC (K, N multiples of 8, 16-byte aligned A and B; a kernel of its own, so the other path costs it
  // neither registers nor branches) a piece is inside the matrix or wholly outside it: one cp.async, with zeros
  // (a source size of 0, the address kept inside the matrix) outside. Without, element by element.
  constexpr int A_ROWS_APART = THREADS / (BK / 8), B_ROWS_APART = THREADS / (BN / 8);
  static_assert(BK / 8 == 4 && LDA / 8 % 2 == 1, "A's row order below assumes rows of 4 pieces, an odd number of "
                                                   "16-byte groups apart");
  const int a_q = threadIdx.x / (BK / 8), a_col = threadIdx.x % (BK / 8) * 8;
  const int a_row = (a_q & ~7) | ((a_q & 1) << 2) | ((a_q >> 1) & 3);
  const int b_row = threadIdx.x / (BN / 8), b_col = threadIdx.x % (BN / 8) * 8;
  // The steps are staged in order, so the sources move on by BK halves of A and BK rows of B each time.
  int k0 = 0;                                                         // the next step to stage starts here
  const __half* a_src = A + std::size_t(row0 + a_row) * K + a_col;  // its piece 0 (when inside the matrix)
  const __half* b_src = B + std::size_t(b_row) * N + col0 + b_col;
  const std::size_t b_step = std::size_t(BK) * N;
  const auto stage_next = [&](int buf) {
    __half* sa = smem + buf * STAGE;
    __half* sb = sa + A_TILE;
    if constexpr (VEC) {
      const bool a_in_k = k0 + a_col < K, b_in_n = col0 + b_col < N;
#pragma unroll
      for (int i = 0; i < A_PIECES; ++i) {
        const bool in = a_in_k && row0 + a_row + i * A_ROWS_APART < M;
        const __half* src = a_src + std::size_t(i * A_ROWS_APART) * K;
        __pipeline_memcpy_async(sa + (a_row + i * A_ROWS_APART) * LDA + a_col, in ? src : A, 16, in ? 0 : 16);
      }
#pragma unroll
      for (int i = 0; i < B_PIECES; ++i) {
        const bool in = b_in_n && k0 + b_row + i * B_ROWS_APART < K;
        const __half* src = b_src + std::size_t(i * B_ROWS_APART) * N;
        __pipeline_memcpy_async(sb + (b_row + i * B_ROWS_APART) * LDB + b_col, in ? src : B, 16, in ? 0 : 16);
      }
    } else {
#pragma unroll
      for (int i = 0; i < A_PIECES; ++i) {
        const int r = a_row + i * A_ROWS_APART, gr = row0 + r;
        for (int e = 0; e < 8; ++e) {
          const int gc = k0 + a_col + e;
          sa[r * LDA + a_col + e] = gr < M && gc < K ? A[std::size_t(gr) * K + gc] : __float2half(0.0f);
        }
      }
#pragma unroll
      for (int i = 0; i < B_PIECES; ++i) {
        const int r = b_row + i * B_ROWS_APART, gr = k0 + r;
        for (int e = 0; e < 8; ++e) {
          const int gc = col0 + b_col + e;
          sb[r * LDB + b_col + e] = gr < K && gc < N ? B[std::size_t(gr) * N + gc] : __float2half(0.0f);
        }
      }
    }
    k0 += BK;
    a_src += BK;
    b_src += b_step;
  };
  const int steps = ceil_div(K, BK);
  // The ring starts with steps 0 .. STAGES - 2 in flight, one batch of copies (__pipeline_commit) per step.
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < steps) stage_next(s);
    __pipeline_commit();  // (an empty batch past the last step keeps the count of batches per step at one)
  }
  for (int t = 0, read = 0, write = STAGES - 1; t < steps; ++t) {
    __pipeline_wait_prior(STAGES - 2);  // this thread's copies of step t have landed (the newer ones may not) ...
    __syncthreads();  // ... and every thread's; and every warp is done with step t - 1, whose buffer `write` is
    if (t + STAGES - 1 < steps) stage_next(write);  // refilled here with step t + STAGES - 1
    __pipeline_commit();
    const __half* sa = smem + read * STAGE;
    const __half* sb = sa + A_TILE;
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a[FM];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> b[FN];
#pragma unroll
      for (int i = 0; i < FM; ++i) wmma::load_matrix_sync(a[i], &sa[(warp_row + i * 16) * LDA + kk], LDA);
#pragma unroll
      for (int j = 0; j < FN; ++j) wmma::load_matrix_sync(b[j], &sb[kk * LDB + warp_col + j * 16], LDB);
#pragma unroll
      for (int i = 0; i < FM; ++i) {
#pragma unroll
        for (int j = 0; j < FN; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
      }
    }
    read = read + 1 == STAGES ? 0 : read + 1;
    write = write + 1 == STAGES ? 0 : write + 1;
  }
  // Epilogue: a fragment's element-to-lane mapping is unspecified, so each fragment goes through the warp's
  // 16 x 16 staging tile in shared memory (the ring's first bytes, once every warp is past its last step);
  // then every lane applies alpha and beta to 8 known elements, bounds-checked.
  __pipeline_wait_prior(0);
  __syncthreads();  // every warp is done reading the tiles before the staging tiles overwrite them
  float* out = reinterpret_cast<float*>(smem) + warp * 16 * 16;
#pragma unroll
  for (int i = 0; i < FM; ++i) {
#pragma unroll
    for (int j = 0; j < FN; ++j) {
      wmma::store_matrix_sync(out, acc[i][j], 16, wmma::mem_row_major);
      __syncwarp();
      for (int e = lane; e < 16 * 16; e += 32) {
        const int r = row0 + warp_row + i * 16 + e / 16, c = col0 + warp_col + j * 16 + e % 16;
        if (r < M && c < N) store_c(C, std::size_t(r) * N + c, alpha, out[e], beta);
      }
      __syncwarp();  // every lane has read the staging tile before the next fragment overwrites it
    }
  }
  // STUDENT END
}

// ---- launchers ----

void sgemm_naive(int m, int n, int k, float alpha, const float* a, const float* b, float beta, float* c,
                 cudaStream_t stream) {
  // STUDENT BEGIN (lab04.v1.launch)
  const dim3 block(kNaiveTile, kNaiveTile);
  const dim3 grid(ceil_div(m, kNaiveTile), ceil_div(n, kNaiveTile));
  sgemm_naive_kernel<<<grid, block, 0, stream>>>(m, n, k, alpha, a, b, beta, c);
  ROOFLAB_LAUNCH_CHECK();
  // STUDENT END
}

void sgemm_coalesced(int m, int n, int k, float alpha, const float* a, const float* b, float beta, float* c,
                     cudaStream_t stream) {
  // STUDENT BEGIN (lab04.v2.launch)
  const dim3 block(kNaiveTile, kNaiveTile);
  const dim3 grid(ceil_div(n, kNaiveTile), ceil_div(m, kNaiveTile));
  sgemm_coalesced_kernel<<<grid, block, 0, stream>>>(m, n, k, alpha, a, b, beta, c);
  ROOFLAB_LAUNCH_CHECK();
  // STUDENT END
}

void sgemm_smem(int m, int n, int k, float alpha, const float* a, const float* b, float beta, float* c,
                cudaStream_t stream) {
  // STUDENT BEGIN (lab04.v3.launch)
  const dim3 block(kNaiveTile, kNaiveTile);
  const dim3 grid(ceil_div(n, kNaiveTile), ceil_div(m, kNaiveTile));
  sgemm_smem_kernel<kNaiveTile><<<grid, block, 0, stream>>>(m, n, k, alpha, a, b, beta, c);
  ROOFLAB_LAUNCH_CHECK();
  // STUDENT END
}

void sgemm_blocktile(int m, int n, int k, float alpha, const float* a, const float* b, float beta, float* c,
                     cudaStream_t stream) {
  // STUDENT BEGIN (lab04.v4.launch)
  // 128 x 128 x 8 with 8 x 8 per thread: 256 threads, 8 KB of shared memory and 64 FMAs per 16 shared loads.
  // nvcc gives it about 144 registers (rooflab inspect 04): one block per SM; capping it at 128 for two
  // (__launch_bounds__(256, 2)) spills on sm_80. Rung 5's 128-bit loads need fewer registers and fit two.
  const dim3 grid(ceil_div(n, kBlockN), ceil_div(m, kBlockM));
  sgemm_blocktile_kernel<kBlockM, kBlockN, 8, 8, 8><<<grid, kLadderThreads, 0, stream>>>(m, n, k, alpha, a, b, beta, c);
  ROOFLAB_LAUNCH_CHECK();
  // STUDENT END
}

void sgemm_vectorized(int m, int n, int k, float alpha, const float* a, const float* b, float beta, float* c,
                      cudaStream_t stream) {
  // STUDENT BEGIN (lab04.v5.launch)
  // float4 loads need every row of A, B and C to start on 16 bytes: k and n multiples of 4, aligned bases.
  const bool vec = k % 4 == 0 && n % 4 == 0 && aligned16(a) && aligned16(b) && aligned16(c);
  const dim3 grid(ceil_div(n, kBlockN), ceil_div(m, kBlockM));
  sgemm_vectorized_kernel<kBlockM, kBlockN, 8, 8, 8><<<grid, kLadderThreads, 0, stream>>>(m, n, k, alpha, a, b, beta,
                                                                                          c, vec);
  ROOFLAB_LAUNCH_CHECK();
  // STUDENT END
}

void sgemm_warptile(int m, int n, int k, float alpha, const float* a, const float* b, float beta, float* c,
                    cudaStream_t stream) {
  // STUDENT BEGIN (lab04.v6.launch)
  // BK = 16 halves the barriers per FLOP against rung 5; 16.5 KB of shared memory, 64 accumulators a lane.
  const bool vec = k % 4 == 0 && n % 4 == 0 && aligned16(a) && aligned16(b) && aligned16(c);
  const dim3 grid(ceil_div(n, kBlockN), ceil_div(m, kBlockM));
  sgemm_warptile_kernel<kBlockM, kBlockN, 16, 64, 32, 2, 2><<<grid, kLadderThreads, 0, stream>>>(m, n, k, alpha, a, b,
                                                                                                 beta, c, vec);
  ROOFLAB_LAUNCH_CHECK();
  // STUDENT END
}

void hgemm_wmma(int m, int n, int k, float alpha, const __half* a, const __half* b, float beta, float* c,
                cudaStream_t stream) {
  // STUDENT BEGIN (lab04.v7.launch)
  // 128-bit copies of 8 halves need k and n multiples of 8 and 16-byte aligned A and B. The ring of 3 stages
  // takes 3 x (128 x 40 + 32 x 136) halves = 55.5 KB of dynamic shared memory: past the 48 KB default, so the
  // kernel opts in (every GPU from sm_75 on allows a block 64 KB or more).
  constexpr int kBK = 32, kStages = 3;
  const bool vec = k % 8 == 0 && n % 8 == 0 && aligned16(a) && aligned16(b);
  const auto kernel = vec ? hgemm_wmma_kernel<kBlockM, kBlockN, kBK, 64, 32, kStages, true>
                          : hgemm_wmma_kernel<kBlockM, kBlockN, kBK, 64, 32, kStages, false>;
  constexpr int smem = kStages * (kBlockM * (kBK + 8) + kBK * (kBlockN + 8)) * int(sizeof(__half));
  ROOFLAB_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  const dim3 grid(ceil_div(n, kBlockN), ceil_div(m, kBlockM));
  kernel<<<grid, kLadderThreads, smem, stream>>>(m, n, k, alpha, a, b, beta, c);
  ROOFLAB_LAUNCH_CHECK();
  // STUDENT END
}

}  // namespace lab04
