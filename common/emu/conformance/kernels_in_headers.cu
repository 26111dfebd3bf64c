// Kernels kept in headers, as kernel ladders and llm.c-style repositories keep them: a tiled SGEMM and its
// launcher in kernels/sgemm_shared.cuh (a quoted include, which includes kernels/common.cuh in turn), a
// block reduction in <conformance/block_reduce.cuh> and a float4 kernel template in
// <conformance/vector_ops.cuh> (found through the target's include directory). Each result is checked
// against a plain host loop; exit status 0 when all match. Built unchanged by rooflab_emu_add_cu: the CPU
// backend rewrites the headers' __shared__ declarations and launches into the build tree.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "kernels/sgemm_shared.cuh"
#include <conformance/block_reduce.cuh>
#include <conformance/vector_ops.cuh>

#define CHECK_CUDA(call)                                                                                    \
  do {                                                                                                      \
    cudaError_t err_ = (call);                                                                              \
    if (err_ != cudaSuccess) {                                                                              \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(err_));         \
      std::exit(2);                                                                                         \
    }                                                                                                       \
  } while (0)

static std::vector<float> random_vector(std::size_t n, unsigned seed) {
  std::vector<float> v(n);
  for (auto& x : v) {
    seed = seed * 1664525u + 1013904223u;
    x = static_cast<float>(seed >> 8) / 16777216.0f - 0.5f;
  }
  return v;
}

static float* to_device(const std::vector<float>& h) {
  float* d = nullptr;
  CHECK_CUDA(cudaMalloc(&d, h.size() * sizeof(float)));
  CHECK_CUDA(cudaMemcpy(d, h.data(), h.size() * sizeof(float), cudaMemcpyHostToDevice));
  return d;
}

static std::vector<float> to_host(const float* d, std::size_t n) {
  std::vector<float> h(n);
  CHECK_CUDA(cudaMemcpy(h.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost));
  return h;
}

// Counts the elements outside |got - want| <= atol + rtol |want| and prints the first few.
static int mismatches(const char* what, const std::vector<float>& got, const std::vector<double>& want, double atol) {
  int bad = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (!(std::fabs(got[i] - want[i]) <= atol + 1e-5 * std::fabs(want[i]))) {
      if (++bad <= 5) std::printf("%s: element %zu is %.7g, want %.7g\n", what, i, got[i], want[i]);
    }
  }
  std::printf("%s: %s\n", what, bad == 0 ? "matches the host reference" : "MISMATCH");
  return bad;
}

static int check_sgemm() {
  const int M = 37, N = 45, K = 29;  // none a multiple of the 16-wide tiles
  const auto A = random_vector(M * K, 1), B = random_vector(K * N, 2), C0 = random_vector(M * N, 3);
  const float alpha = 1.5f, beta = -0.5f;
  float *dA = to_device(A), *dB = to_device(B), *dC = to_device(C0);
  run_sgemm_shared(M, N, K, alpha, dA, dB, beta, dC);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaDeviceSynchronize());
  std::vector<double> want(M * N);
  for (int i = 0; i < M; ++i) {
    for (int j = 0; j < N; ++j) {
      double acc = 0;
      for (int k = 0; k < K; ++k) acc += double(A[i * K + k]) * B[k * N + j];
      want[i * N + j] = alpha * acc + beta * C0[i * N + j];
    }
  }
  const int bad = mismatches("sgemm_shared (kernels/sgemm_shared.cuh)", to_host(dC, M * N), want, 1e-5);
  CHECK_CUDA(cudaFree(dA));
  CHECK_CUDA(cudaFree(dB));
  CHECK_CUDA(cudaFree(dC));
  return bad;
}

static int check_row_sums() {
  const int rows = 9, cols = 1000;
  const auto x = random_vector(rows * cols, 4);
  float* dx = to_device(x);
  float* dsums = to_device(std::vector<float>(rows, 0.0f));
  row_sum_kernel<<<rows, 160>>>(dx, dsums, cols);  // 5 warps: block_sum's second stage sums a partial warp
  CHECK_CUDA(cudaGetLastError());
  std::vector<double> want(rows, 0.0);
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) want[r] += x[r * cols + c];
  }
  const int bad = mismatches("row_sum (<conformance/block_reduce.cuh>)", to_host(dsums, rows), want, 1e-4);
  CHECK_CUDA(cudaFree(dx));
  CHECK_CUDA(cudaFree(dsums));
  return bad;
}

static int check_scale4() {
  const int n = 4 * 250 + 3;  // a tail of three elements
  const auto x = random_vector(n, 5);
  float* dx = to_device(x);
  float* dy = to_device(std::vector<float>(n, 0.0f));
  const int threads = 128, blocks = (n / 4 + 1 + threads - 1) / threads;
  scale4_kernel<<<blocks, threads>>>(dx, dy, 3.0f, n);  // T deduced from the arguments
  CHECK_CUDA(cudaGetLastError());
  std::vector<double> want(n);
  for (int i = 0; i < n; ++i) want[i] = 3.0f * x[i];
  const int bad = mismatches("scale4 (a kernel template in a header)", to_host(dy, n), want, 0);
  CHECK_CUDA(cudaFree(dx));
  CHECK_CUDA(cudaFree(dy));
  return bad;
}

int main() {
  const int bad = check_sgemm() + check_row_sums() + check_scale4();
  return bad == 0 ? 0 : 1;
}
