// C++17 user code, as llm.c builds it: the target asks for C++17 (CUDA_STANDARD 17) and the file defines
// its own lerp, which must not meet C++20's std::lerp. Checked against a host loop; exit 0 when it matches.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <vector>

static_assert(__cplusplus == 201703L, "the CPU backend must compile this file as C++17, as the target asks");

// Named as llm.c names its own: a global lerp, found by unqualified calls.
__host__ __device__ inline float lerp(float start, float end, float weight) { return fma(weight, end, fma(-weight, start, start)); }

// An exponential moving average step, m = lerp(g, m, beta) elementwise.
__global__ void ema_kernel(float* m, const float* g, float beta, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) m[i] = lerp(g[i], m[i], beta);
}

int main() {
  const int n = 777;
  std::vector<float> m(n), g(n);
  for (int i = 0; i < n; ++i) {
    m[i] = 0.01f * i;
    g[i] = 1.0f - 0.003f * i;
  }
  float *dm = nullptr, *dg = nullptr;
  cudaMalloc(&dm, n * sizeof(float));
  cudaMalloc(&dg, n * sizeof(float));
  cudaMemcpy(dm, m.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemcpy(dg, g.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  ema_kernel<<<(n + 127) / 128, 128>>>(dm, dg, 0.9f, n);
  std::vector<float> got(n);
  cudaMemcpy(got.data(), dm, n * sizeof(float), cudaMemcpyDeviceToHost);
  int bad = cudaGetLastError() == cudaSuccess ? 0 : 1;
  for (int i = 0; i < n; ++i) {
    const double want = 0.9 * m[i] + 0.1 * g[i];
    if (std::fabs(got[i] - want) > 1e-5 && ++bad <= 5) std::printf("m[%d] is %g, want %g\n", i, got[i], want);
  }
  std::printf("C++17 file with its own lerp: %s\n", bad == 0 ? "matches the host reference" : "MISMATCH");
  cudaFree(dm);
  cudaFree(dg);
  return bad == 0 ? 0 : 1;
}
