// Lab 04: GEMM - the kernels' launchers and the one registry of the ladder.  PROVIDED: do not modify.
//
// Every launcher computes C = alpha A B + beta C with A (m x k), B (k x n) and C (m x n) row-major and dense
// (leading dimensions k, n and n), for any m, n, k >= 1, asynchronously on `stream`. When beta is 0, C is
// not read (the BLAS rule: it may hold anything, NaN included). A launcher may take a fast path that needs
// alignment (n and k multiples of 4 or 8, 16-byte aligned pointers) only if it handles every other shape too.
#pragma once

#include "lab.hpp"

#include <rooflab/cuda.hpp>

#include <cuda_fp16.h>

#include <string_view>

namespace lab04 {

// The FP32 SIMT ladder, one idea per rung (handout: "The ladder").
void sgemm_naive(int m, int n, int k, float alpha, const float* a, const float* b, float beta, float* c,
                 cudaStream_t stream);
void sgemm_coalesced(int m, int n, int k, float alpha, const float* a, const float* b, float beta, float* c,
                     cudaStream_t stream);
void sgemm_smem(int m, int n, int k, float alpha, const float* a, const float* b, float beta, float* c,
                cudaStream_t stream);
void sgemm_blocktile(int m, int n, int k, float alpha, const float* a, const float* b, float beta, float* c,
                     cudaStream_t stream);
void sgemm_vectorized(int m, int n, int k, float alpha, const float* a, const float* b, float beta, float* c,
                      cudaStream_t stream);
void sgemm_warptile(int m, int n, int k, float alpha, const float* a, const float* b, float beta, float* c,
                    cudaStream_t stream);

// Tensor cores: FP16 A and B, FP32 accumulation and FP32 C (rung 7).
void hgemm_wmma(int m, int n, int k, float alpha, const __half* a, const __half* b, float beta, float* c,
                cudaStream_t stream);

using SgemmLauncher = void (*)(int, int, int, float, const float*, const float*, float, float*, cudaStream_t);

// The FP32 rungs as the tests, the perf tests and the plot iterate over them. `registry` is the variant of
// lab.hpp's kKernels (rooflab inspect) that the rung launches; `quantity` its threshold in thresholds.json
// ("" for the rungs graded only as notes).
struct Rung {
  std::string_view id;
  std::string_view idea;
  std::string_view registry;
  std::string_view quantity;
  SgemmLauncher launch;
};
inline constexpr Rung kSimtRungs[] = {
    {"naive", "one thread per C element; a warp walks down a column of A", "1 naive", "", sgemm_naive},
    {"coalesced", "a warp walks along a row of C: B and C accesses coalesce", "2 coalesced", "", sgemm_coalesced},
    {"smem", "32 x 32 tiles of A and B staged in shared memory", "3 smem tiled", "smem_tiled", sgemm_smem},
    {"blocktile", "128 x 128 block tile, 8 x 8 outputs per thread in registers", "4 2D blocktile", "blocktile",
     sgemm_blocktile},
    {"vectorized", "float4 loads, A transposed in shared memory, conflict-free reads", "5 vectorized", "vectorized",
     sgemm_vectorized},
    {"warptile", "each warp owns a 64 x 32 sub-tile: shared reads line up per warp", "6 warptile", "warptile",
     sgemm_warptile},
};

}  // namespace lab04
