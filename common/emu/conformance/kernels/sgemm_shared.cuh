// A shared-memory tiled SGEMM kept in a header with its launcher, as kernel ladders keep one kernel per
// .cuh: C = alpha * A B + beta * C, row-major, any M, N, K (partial tiles are bounds-checked).
#pragma once

#include "common.cuh"

// One BM x BN tile of C per block, one element per thread; A's and B's tiles staged through shared memory.
template <int BM, int BN, int BK>
__global__ void sgemm_shared_kernel(int M, int N, int K, float alpha, const float* A, const float* B, float beta,
                                    float* C) {
  static_assert(BM == BN && BN == BK, "square tiles: one element of each tile per thread");
  __shared__ float As[BM * BK];
  __shared__ float Bs[BK * BN];
  const int row = threadIdx.x / BN, col = threadIdx.x % BN;
  const int c_row = blockIdx.y * BM + row, c_col = blockIdx.x * BN + col;
  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += BK) {
    // Every thread loads one element of each tile; zeros pad the edges of the matrices.
    const int a_col = k0 + col, b_row = k0 + row;
    As[row * BK + col] = (c_row < M && a_col < K) ? A[c_row * K + a_col] : 0.0f;
    Bs[row * BN + col] = (b_row < K && c_col < N) ? B[b_row * N + c_col] : 0.0f;
    __syncthreads();  // the tiles are complete before anyone reads them
    for (int k = 0; k < BK; ++k) acc = fma_acc(acc, As[row * BK + k], Bs[k * BN + col]);
    __syncthreads();  // everyone is done reading before the next tiles overwrite them
  }
  if (c_row < M && c_col < N) C[c_row * N + c_col] = alpha * acc + beta * C[c_row * N + c_col];
}

// The launcher lives in the header too: its <<<>>> is rewritten with the header.
inline void run_sgemm_shared(int M, int N, int K, float alpha, const float* A, const float* B, float beta, float* C) {
  constexpr int TILE = 16;
  dim3 grid(CEIL_DIV(N, TILE), CEIL_DIV(M, TILE));
  sgemm_shared_kernel<TILE, TILE, TILE><<<grid, TILE * TILE>>>(M, N, K, alpha, A, B, beta, C);
}
