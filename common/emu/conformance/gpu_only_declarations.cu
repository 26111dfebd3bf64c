// What CUDA's samples do that a CPU build must follow: declarations that only nvcc's device pass compiles, and
// the host calls around them.
//
// - At file scope, a __device__ helper inside `#if __CUDA_ARCH__ >= 700`, called by a kernel under the same
//   test (nvcc's host pass drops it, its device pass keeps it: the CPU backend compiles both passes' code as one
//   program, so it keeps it too), and a template's specialization for sm_80 and later, which must be the one the
//   kernel calls on the backend's pretend GPU (an sm_80).
// - umin/umax/llmax, CUDA's named integer minimum and maximum; clock() in a kernel, the SM's cycle counter;
//   dynamic shared memory declared as rows (`extern __shared__ float rows[][33]`).
// - Host calls: device flags set and read back, stream priorities, page-locking memory the program allocated
//   (cudaHostRegister), a host function and a callback enqueued behind a stream's work.
// Checked against a host loop; exit 0 when everything matches.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <vector>

#if __CUDA_ARCH__ >= 700
__device__ int doubled_where_supported(int x) { return 2 * x; }
#endif

template <typename T>
__device__ T combine(T a, T b) {
  return a + b;
}
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
// The sm_80 specialization adds a mark, so the check below sees which one ran.
template <>
__device__ int combine<int>(int a, int b) {
  return a + b + 1000;
}
#endif

__global__ void use_them(const int* in, int* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
#if __CUDA_ARCH__ >= 700
  const int capped = static_cast<int>(umin(static_cast<unsigned>(i), 5u)) + static_cast<int>(llmax(0LL, -3LL));
  out[i] = combine(doubled_where_supported(in[i]), capped + static_cast<int>(umax(0u, 0u)));
#else
  out[i] = -1;
#endif
}

// Dynamic shared memory declared as rows of a fixed length, as CUDA's tensor-core samples declare it: a 32 x 32
// tile transposed through rows padded to 33 floats.
__global__ void transpose_tile(const float* in, float* out) {
  extern __shared__ float rows[][33];
  const unsigned x = threadIdx.x, y = threadIdx.y;
  rows[y][x] = in[y * 32 + x];
  __syncthreads();
  out[y * 32 + x] = rows[x][y];
}

// A spin for a number of the SM's cycles, read with clock() as CUDA's samples time a stretch of a kernel: at the
// device's clock rate (cudaDevAttrClockRate, kHz), `ms * rate` cycles last ms milliseconds.
__global__ void spin(long long cycles, long long* spun) {
  const clock_t start = clock();
  clock_t now = start;
  while (now - start < cycles) now = clock();
  *spun = now - start;
}

static void CUDART_CB count_host_function(void* calls) { *static_cast<int*>(calls) += 1; }
static void CUDART_CB count_callback(cudaStream_t, cudaError_t status, void* calls) {
  if (status == cudaSuccess) *static_cast<int*>(calls) += 10;
}

int main() {
  int bad = 0;
  const auto expect = [&](bool ok, const char* what) {
    if (!ok && ++bad <= 5) std::printf("%s: wrong\n", what);
  };
  expect(cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync) == cudaSuccess, "cudaSetDeviceFlags");
  unsigned flags = 0;
  expect(cudaGetDeviceFlags(&flags) == cudaSuccess && (flags & cudaDeviceScheduleBlockingSync) != 0, "cudaGetDeviceFlags");
  int least = 0, greatest = 0;
  expect(cudaDeviceGetStreamPriorityRange(&least, &greatest) == cudaSuccess && greatest <= least,
         "cudaDeviceGetStreamPriorityRange");
  cudaStream_t stream = nullptr;
  expect(cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, greatest) == cudaSuccess, "a stream of high priority");

  const int n = 1000;
  std::vector<int> in(n), out(n, 0);
  for (int i = 0; i < n; ++i) in[i] = i % 37 - 11;
  expect(cudaHostRegister(in.data(), n * sizeof(int), cudaHostRegisterDefault) == cudaSuccess, "cudaHostRegister");
  expect(cudaHostRegister(out.data(), n * sizeof(int), cudaHostRegisterDefault) == cudaSuccess, "cudaHostRegister");
  int *d_in = nullptr, *d_out = nullptr;
  cudaMalloc(&d_in, n * sizeof(int));
  cudaMalloc(&d_out, n * sizeof(int));
  cudaMemcpyAsync(d_in, in.data(), n * sizeof(int), cudaMemcpyHostToDevice, stream);
  use_them<<<(n + 127) / 128, 128, 0, stream>>>(d_in, d_out, n);
  cudaMemcpyAsync(out.data(), d_out, n * sizeof(int), cudaMemcpyDeviceToHost, stream);
  int calls = 0;
  expect(cudaLaunchHostFunc(stream, count_host_function, &calls) == cudaSuccess, "cudaLaunchHostFunc");
  expect(cudaStreamAddCallback(stream, count_callback, &calls, 0) == cudaSuccess, "cudaStreamAddCallback");
  cudaStreamSynchronize(stream);
  expect(calls == 11, "the host function and the callback, each once");
  for (int i = 0; i < n; ++i) {
    const int want = 2 * in[i] + (i < 5 ? i : 5) + 1000;
    if (out[i] != want && ++bad <= 5) std::printf("out[%d] = %d, want %d\n", i, out[i], want);
  }
  std::vector<float> tile(32 * 32), transposed(32 * 32);
  for (int i = 0; i < 32 * 32; ++i) tile[i] = static_cast<float>(i);
  float *d_tile = nullptr, *d_transposed = nullptr;
  cudaMalloc(&d_tile, tile.size() * sizeof(float));
  cudaMalloc(&d_transposed, tile.size() * sizeof(float));
  cudaMemcpy(d_tile, tile.data(), tile.size() * sizeof(float), cudaMemcpyHostToDevice);
  transpose_tile<<<1, dim3(32, 32), 32 * 33 * sizeof(float)>>>(d_tile, d_transposed);
  cudaMemcpy(transposed.data(), d_transposed, tile.size() * sizeof(float), cudaMemcpyDeviceToHost);
  for (int y = 0; y < 32; ++y) {
    for (int x = 0; x < 32; ++x) expect(transposed[y * 32 + x] == tile[x * 32 + y], "a tile through rows[][33]");
  }
  cudaFree(d_tile);
  cudaFree(d_transposed);
  int rate_khz = 0;
  cudaDeviceGetAttribute(&rate_khz, cudaDevAttrClockRate, 0);
  long long* spun = nullptr;
  cudaMalloc(&spun, sizeof(long long));
  const auto t0 = std::chrono::steady_clock::now();
  spin<<<1, 1>>>(2LL * rate_khz, spun);  // 2 ms of cycles
  cudaDeviceSynchronize();
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  expect(ms >= 1.5 && ms < 500.0, "a spin of 2 ms of the SM's cycles, read with clock()");
  cudaFree(spun);
  expect(cudaHostUnregister(in.data()) == cudaSuccess && cudaHostUnregister(out.data()) == cudaSuccess,
         "cudaHostUnregister");
  expect(cudaGetLastError() == cudaSuccess, "no error left");
  cudaStreamDestroy(stream);
  cudaFree(d_in);
  cudaFree(d_out);
  std::printf("gpu-only declarations and host calls: %s\n", bad == 0 ? "all match" : "MISMATCH");
  return bad == 0 ? 0 : 1;
}
