// Launchers of the rewriter's conformance kernels (conformance_kernels.cu): standard CUDA that must behave
// the same on the CPU backend as on a GPU.
#pragma once

#include <rooflab/cuda.hpp>

#include <cstddef>

namespace conform {
// Launch forms: out[i] = base + i over blocks x threads, launched with 2, 3 and 4 configuration arguments.
void iota_two(int* out, unsigned blocks, unsigned threads, int base);
void iota_three(int* out, unsigned blocks, unsigned threads, int base);
void iota_four(int* out, unsigned blocks, unsigned threads, int base, cudaStream_t stream);
// out[t] = value + t for 32 threads: each thread modifies its own copy of `value`.
void own_copy(int* out, int value);
// x[i] *= s through a qualified kernel name (conform::inner::scale_kernel), twice: as inner:: and ::conform::.
void scale_qualified(float* x, float s, int n);
// out[t] = sizeof(std::pair<float, int>) * 3 + t, through pair_fill_kernel<std::pair<float, int>, 3>.
void pair_fill(float* out);
// y = a x + y with the kernel template's argument deduced from the launch's arguments (float and double).
void axpy(float a, const float* x, float* y, int n);
void axpy(double a, const double* x, double* y, int n);
// out[b * 64 + t] = in[b * 64 + 63 - t] through a templated static __shared__ array (float and double).
void reverse_blocks(const float* in, float* out, int blocks);
void reverse_blocks(const double* in, double* out, int blocks);
// bits[b * n + t] = the bits of in[b * n + n - 1 - t], written as float and read as unsigned through two
// extern __shared__ declarations of one dynamic buffer.
void alias_dynamic(const float* in, unsigned* bits, int blocks, unsigned threads);
// A static __shared__ float[32768 / 4] plus `dynamic_bytes` of dynamic shared memory.
void big_static_plus_dynamic(float* out, std::size_t dynamic_bytes);
void opt_in_big_static(std::size_t dynamic_bytes);

// ---- planted bugs ----
// out[b * 64 + t] = in[(t + 1) % 64] read from shared memory without a barrier; in is the same in every block.
void neighbour_missing_sync(const float* in, float* out, int blocks);
// Thread 63 writes one element past a 64-element static __shared__ array.
void static_overrun(float* out);
// Thread 0 writes element 33 of a 33-float __align__(16) __shared__ array: into its padding.
void static_padding_write(float* out);

// ---- what nvcc's host pass defines ----
// A bit per conditional that the file's code takes: 1 #ifdef __CUDACC__, 2 #if defined(__NVCC__) && defined
// __CUDACC__, 4 #ifndef __CUDACC__, 8 #if __CUDACC_VER_MAJOR__ >= 12, 16 #elif __CUDACC__ after a false #if,
// 32 a spliced #if defined(__CUDACC__) && !defined(__CUDA_ARCH__); and 64 a kernel body's #if __CUDA_ARCH__
// >= 800 (nvcc's device pass for sm_80), 128 a __host__ __device__ function's #ifndef __CUDA_ARCH__ called from
// the host; 256 #ifdef ROOFLAB_EMU, 512 #if !defined(ROOFLAB_EMU) && !ROOFLAB_EMU_TSAN, 1024 #ifndef
// ROOFLAB_EMU_TSAN (the CPU backend's own macros, which nvcc does not define). nvcc gives
// 1+2+8+16+32+64+128+512+1024 = 1787.
int nvcc_host_pass_branches();

// ---- race mode (race_kernels.cu) ----
// A grid-stride loop that strides by blockDim.x: every block writes every element.
void block_stride(float* out, int n, unsigned blocks);
}  // namespace conform
