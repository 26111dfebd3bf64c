// Launchers of the CPU backend's self-test kernels (kernels.cu).
#pragma once

#include <rooflab/cuda.hpp>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace emutest {
void reduce(const float* in, float* out, int n, bool buggy);
void tile_read_before_barrier(const float* in, float* out);
void shuffle_reduce(const float* in, float* out, int blocks);
void shuffle_exited_lane(const float* in, float* out);
void divergent_barrier(float* out);
void off_by_one(float* out, int n);
void half_overrun(__half* values, int n);  // writes values[n] too (bug)
void copy(const float* in, float* out, int n);
void copy_with_block(const float* in, float* out, int n, unsigned block);
// Kernels declared __launch_bounds__ for 64 threads: bounded_copy's by a constant, bounded_warps_copy's by a
// template's 2 warps (one block).
void bounded_copy(const float* in, float* out, int n, unsigned block);
void bounded_warps_copy(const float* in, float* out, int n, dim3 block);
// What the runtime says of them: maxThreadsPerBlock (cudaFuncGetAttributes), resident blocks per SM for a block
// of `block` threads, and cudaOccupancyMaxPotentialBlockSize's block size.
struct BoundedAttributes {
  int max_threads, blocks_per_sm, potential_block;
};
BoundedAttributes bounded_copy_attributes(int block);
BoundedAttributes bounded_warps_copy_attributes(int block);
int unbounded_max_threads();  // copy_kernel's maxThreadsPerBlock: no bound, the pretend GPU's 1024
void tiled_sgemm(const float* a, const float* b, float* c, int m, int n, int k);
void atomics(int* count, float* sum, double* max_value, int blocks);
void dynamic_reverse(const float* in, float* out, int blocks, unsigned block);
void index3d(unsigned* out, dim3 grid, dim3 block);
void dynamic_overrun(float* out);
void ballot_count(const int* flags, int* out);
// 2 x (A x B): A is m x k, B is k x n, half, row-major; multiples of 16.
void wmma_gemm(const __half* a, const __half* b, float* c, int m, int n, int k);

// ---- more_kernels.cu ----
// What lane t of a 64-thread block got from each collective (see shuffle_types_kernel).
struct ShuffleOut {
  float f;
  double d;
  long long ll;
  float h, h2_lo, h2_hi, b;
  unsigned sum;
  int max, any, all, seg;
};
void shuffle_types(ShuffleOut* out);
// out[i] = in[i] * scale[i % 4], the scale in __constant__ memory (cudaMemcpyToSymbol).
void constant_scale(const float scale[4], const float* in, float* out, int n);
// The four scales constant_scale set, read back with cudaMemcpyFromSymbolAsync on `stream` (not waited for).
void constant_scale_back_async(float scale[4], cudaStream_t stream);
// C (m x n, row-major, half) = A (m x k, row-major) x B (k x n, stored column-major), half accumulators.
void wmma_half_acc(const __half* a, const __half* b_col_major, __half* c, int m, int n, int k);
// C (m x n, stored column-major, float) = A x B, bf16 inputs, row-major; n a multiple of 32.
void wmma_bf16(const __nv_bfloat16* a, const __nv_bfloat16* b, float* c_col_major, int m, int n, int k);
void mismatched_collectives(int* out);
void write_before_start(float* out, int n);
// out[i] = value for i < n, launched on `stream` (the streams' order: test_emu.cpp, EmuStreams).
void fill_on(float* out, float value, int n, cudaStream_t stream);
void copy_on(const float* in, float* out, int n, cudaStream_t stream);
void copy_mutable_on(float* in, float* out, int n, cudaStream_t stream);  // reads `in` only
}  // namespace emutest
