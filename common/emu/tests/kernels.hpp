// Launchers of the CPU backend's self-test kernels (kernels.cu).
#pragma once

#include <rooflab/cuda.hpp>

#include <cuda_fp16.h>

namespace emutest {
void reduce(const float* in, float* out, int n, bool buggy);
void tile_read_before_barrier(const float* in, float* out);
void shuffle_reduce(const float* in, float* out, int blocks);
void shuffle_exited_lane(const float* in, float* out);
void divergent_barrier(float* out);
void off_by_one(float* out, int n);
void copy(const float* in, float* out, int n);
void copy_with_block(const float* in, float* out, int n, unsigned block);
void tiled_sgemm(const float* a, const float* b, float* c, int m, int n, int k);
void atomics(int* count, float* sum, double* max_value, int blocks);
void dynamic_reverse(const float* in, float* out, int blocks, unsigned block);
void index3d(unsigned* out, dim3 grid, dim3 block);
void dynamic_overrun(float* out);
void ballot_count(const int* flags, int* out);
// 2 x (A x B): A is m x k, B is k x n, half, row-major; multiples of 16.
void wmma_gemm(const __half* a, const __half* b, float* c, int m, int n, int k);
}  // namespace emutest
