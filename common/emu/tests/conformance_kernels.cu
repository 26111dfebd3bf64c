// Conformance kernels for the CPU backend's source rewriter (common/emu/rewrite): every launch form and
// every shared-memory declaration it rewrites, written as standard CUDA (also compiled by nvcc) and checked
// against host references by test_conformance.cpp under every schedule.
//
//   launches     <<<g, b>>>, <<<g, b, smem>>>, <<<g, b, smem, stream>>>; plain, qualified and template-id
//                kernel names (nested <>); a kernel template whose arguments deduce its template arguments
//   shared       a static __shared__ array per template instantiation, extern __shared__ declarations of
//                two element types aliasing one buffer, the 48 KiB limit and cudaFuncSetAttribute
//   planted bugs a missing __syncthreads hidden by identical data in every block, a static __shared__
//                overrun, a write into a __shared__ array's alignment padding
#include "conformance.hpp"

#include <rooflab/check.hpp>

#include <utility>

namespace conform {

// ---- launch forms ----

__global__ void iota_kernel(int* out, int base) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = base + static_cast<int>(i);
}

// `value` is a by-value parameter: every thread changes its own copy.
__global__ void own_copy_kernel(int* out, int value) {
  value += static_cast<int>(threadIdx.x);
  out[threadIdx.x] = value;
}

namespace inner {
__global__ void scale_kernel(float* x, float s, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) x[i] *= s;
}
}  // namespace inner

template <typename P, int K>
__global__ void pair_fill_kernel(float* out) {
  out[threadIdx.x] = static_cast<float>(sizeof(P) * K + threadIdx.x);
}

// T is deduced from the launch's arguments (nvcc does the same).
template <typename T>
__global__ void axpy_kernel(T a, const T* x, T* y, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) y[i] = a * x[i] + y[i];
}

// ---- shared memory ----

// One __shared__ array per instantiation: T[64] is 256 bytes for float and 512 for double.
template <typename T>
__global__ void reverse_kernel(const T* in, T* out) {
  __shared__ T tile[64];
  const unsigned t = threadIdx.x;
  tile[t] = in[blockIdx.x * 64 + t];
  __syncthreads();
  out[blockIdx.x * 64 + t] = tile[63 - t];
}

// Two extern __shared__ declarations alias the launch's one dynamic buffer, as in CUDA.
__global__ void alias_kernel(const float* in, unsigned* bits) {
  extern __shared__ float as_float[];
  extern __shared__ __align__(16) unsigned as_bits[];
  const unsigned t = threadIdx.x, n = blockDim.x;
  as_float[t] = in[blockIdx.x * n + t];
  __syncthreads();
  bits[blockIdx.x * n + t] = as_bits[n - 1 - t];
}

// 32 KiB of static shared memory: with more than 16 KiB of dynamic memory it needs cudaFuncSetAttribute.
__global__ void big_static_kernel(float* out) {
  __shared__ float big[8192];
  extern __shared__ float dynamic[];
  big[threadIdx.x] = 1.0f;
  dynamic[threadIdx.x] = 2.0f;
  __syncthreads();
  if (out != nullptr) out[threadIdx.x] = big[threadIdx.x] + dynamic[threadIdx.x];
}

// ---- planted bugs ----

// Each thread reads its neighbour's element without a barrier in between. The data is the same in every
// block, so storage that kept the previous block's values would hide the bug in every block but the first.
__global__ void neighbour_missing_sync_kernel(const float* in, float* out) {
  __shared__ float s[64];
  const unsigned t = threadIdx.x;
  s[t] = in[t];
  out[blockIdx.x * 64 + t] = s[(t + 1) % 64];  // (bug: needs __syncthreads before this read)
}

// One element past the end: s[64] by thread 63.
__global__ void static_overrun_kernel(float* out) {
  __shared__ float s[64];
  s[threadIdx.x + 1] = 1.0f;  // (bug: should be s[threadIdx.x])
  out[threadIdx.x] = s[threadIdx.x];
}

// 33 floats aligned to 16 bytes leave 12 bytes of padding before the guard page: element 33 lands there.
__global__ void static_padding_write_kernel(float* out) {
  __shared__ __align__(16) float s[33];
  s[threadIdx.x] = 1.0f;
  if (threadIdx.x == 0) s[blockDim.x] = 2.0f;  // (bug: launched with 33 threads, s holds 33 floats)
  out[threadIdx.x] = s[threadIdx.x];
}

// ---- launchers ----

