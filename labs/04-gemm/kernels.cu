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
  // TODO(lab04.v1): one thread per element of C, row = blockIdx.x * blockDim.x + threadIdx.x and col from the
  //   y dimension; skip threads outside C; acc = sum over p of A[row][p] * B[p][col]; then store_c(...). About
  //   6 lines. Handout: "The ladder", rung 1.
  rooflab::unused(M, N, K, alpha, A, B, beta, C);  // delete this line when the kernel is written
  // STUDENT END
}

// ---- 2: coalesced ----

__global__ void sgemm_coalesced_kernel(int M, int N, int K, float alpha, const float* __restrict__ A,
                                       const float* __restrict__ B, float beta, float* __restrict__ C) {
  // STUDENT BEGIN (lab04.v2)
  // TODO(lab04.v2): rung 1 with the two indices swapped, so that threadIdx.x walks along a row of C. About 6
  //   lines. Handout: "Coalescing".
  rooflab::unused(M, N, K, alpha, A, B, beta, C);  // delete this line when the kernel is written
  // STUDENT END
}

// ---- 3: shared-memory tiles ----

template <int TILE>
__global__ void sgemm_smem_kernel(int M, int N, int K, float alpha, const float* __restrict__ A,
                                  const float* __restrict__ B, float beta, float* __restrict__ C) {
  // STUDENT BEGIN (lab04.v3)
  // TODO(lab04.v3): per step of K, stage a TILE x TILE tile of A and of B in __shared__ arrays (0 outside the
  //   matrices: that handles every tail), __syncthreads(), accumulate over the tile, __syncthreads() again.
  //   Both barriers are needed: say why in a comment. About 14 lines. Handout: "Shared-memory tiling".
  rooflab::unused(M, N, K, alpha, A, B, beta, C);  // delete this line when the kernel is written
  // STUDENT END
}

// ---- 4: 2D register blocking ----

template <int BM, int BN, int BK, int TM, int TN>
__global__ void __launch_bounds__((BM / TM) * (BN / TN), 2)
    sgemm_blocktile_kernel(int M, int N, int K, float alpha, const float* __restrict__ A,
                           const float* __restrict__ B, float beta, float* __restrict__ C) {
  // STUDENT BEGIN (lab04.v4)
  // TODO(lab04.v4): a BM x BN tile of C per block, a TM x TN patch per thread in a register array. Per step
  //   of BK: all threads load As[BM][BK] and Bs[BK][BN] cooperatively (zeros outside; elements tid + v *
  //   THREADS for v < BM * BK / THREADS, a compile-time count, all loaded into registers before any is
  //   stored), barrier, then for each p load TM values of A and TN of B into registers and do TM x TN FMAs;
  //   barrier. Store with bounds checks, a row of the patch at a time (its address computed once:
  //   __launch_bounds__ asks for two blocks per SM, 128 registers a thread, and 64 accumulators leave little
  //   room). About 50 lines. Handout: "Register blocking".
  rooflab::unused(M, N, K, alpha, A, B, beta, C);  // delete this line when the kernel is written
  // STUDENT END
}

// ---- 5: vectorized loads, A transposed ----

// STUDENT BEGIN (lab04.v5.loads)
// TODO(lab04.v5.loads): helpers for rungs 5 and 6 (optional, but both rungs load the same tiles): load the
//   A tile with float4 loads and store it transposed in shared memory, the B tile with float4 loads, and
//   store C four elements at a time; when `vec` is false (K or N not a multiple of 4, unaligned pointers)
//   load element by element. Rung 6 wants the loads (into registers) and the shared stores as two functions.
//   About 90 lines. Handout: "128-bit loads and bank conflicts".
// STUDENT END

template <int BM, int BN, int BK, int TM, int TN>
__global__ void __launch_bounds__((BM / TM) * (BN / TN))
    sgemm_vectorized_kernel(int M, int N, int K, float alpha, const float* __restrict__ A,
                            const float* __restrict__ B, float beta, float* __restrict__ C, bool vec) {
  // STUDENT BEGIN (lab04.v5)
  // TODO(lab04.v5): rung 4 with float4 global loads (when vec), A transposed in shared memory so a thread's
  //   TM values of A are one 128-bit shared load, and a thread's columns and rows placed so that no two
  //   lanes of a quarter-warp hit the same bank. Declare the shared arrays as float4 (16-byte alignment).
  //   About 50 lines. Handout: "128-bit loads and bank conflicts".
  rooflab::unused(M, N, K, alpha, A, B, beta, C, vec);  // delete this line when the kernel is written
  // STUDENT END
}

// ---- 6: warp tiling ----

template <int BM, int BN, int BK, int WM, int WN, int WMITER, int WNITER>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32, 2)
    sgemm_warptile_kernel(int M, int N, int K, float alpha, const float* __restrict__ A,
                          const float* __restrict__ B, float beta, float* __restrict__ C, bool vec) {
  // STUDENT BEGIN (lab04.v6)
  // TODO(lab04.v6): split the block tile among the warps (WM x WN each); within a warp, WMITER x WNITER steps
  //   of (WM / WMITER) x (WN / WNITER), lanes 8 x 4 with a 4 x 4 micro-tile each. Reuse rung 5's loads, split
  //   in two: the next step's global loads into registers before this step's math, their shared stores after
  //   it. About 60 lines. Handout: "Warp tiling".
  rooflab::unused(M, N, K, alpha, A, B, beta, C, vec);  // delete this line when the kernel is written
  // STUDENT END
}

// ---- 7: tensor cores (WMMA) ----

