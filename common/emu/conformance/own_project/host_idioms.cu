// Host code as public repositories write it, each once a gap of the CPU backend, built the way a project of
// one's own builds it (own_project/CMakeLists.txt): a host function with its kernel's name that launches it,
// NULL and 0 passed for pointer parameters, cudaMemcpyToSymbol / FromSymbol with scalar and struct __device__
// and __constant__ variables, pitched memory (cudaMallocPitch, cudaMemcpy2D, cudaMemset2D), CCCL's cuda::std,
// the C library (printf, clock, malloc, memset) used without including it, as nvcc includes it, clock64() and
// __nanosleep() in a kernel. runner.cu calls these and checks every result. __trap() stops a kernel (--trap).
#include <cuda_runtime.h>
#include <cuda/std/array>

#include "own_project.cuh"

__device__ float g_scale;
__constant__ int c_offset;
__constant__ Affine c_affine;

// x[i] *= g_scale, and a host function of the same name that launches it `repeats` times.
__global__ void scale(float* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= g_scale;
}
void scale(float* x, int n, int repeats) {
  for (int r = 0; r < repeats; ++r) scale<<<(n + 127) / 128, 128>>>(x, n);
}

// y[i] = a x[i] + bias[i] + c_offset, the bias optional (a null pointer: none).
__global__ void axpy_bias(const float* bias, float* y, const float* x, int n, float a) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + (bias != NULL ? bias[i] : 0.0f) + static_cast<float>(c_offset);
}
void axpy_without_bias(float* y, const float* x, int n, float a, bool write_null) {
  if (write_null) {
    axpy_bias<<<(n + 127) / 128, 128>>>(NULL, y, x, n, a);
  } else {
    axpy_bias<<<(n + 127) / 128, 128>>>(0, y, x, n, a);
  }
}

// m[r][c] = c_affine.mul * m[r][c] + c_affine.add + r, over a pitched matrix.
__global__ void affine_rows(float* m, size_t pitch, int width, int height) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x, r = blockIdx.y;
  if (c >= width || r >= height) return;
  float* row = reinterpret_cast<float*>(reinterpret_cast<char*>(m) + r * pitch);
  row[c] = c_affine.mul * row[c] + c_affine.add + static_cast<float>(r);
}
void affine_pitched(float* m, size_t pitch, int width, int height) {
  affine_rows<<<dim3((width + 63) / 64, height), 64>>>(m, pitch, width, height);
}

// out[i] = a table kept in a cuda::std::array, times i.
__global__ void cccl_table(float* out, int n) {
  const cuda::std::array<float, 4> table{1.0f, 0.5f, 0.25f, 0.125f};
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = table[i % table.size()] * static_cast<float>(i);
}
void cccl_values(float* out, int n) { cccl_table<<<(n + 63) / 64, 64>>>(out, n); }

__global__ void trap_kernel(int* out) {
  if (threadIdx.x == 3) __trap();
  out[threadIdx.x] = 1;
}
void trap_launch(int* out) { trap_kernel<<<1, 32>>>(out); }

// How long each thread slept, in clock64() ticks (the SM's cycles, on a GPU and on the CPU backend): as public
// code times a stretch of a kernel (cuda-samples' clock).
__global__ void slept_ticks(long long* out) {
  const long long t0 = clock64();
  __nanosleep(2000);
  out[threadIdx.x] = clock64() - t0;
}
void sleep_ticks(long long* out) { slept_ticks<<<1, 32>>>(out); }

void set_symbols(float scale_by, int offset, Affine affine) {
  cudaMemcpyToSymbol(g_scale, &scale_by, sizeof(float));
  cudaMemcpyToSymbol(c_offset, &offset, sizeof offset, 0, cudaMemcpyHostToDevice);
  cudaMemcpyToSymbol(c_affine, &affine, sizeof affine);
}
Affine read_affine() {
  Affine a{0.0f, 0.0f};
  cudaMemcpyFromSymbol(&a, c_affine, sizeof a);
  return a;
}