void iota_two(int* out, unsigned blocks, unsigned threads, int base) {
  iota_kernel<<<blocks, threads>>>(out, base);
  ROOFLAB_LAUNCH_CHECK();
}
void iota_three(int* out, unsigned blocks, unsigned threads, int base) {
  iota_kernel<<<dim3(blocks), dim3(threads), 0>>>(out, base);
  ROOFLAB_LAUNCH_CHECK();
}
void iota_four(int* out, unsigned blocks, unsigned threads, int base, cudaStream_t stream) {
  // A launch over several lines, comments inside: the lines after it keep their numbers.
  iota_kernel<<<blocks,    // grid
                threads,   // block
                0,         /* no dynamic
                              shared memory */
                stream>>>(out,
                          base);
  static_assert(__LINE__ == 127, "the rewriter must keep every line where it was");
  ROOFLAB_LAUNCH_CHECK();
}
void own_copy(int* out, int value) {
  own_copy_kernel<<<1, 32>>>(out, value);
  ROOFLAB_LAUNCH_CHECK();
}
void pair_fill(float* out) {
  pair_fill_kernel<std::pair<float, int>, 3><<<1, 32>>>(out);
  ROOFLAB_LAUNCH_CHECK();
}
void axpy(float a, const float* x, float* y, int n) {
  axpy_kernel<<<(n + 127) / 128, 128>>>(a, x, y, n);
  ROOFLAB_LAUNCH_CHECK();
}
void axpy(double a, const double* x, double* y, int n) {
  axpy_kernel<<<(n + 127) / 128, 128>>>(a, x, y, n);
  ROOFLAB_LAUNCH_CHECK();
}
void reverse_blocks(const float* in, float* out, int blocks) {
  reverse_kernel<<<blocks, 64>>>(in, out);
  ROOFLAB_LAUNCH_CHECK();
}
void reverse_blocks(const double* in, double* out, int blocks) {
  reverse_kernel<double><<<blocks, 64>>>(in, out);
  ROOFLAB_LAUNCH_CHECK();
}
void alias_dynamic(const float* in, unsigned* bits, int blocks, unsigned threads) {
  alias_kernel<<<blocks, threads, threads * sizeof(float)>>>(in, bits);
  ROOFLAB_LAUNCH_CHECK();
}
void big_static_plus_dynamic(float* out, std::size_t dynamic_bytes) {
  big_static_kernel<<<2, 64, dynamic_bytes>>>(out);
  ROOFLAB_LAUNCH_CHECK();
}
void opt_in_big_static(std::size_t dynamic_bytes) {
  ROOFLAB_CUDA_CHECK(cudaFuncSetAttribute(big_static_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          static_cast<int>(dynamic_bytes)));
}
void neighbour_missing_sync(const float* in, float* out, int blocks) {
  neighbour_missing_sync_kernel<<<blocks, 64>>>(in, out);
  ROOFLAB_LAUNCH_CHECK();
}
void static_overrun(float* out) {
  static_overrun_kernel<<<1, 64>>>(out);
  ROOFLAB_LAUNCH_CHECK();
}
void static_padding_write(float* out) {
  static_padding_write_kernel<<<1, 33>>>(out);
  ROOFLAB_LAUNCH_CHECK();
}

}  // namespace conform

// Qualified names from outside the namespace, the global-namespace form included.
namespace conform {
void scale_qualified(float* x, float s, int n) {
  inner::scale_kernel<<<(n + 63) / 64, 64>>>(x, s, n);
  ROOFLAB_LAUNCH_CHECK();
  ::conform::inner::scale_kernel<<<(n + 63) / 64, 64>>>(x, s, n);
  ROOFLAB_LAUNCH_CHECK();
}
}  // namespace conform

// ---- what nvcc's host pass defines: the CPU backend takes the same branches of this file's own conditionals
// (the rewriter replaces the macros in them), and the lines after a spliced directive keep their numbers ----
namespace conform {
// In a kernel's body nvcc's device pass defines __CUDA_ARCH__; a __host__ __device__ function called from
// host code is the host pass's.
__global__ void arch_branch_kernel(int* out) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  *out = 64;
#else
  *out = 0;
#endif
}
__host__ __device__ int host_or_device() {
#ifdef __CUDA_ARCH__
  return 0;
#else
  return 128;
#endif
}
int arch_branches() {
  int* d = nullptr;
  ROOFLAB_CUDA_CHECK(cudaMalloc(&d, sizeof(int)));
  arch_branch_kernel<<<1, 1>>>(d);
  ROOFLAB_LAUNCH_CHECK();
  int kernel = 0;
  ROOFLAB_CUDA_CHECK(cudaMemcpy(&kernel, d, sizeof(int), cudaMemcpyDeviceToHost));
  ROOFLAB_CUDA_CHECK(cudaFree(d));
  return kernel | host_or_device();
}

int nvcc_host_pass_branches() {
  int taken = 0;
#ifdef __CUDACC__
  taken |= 1;
#endif
#if defined(__NVCC__) && defined __CUDACC__
  taken |= 2;
#endif
#ifndef __CUDACC__
  taken |= 4;
#endif
#if __CUDACC_VER_MAJOR__ >= 12
  taken |= 8;
#endif
#if 0
#elif __CUDACC__  // a comment after it
  taken |= 16;
#endif
  [[maybe_unused]] constexpr int before = __LINE__;  // unused in nvcc's device pass
#if defined(__CUDACC__) \
    && !defined(__CUDA_ARCH__)
  constexpr int after = __LINE__;
  static_assert(after == before + 3, "a rewritten directive keeps the lines after it where they were");
  taken |= 32;
#endif
  // The CPU backend's own macros: nvcc defines none of them, so neither does this file's view of them.
#ifdef ROOFLAB_EMU
  taken |= 256;
#endif
#if !defined(ROOFLAB_EMU) && !ROOFLAB_EMU_TSAN
  taken |= 512;
#endif
#ifndef ROOFLAB_EMU_TSAN
  taken |= 1024;
#endif
  return taken | arch_branches();
}
}  // namespace conform