template <int BM, int BN, int BK, int WM, int WN, int STAGES, bool VEC>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32, 2)
    hgemm_wmma_kernel(int M, int N, int K, float alpha, const __half* __restrict__ A, const __half* __restrict__ B,
                      float beta, float* __restrict__ C) {
  // STUDENT BEGIN (lab04.v7)
  // TODO(lab04.v7): a ring of STAGES buffers in dynamic shared memory (extern __shared__, 32-byte aligned),
  //   each BM x BK of A and BK x BN of B in FP16, rows padded by 8 halves. With VEC each 16-byte piece is one
  //   __pipeline_memcpy_async (zero-filled outside the matrix); without, element by element with zeros
  //   outside. Start with steps 0 .. STAGES - 2 in flight, one __pipeline_commit per step; then at step t:
  //   __pipeline_wait_prior(STAGES - 2), one barrier, refill the buffer step t - 1 used with step
  //   t + STAGES - 1, commit, and compute. Per 16-wide step of K load matrix_a / matrix_b fragments
  //   (row_major, ldm = the padded row length) and mma_sync into FP32 accumulator fragments, WM / 16 x
  //   WN / 16 per warp. Epilogue, after a barrier: store_matrix_sync each accumulator to a per-warp 16 x 16
  //   float tile in the ring's memory, __syncwarp(), then bounds-checked store_c. About 110 lines. Handout:
  //   "Tensor cores".
  rooflab::unused(M, N, K, alpha, A, B, beta, C);  // delete this line when the kernel is written
  // STUDENT END
}

// ---- launchers ----

void sgemm_naive(int m, int n, int k, float alpha, const float* a, const float* b, float beta, float* c,
                 cudaStream_t stream) {
  // STUDENT BEGIN (lab04.v1.launch)
  // TODO(lab04.v1.launch): a 2D block of kNaiveTile x kNaiveTile threads, the grid covering rows in x and columns in y. Three lines, then ROOFLAB_LAUNCH_CHECK().
  ROOFLAB_TODO("lab04.v1.launch", m, n, k, alpha, a, b, beta, c, stream);
  // STUDENT END
}

void sgemm_coalesced(int m, int n, int k, float alpha, const float* a, const float* b, float beta, float* c,
                     cudaStream_t stream) {
  // STUDENT BEGIN (lab04.v2.launch)
  // TODO(lab04.v2.launch): the grid covering columns in x and rows in y. Three lines, then ROOFLAB_LAUNCH_CHECK().
  ROOFLAB_TODO("lab04.v2.launch", m, n, k, alpha, a, b, beta, c, stream);
  // STUDENT END
}

void sgemm_smem(int m, int n, int k, float alpha, const float* a, const float* b, float beta, float* c,
                cudaStream_t stream) {
  // STUDENT BEGIN (lab04.v3.launch)
  // TODO(lab04.v3.launch): as rung 2, with sgemm_smem_kernel<kNaiveTile>. Three lines, then ROOFLAB_LAUNCH_CHECK().
  ROOFLAB_TODO("lab04.v3.launch", m, n, k, alpha, a, b, beta, c, stream);
  // STUDENT END
}

void sgemm_blocktile(int m, int n, int k, float alpha, const float* a, const float* b, float beta, float* c,
                     cudaStream_t stream) {
  // STUDENT BEGIN (lab04.v4.launch)
  // TODO(lab04.v4.launch): sgemm_blocktile_kernel<kBlockM, kBlockN, 8, 8, 8> on a grid of BN x BM tiles, kLadderThreads threads. Two lines, then ROOFLAB_LAUNCH_CHECK().
  ROOFLAB_TODO("lab04.v4.launch", m, n, k, alpha, a, b, beta, c, stream);
  // STUDENT END
}

void sgemm_vectorized(int m, int n, int k, float alpha, const float* a, const float* b, float beta, float* c,
                      cudaStream_t stream) {
  // STUDENT BEGIN (lab04.v5.launch)
  // TODO(lab04.v5.launch): decide `vec` (k, n multiples of 4 and 16-byte aligned pointers), then launch. Three lines, then ROOFLAB_LAUNCH_CHECK().
  ROOFLAB_TODO("lab04.v5.launch", m, n, k, alpha, a, b, beta, c, stream);
  // STUDENT END
}

void sgemm_warptile(int m, int n, int k, float alpha, const float* a, const float* b, float beta, float* c,
                    cudaStream_t stream) {
  // STUDENT BEGIN (lab04.v6.launch)
  // TODO(lab04.v6.launch): as rung 5, with sgemm_warptile_kernel<kBlockM, kBlockN, 16, 64, 32, 2, 2>. Three lines, then ROOFLAB_LAUNCH_CHECK().
  ROOFLAB_TODO("lab04.v6.launch", m, n, k, alpha, a, b, beta, c, stream);
  // STUDENT END
}

void hgemm_wmma(int m, int n, int k, float alpha, const __half* a, const __half* b, float beta, float* c,
                cudaStream_t stream) {
  // STUDENT BEGIN (lab04.v7.launch)
  // TODO(lab04.v7.launch): VEC needs k, n multiples of 8 and aligned A, B; hgemm_wmma_kernel<kBlockM, kBlockN, 32, 64, 32, 3, VEC>
  //   with 3 x (128 x 40 + 32 x 136) halves of dynamic shared memory, allowed first with cudaFuncSetAttribute(kernel,
  //   cudaFuncAttributeMaxDynamicSharedMemorySize, bytes). About eight lines, then ROOFLAB_LAUNCH_CHECK().
  ROOFLAB_TODO("lab04.v7.launch", m, n, k, alpha, a, b, beta, c, stream);
  // STUDENT END
}

}  // namespace lab04
