// cuBLASLt matmuls as training code calls them: an FP32 linear layer with bias and GELU fused into the
// epilogue, laid out column-major with a transposed weight (llm.c's matmul_forward trick), and a BF16
// row-major product with a bias. A heuristic picks the algorithm; each result is checked against a host
// loop in double. Exit status 0 when both match.
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK_CUBLAS(call)                                                                               \
  do {                                                                                                   \
    const cublasStatus_t s_ = (call);                                                                    \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                                                   \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cublasLtGetStatusString(s_)); \
      std::exit(2);                                                                                      \
    }                                                                                                    \
  } while (0)

static std::vector<float> random_vector(std::size_t n, unsigned seed) {
  std::vector<float> v(n);
  for (auto& x : v) {
    seed = seed * 1103515245u + 12345u;
    x = static_cast<float>((seed >> 9) % 2001) / 1000.0f - 1.0f;
  }
  return v;
}

template <typename T>
static T* upload(const std::vector<T>& h) {
  T* d = nullptr;
  cudaMalloc(&d, h.size() * sizeof(T));
  cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice);
  return d;
}

static double gelu(double x) { return 0.5 * x * (1.0 + std::tanh(0.7978845608 * (x + 0.044715 * x * x * x))); }

// Runs D = epilogue(A op B) with the first algorithm the heuristic offers.
static void matmul(cublasLtHandle_t lt, cublasLtMatmulDesc_t op, const void* A, cublasLtMatrixLayout_t a,
                   const void* B, cublasLtMatrixLayout_t b, void* D, cublasLtMatrixLayout_t d) {
  cublasLtMatmulPreference_t pref;
  CHECK_CUBLAS(cublasLtMatmulPreferenceCreate(&pref));
  const size_t workspace = 1 << 20;
  CHECK_CUBLAS(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                                                    sizeof workspace));
  cublasLtMatmulHeuristicResult_t heuristic;
  int found = 0;
  CHECK_CUBLAS(cublasLtMatmulAlgoGetHeuristic(lt, op, a, b, d, d, pref, 1, &heuristic, &found));
  if (found == 0) {
    std::printf("no cuBLASLt algorithm for this matmul\n");
    std::exit(2);
  }
  const float alpha = 1.0f, beta = 0.0f;
  CHECK_CUBLAS(cublasLtMatmul(lt, op, &alpha, A, a, B, b, &beta, D, d, D, d, &heuristic.algo, nullptr, 0, 0));
  CHECK_CUBLAS(cublasLtMatmulPreferenceDestroy(pref));
}

// out (rows x OC, row-major) = GELU(inp (rows x C) weight^T (weight OC x C, row-major) + bias), computed as the
// column-major out^T = weight^T^T inp^T: A = weight seen column-major (C x OC) transposed.
static int linear_gelu(cublasLtHandle_t lt) {
  const int rows = 21, C = 40, OC = 24;
  const auto inp = random_vector(rows * C, 1), weight = random_vector(OC * C, 2), bias = random_vector(OC, 3);
  float *d_inp = upload(inp), *d_weight = upload(weight), *d_bias = upload(bias);
  float* d_out = upload(std::vector<float>(rows * OC, 0.0f));
  cublasLtMatmulDesc_t op;
  CHECK_CUBLAS(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t transa = CUBLAS_OP_T, transb = CUBLAS_OP_N;
  CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof transa));
  CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &transb, sizeof transb));
  const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_GELU_BIAS;
  CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue));
  CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &d_bias, sizeof d_bias));
  cublasLtMatrixLayout_t a, b, d;
  CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&a, CUDA_R_32F, C, OC, C));
  CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&b, CUDA_R_32F, C, rows, C));
  CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&d, CUDA_R_32F, OC, rows, OC));
  matmul(lt, op, d_weight, a, d_inp, b, d_out, d);
  std::vector<float> out(rows * OC);
  cudaMemcpy(out.data(), d_out, out.size() * sizeof(float), cudaMemcpyDeviceToHost);
  int bad = 0;
  for (int r = 0; r < rows; ++r) {
    for (int o = 0; o < OC; ++o) {
      double acc = bias[o];
      for (int i = 0; i < C; ++i) acc += double(inp[r * C + i]) * weight[o * C + i];
      const double want = gelu(acc), got = out[r * OC + o];
      if (!(std::fabs(got - want) <= 1e-5 + 1e-4 * std::fabs(want)) && ++bad <= 5) {
        std::printf("out[%d][%d] is %.7g, want %.7g\n", r, o, got, want);
      }
    }
  }
  std::printf("FP32 linear layer with GELU_BIAS: %s\n", bad == 0 ? "matches the host reference" : "MISMATCH");
  cublasLtMatrixLayoutDestroy(a);
  cublasLtMatrixLayoutDestroy(b);
  cublasLtMatrixLayoutDestroy(d);
  cublasLtMatmulDescDestroy(op);
  cudaFree(d_inp);
  cudaFree(d_weight);
  cudaFree(d_bias);
  cudaFree(d_out);
  return bad;
}

// D (M x N, FP32, row-major) = A (M x K, BF16, row-major) B (K x N, BF16, row-major) + bias (one per row).
static int bf16_row_major_bias(cublasLtHandle_t lt) {
  const int M = 17, N = 30, K = 50;
  const auto a32 = random_vector(M * K, 4), b32 = random_vector(K * N, 5), bias = random_vector(M, 6);
  std::vector<__nv_bfloat16> a16(a32.size()), b16(b32.size());
  for (std::size_t i = 0; i < a32.size(); ++i) a16[i] = __float2bfloat16(a32[i]);
  for (std::size_t i = 0; i < b32.size(); ++i) b16[i] = __float2bfloat16(b32[i]);
  __nv_bfloat16 *d_a = upload(a16), *d_b = upload(b16);
  float *d_bias = upload(bias), *d_d = upload(std::vector<float>(M * N, 0.0f));
  cublasLtMatmulDesc_t op;
  CHECK_CUBLAS(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
  CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue));
  CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &d_bias, sizeof d_bias));
  const cublasLtOrder_t row = CUBLASLT_ORDER_ROW;
  cublasLtMatrixLayout_t a, b, d;
  CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&a, CUDA_R_16BF, M, K, K));
  CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&b, CUDA_R_16BF, K, N, N));
  CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&d, CUDA_R_32F, M, N, N));
  for (auto layout : {a, b, d}) {
    CHECK_CUBLAS(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_ORDER, &row, sizeof row));
  }
  matmul(lt, op, d_a, a, d_b, b, d_d, d);
  std::vector<float> got(M * N);
  cudaMemcpy(got.data(), d_d, got.size() * sizeof(float), cudaMemcpyDeviceToHost);
  int bad = 0;
  for (int i = 0; i < M; ++i) {
    for (int j = 0; j < N; ++j) {
      double want = bias[i];
      for (int p = 0; p < K; ++p) want += double(__bfloat162float(a16[i * K + p])) * __bfloat162float(b16[p * N + j]);
      if (!(std::fabs(got[i * N + j] - want) <= 1e-4 + 1e-4 * std::fabs(want)) && ++bad <= 5) {
        std::printf("D[%d][%d] is %.7g, want %.7g\n", i, j, got[i * N + j], want);
      }
    }
  }
  std::printf("BF16 row-major matmul with BIAS: %s\n", bad == 0 ? "matches the host reference" : "MISMATCH");
  cublasLtMatrixLayoutDestroy(a);
  cublasLtMatrixLayoutDestroy(b);
  cublasLtMatrixLayoutDestroy(d);
  cublasLtMatmulDescDestroy(op);
  cudaFree(d_a);
  cudaFree(d_b);
  cudaFree(d_bias);
  cudaFree(d_d);
  return bad;
}

int main() {
  cublasLtHandle_t lt;
  CHECK_CUBLAS(cublasLtCreate(&lt));
  const int bad = linear_gelu(lt) + bf16_row_major_bias(lt);
  CHECK_CUBLAS(cublasLtDestroy(lt));
  return bad == 0 ? 0 : 1;
}
