// The CPU backend's cuBLAS subset (src/cublas.cpp) against a double-precision host GEMM: every entry point,
// both transposes of each operand, alpha/beta, padded leading dimensions, strided batches; and the calls
// cuBLAS refuses (a leading dimension too small, a matrix outside its allocation, unsupported types).
//
// Padding between columns and between batches holds NaN, and so does C when beta is 0: an element read
// that cuBLAS would not read, or a write outside the matrix, shows as a NaN or a changed pad.
#include <rooflab/testing/buffer.hpp>
#include <rooflab/cublas.hpp>
#include <rooflab/testing/random.hpp>
#include <rooflab/emu/launch.hpp>

#include <cublas_v2.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace {

using rooflab::DeviceBuffer;

enum class Api { sgemm, hgemm, gemm_ex, sgemm_strided_batched, gemm_strided_batched_ex };

const char* api_name(Api api) {
  switch (api) {
    case Api::sgemm: return "cublasSgemm";
    case Api::hgemm: return "cublasHgemm";
    case Api::gemm_ex: return "cublasGemmEx";
    case Api::sgemm_strided_batched: return "cublasSgemmStridedBatched";
    case Api::gemm_strided_batched_ex: return "cublasGemmStridedBatchedEx";
  }
  return "?";
}

template <typename T>
T from_float(float v) {
  if constexpr (std::is_same_v<T, __half>) {
    return __float2half_rn(v);
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __float2bfloat16_rn(v);
  } else {
    return v;
  }
}
template <typename T>
float to_float(T v) {
  if constexpr (std::is_same_v<T, __half>) {
    return __half2float(v);
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __bfloat162float(v);
  } else {
    return v;
  }
}
template <typename T>
cudaDataType data_type() {
  if constexpr (std::is_same_v<T, __half>) {
    return CUDA_R_16F;
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return CUDA_R_16BF;
  } else {
    return CUDA_R_32F;
  }
}
// |got - want| <= atol + rtol |want| for the output type (inputs are exact in every type: the reference
// uses the rounded values).
template <typename T>
double rtol() {
  return std::is_same_v<T, float> ? 1e-5 : std::is_same_v<T, __half> ? 2e-3 : 1e-2;
}

const float kNaN = std::numeric_limits<float>::quiet_NaN();

// A column-major matrix (rows x cols as stored, leading dimension ld), `batches` of them `stride` apart;
// the padding is NaN.
template <typename T>
struct HostMatrix {
  int rows, cols, ld;
  long long stride;
  std::vector<T> data;
  HostMatrix(int r, int c, int l, long long s, int batches, std::uint64_t seed, bool poison_all)
      : rows(r), cols(c), ld(l), stride(s),
        data(static_cast<std::size_t>(s * (batches - 1) + static_cast<long long>(l) * c), from_float<T>(kNaN)) {
    const auto values = rooflab::random_floats(data.size(), seed);
    for (int b = 0; b < batches && !poison_all; ++b) {
      for (int j = 0; j < cols; ++j) {
        for (int i = 0; i < rows; ++i) data[at(b, i, j)] = from_float<T>(values[at(b, i, j)]);
      }
    }
  }
  std::size_t at(int b, int i, int j) const { return static_cast<std::size_t>(b * stride + i + static_cast<long long>(j) * ld); }
  double get(int b, int i, int j) const { return to_float(data[at(b, i, j)]); }
};

struct Case {
  Api api;
  cublasOperation_t ta, tb;
  int m, n, k;
  float alpha, beta;
  int batches = 1;
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
};

std::string describe(const Case& c) {
  char s[256];
  std::snprintf(s, sizeof s, "%s %c%c m=%d n=%d k=%d alpha=%g beta=%g batches=%d compute=%d", api_name(c.api),
                c.ta == CUBLAS_OP_N ? 'N' : 'T', c.tb == CUBLAS_OP_N ? 'N' : 'T', c.m, c.n, c.k, c.alpha, c.beta,
                c.batches, static_cast<int>(c.compute));
  return s;
}

// Runs one call on padded, NaN-framed operands and checks C against the double reference, and that C's
// padding was not written.
template <typename TA, typename TC>
void check_gemm(const Case& c) {
  SCOPED_TRACE(describe(c));
  const bool at = c.ta != CUBLAS_OP_N, bt = c.tb != CUBLAS_OP_N;
  const int a_rows = at ? c.k : c.m, a_cols = at ? c.m : c.k;
  const int b_rows = bt ? c.n : c.k, b_cols = bt ? c.k : c.n;
  const int lda = a_rows + 3, ldb = b_rows + 1, ldc = c.m + 2;
  const long long gap = c.batches > 1 ? 7 : 0;  // elements between consecutive batches
  const HostMatrix<TA> a(a_rows, a_cols, lda, static_cast<long long>(lda) * a_cols + gap, c.batches, 21, false);
  const HostMatrix<TA> b(b_rows, b_cols, ldb, static_cast<long long>(ldb) * b_cols + gap, c.batches, 22, false);
  const HostMatrix<TC> c0(c.m, c.n, ldc, static_cast<long long>(ldc) * c.n + gap, c.batches, 23, c.beta == 0.0f);
  DeviceBuffer<TA> da{std::span<const TA>(a.data)}, db{std::span<const TA>(b.data)};
  DeviceBuffer<TC> dc{std::span<const TC>(c0.data)};

  rooflab::CublasHandle handle;
  const bool half_scalars = c.api == Api::hgemm || c.compute == CUBLAS_COMPUTE_16F;
  const __half alpha_h = __float2half(c.alpha), beta_h = __float2half(c.beta);
  const void* alpha = half_scalars ? static_cast<const void*>(&alpha_h) : static_cast<const void*>(&c.alpha);
  const void* beta = half_scalars ? static_cast<const void*>(&beta_h) : static_cast<const void*>(&c.beta);
  const cudaDataType ta = data_type<TA>(), tc = data_type<TC>();
  cublasStatus_t s = CUBLAS_STATUS_INTERNAL_ERROR;
  switch (c.api) {
    case Api::sgemm:
      s = cublasSgemm(handle.get(), c.ta, c.tb, c.m, c.n, c.k, static_cast<const float*>(alpha),
                      reinterpret_cast<const float*>(da.data()), lda, reinterpret_cast<const float*>(db.data()), ldb,
                      static_cast<const float*>(beta), reinterpret_cast<float*>(dc.data()), ldc);
      break;
    case Api::hgemm:
      s = cublasHgemm(handle.get(), c.ta, c.tb, c.m, c.n, c.k, static_cast<const __half*>(alpha),
                      reinterpret_cast<const __half*>(da.data()), lda, reinterpret_cast<const __half*>(db.data()), ldb,
                      static_cast<const __half*>(beta), reinterpret_cast<__half*>(dc.data()), ldc);
      break;
    case Api::gemm_ex:
      s = cublasGemmEx(handle.get(), c.ta, c.tb, c.m, c.n, c.k, alpha, da.data(), ta, lda, db.data(), ta, ldb, beta,
                       dc.data(), tc, ldc, c.compute, CUBLAS_GEMM_DEFAULT);
      break;
    case Api::sgemm_strided_batched:
      s = cublasSgemmStridedBatched(handle.get(), c.ta, c.tb, c.m, c.n, c.k, static_cast<const float*>(alpha),
                                    reinterpret_cast<const float*>(da.data()), lda, a.stride,
                                    reinterpret_cast<const float*>(db.data()), ldb, b.stride,
                                    static_cast<const float*>(beta), reinterpret_cast<float*>(dc.data()), ldc,
                                    c0.stride, c.batches);
      break;
    case Api::gemm_strided_batched_ex:
      s = cublasGemmStridedBatchedEx(handle.get(), c.ta, c.tb, c.m, c.n, c.k, alpha, da.data(), ta, lda, a.stride,
                                     db.data(), ta, ldb, b.stride, beta, dc.data(), tc, ldc, c0.stride, c.batches,
                                     c.compute, CUBLAS_GEMM_DEFAULT_TENSOR_OP);
      break;
  }
  ASSERT_EQ(s, CUBLAS_STATUS_SUCCESS) << cublasGetStatusString(s);
  const auto got = dc.download();
  const double alpha_used = half_scalars ? __half2float(alpha_h) : c.alpha;
  const double beta_used = half_scalars ? __half2float(beta_h) : c.beta;
  int bad = 0;
  for (int batch = 0; batch < c.batches; ++batch) {
    for (int j = 0; j < c.n; ++j) {
      for (int i = 0; i < c.m; ++i) {
        double dot = 0, magnitude = 0;
        for (int p = 0; p < c.k; ++p) {
          const double x = at ? a.get(batch, p, i) : a.get(batch, i, p);
          const double y = bt ? b.get(batch, j, p) : b.get(batch, p, j);
          dot += x * y;
          magnitude += std::abs(x * y);
        }
        const double old = c.beta == 0.0f ? 0.0 : beta_used * c0.get(batch, i, j);
        const double want = alpha_used * dot + old;
        const double got_ij = to_float(got[c0.at(batch, i, j)]);
        // Float accumulation error grows with the sum of |terms|; the output type rounds once more.
        const double tol = 1e-6 * std::abs(alpha_used) * magnitude + rtol<TC>() * (std::abs(want) + 1e-2);
        if (!(std::abs(got_ij - want) <= tol) && bad++ < 5) {
          ADD_FAILURE() << "C[" << i << ", " << j << "] of batch " << batch << ": got " << got_ij << ", want " << want;
        }
      }
    }
  }
  // Padding after each column and between batches: never written.
  for (std::size_t e = 0; e < got.size(); ++e) {
    const long long in_batch = c0.stride > 0 ? static_cast<long long>(e) % c0.stride : static_cast<long long>(e);
    const long long col = in_batch / ldc, row = in_batch % ldc;
    const bool inside = col < c.n && row < c.m && static_cast<long long>(e) / std::max(1ll, c0.stride) < c.batches;
    if (!inside && !std::isnan(to_float(got[e])) && bad++ < 5) ADD_FAILURE() << "padding element " << e << " was written";
  }
}

constexpr cublasOperation_t kOps[] = {CUBLAS_OP_N, CUBLAS_OP_T};

}  // namespace

// ---- every entry point against the reference ----

TEST(EmuCublas, SgemmBothTransposesAlphaBeta) {
  for (auto ta : kOps) {
    for (auto tb : kOps) {
      check_gemm<float, float>({Api::sgemm, ta, tb, 33, 17, 45, 1.5f, -0.5f});
      check_gemm<float, float>({Api::sgemm, ta, tb, 31, 40, 9, -2.0f, 0.0f});  // beta 0: C is NaN, never read
    }
  }
  check_gemm<float, float>({Api::sgemm, CUBLAS_OP_C, CUBLAS_OP_N, 8, 8, 8, 1.0f, 1.0f});  // C is T for reals
  check_gemm<float, float>({Api::sgemm, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, 1.0f, 0.0f});
  check_gemm<float, float>({Api::sgemm, CUBLAS_OP_N, CUBLAS_OP_T, 5, 6, 0, 1.0f, 2.0f});  // k = 0: C = beta C
}

TEST(EmuCublas, Hgemm) {
  for (auto ta : kOps) {
    for (auto tb : kOps) {
      check_gemm<__half, __half>({Api::hgemm, ta, tb, 24, 19, 33, 1.0f, 0.5f});
      check_gemm<__half, __half>({Api::hgemm, ta, tb, 16, 16, 16, 0.25f, 0.0f});
    }
  }
}

TEST(EmuCublas, GemmExEveryTypeCombination) {
  for (auto ta : kOps) {
    for (auto tb : kOps) {
      check_gemm<float, float>({Api::gemm_ex, ta, tb, 20, 13, 27, 1.25f, -1.0f});
      check_gemm<float, float>({Api::gemm_ex, ta, tb, 20, 13, 27, 1.0f, 0.0f, 1, CUBLAS_COMPUTE_32F_FAST_TF32});
      check_gemm<__half, float>({Api::gemm_ex, ta, tb, 18, 22, 31, 1.0f, 0.0f});
      check_gemm<__half, float>({Api::gemm_ex, ta, tb, 18, 22, 31, 0.5f, 2.0f, 1, CUBLAS_COMPUTE_32F_FAST_16F});
      check_gemm<__nv_bfloat16, float>({Api::gemm_ex, ta, tb, 17, 9, 40, 2.0f, 0.0f, 1, CUBLAS_COMPUTE_32F_FAST_16BF});
      check_gemm<__half, __half>({Api::gemm_ex, ta, tb, 12, 14, 16, 1.0f, 1.0f});
      check_gemm<__half, __half>({Api::gemm_ex, ta, tb, 12, 14, 16, 1.0f, 0.0f, 1, CUBLAS_COMPUTE_16F});
      check_gemm<__nv_bfloat16, __nv_bfloat16>({Api::gemm_ex, ta, tb, 15, 11, 23, -1.0f, 0.5f});
    }
  }
}

TEST(EmuCublas, SgemmStridedBatched) {
  for (auto ta : kOps) {
    for (auto tb : kOps) check_gemm<float, float>({Api::sgemm_strided_batched, ta, tb, 9, 14, 21, 1.0f, 0.5f, 3});
  }
  check_gemm<float, float>({Api::sgemm_strided_batched, CUBLAS_OP_N, CUBLAS_OP_N, 7, 5, 3, 2.0f, 0.0f, 1});
}

// The attention shape: S = Q K^T per head, half in, float out; then P V with half out.
TEST(EmuCublas, GemmStridedBatchedEx) {
  for (auto ta : kOps) {
    for (auto tb : kOps) {
      check_gemm<__half, float>({Api::gemm_strided_batched_ex, ta, tb, 16, 24, 32, 0.125f, 0.0f, 4});
      check_gemm<__nv_bfloat16, __nv_bfloat16>({Api::gemm_strided_batched_ex, ta, tb, 10, 7, 12, 1.0f, 1.0f, 2});
    }
  }
  check_gemm<float, float>(
      {Api::gemm_strided_batched_ex, CUBLAS_OP_T, CUBLAS_OP_N, 8, 6, 10, 1.0f, -1.0f, 3, CUBLAS_COMPUTE_32F_PEDANTIC});
}

// A batch with stride 0 for B: every batch multiplies by the same B (a broadcast cuBLAS allows).
TEST(EmuCublas, StrideZeroBroadcastsOneMatrix) {
  const int m = 4, n = 3, k = 5, batches = 3;
  std::vector<float> a(static_cast<std::size_t>(m * k * batches)), b(static_cast<std::size_t>(k * n));
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i % 7) - 3.0f;
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(i % 5) - 2.0f;
  DeviceBuffer<float> da{std::span<const float>(a)}, db{std::span<const float>(b)}, dc(m * n * batches);
  rooflab::CublasHandle handle;
  const float alpha = 1.0f, beta = 0.0f;
  ROOFLAB_CUBLAS_CHECK(cublasSgemmStridedBatched(handle.get(), CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, da.data(), m,
                                                 m * k, db.data(), k, 0, &beta, dc.data(), m, m * n, batches));
  const auto c = dc.download();
  for (int bt = 0; bt < batches; ++bt) {
    for (int j = 0; j < n; ++j) {
      for (int i = 0; i < m; ++i) {
        float want = 0;
        for (int p = 0; p < k; ++p) want += a[bt * m * k + i + p * m] * b[p + j * k];
        EXPECT_EQ(c[bt * m * n + i + j * m], want) << "batch " << bt << " (" << i << ", " << j << ")";
      }
    }
  }
}

// Lab 02's call: row-major C = A B through the column-major API (C^T = B^T A^T), with the project's handle
// and check macro, as common/ and the labs write it.
TEST(EmuCublas, RowMajorProductTheLabsWay) {
  const int n = 48;
  const auto af = rooflab::random_floats(n * n, 31), bf = rooflab::random_floats(n * n, 32);
  std::vector<__half> a(af.size()), b(bf.size());
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = __float2half(af[i]), b[i] = __float2half(bf[i]);
  DeviceBuffer<__half> da{std::span<const __half>(a)}, db{std::span<const __half>(b)};
  DeviceBuffer<float> dc(n * n);
  static rooflab::CublasHandle handle;
  cudaStream_t stream = nullptr;
  ROOFLAB_CUDA_CHECK(cudaStreamCreate(&stream));
  ROOFLAB_CUBLAS_CHECK(cublasSetStream(handle.get(), stream));
  cudaStream_t got_stream = nullptr;
  ROOFLAB_CUBLAS_CHECK(cublasGetStream(handle.get(), &got_stream));
  EXPECT_EQ(got_stream, stream);
  ROOFLAB_CUBLAS_CHECK(cublasSetMathMode(handle.get(), CUBLAS_TF32_TENSOR_OP_MATH));
  cublasMath_t mode = CUBLAS_DEFAULT_MATH;
  ROOFLAB_CUBLAS_CHECK(cublasGetMathMode(handle.get(), &mode));
  EXPECT_EQ(mode, CUBLAS_TF32_TENSOR_OP_MATH);
  const float alpha = 1.0f, beta = 0.0f;
  ROOFLAB_CUBLAS_CHECK(cublasGemmEx(handle.get(), CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, db.data(), CUDA_R_16F, n,
                                    da.data(), CUDA_R_16F, n, &beta, dc.data(), CUDA_R_32F, n, CUBLAS_COMPUTE_32F,
                                    CUBLAS_GEMM_DEFAULT));
  const auto c = dc.download();
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      double want = 0;
      for (int p = 0; p < n; ++p) want += static_cast<double>(__half2float(a[i * n + p])) * __half2float(b[p * n + j]);
      ASSERT_NEAR(c[i * n + j], want, 1e-4) << "row-major C[" << i << "][" << j << "]";
    }
  }
  ROOFLAB_CUDA_CHECK(cudaStreamDestroy(stream));
}

TEST(EmuCublas, Sgemm256CubedIsQuick) {
  const int n = 256;
  const auto a = rooflab::random_floats(n * n, 41), b = rooflab::random_floats(n * n, 42);
  DeviceBuffer<float> da{std::span<const float>(a)}, db{std::span<const float>(b)}, dc(n * n);
  rooflab::CublasHandle handle;
  const float alpha = 1.0f, beta = 0.0f;
  const auto start = std::chrono::steady_clock::now();
  ROOFLAB_CUBLAS_CHECK(cublasSgemm(handle.get(), CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, da.data(), n, db.data(), n,
                                   &beta, dc.data(), n));
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::printf("[timing] cublasSgemm 256^3 on the CPU backend: %.1f ms\n", ms);
  const auto c = dc.download();
  for (int s = 0; s < 64; ++s) {  // spot checks across the matrix
    const int i = (s * 37) % n, j = (s * 101) % n;
    double want = 0;
    for (int p = 0; p < n; ++p) want += static_cast<double>(a[i + p * n]) * b[p + j * n];
    EXPECT_NEAR(c[i + j * n], want, 1e-4) << "(" << i << ", " << j << ")";
  }
}

// ---- what cuBLAS refuses ----

namespace {
// The status, and the reason the CPU backend gives for it in cublasGetStatusString.
std::string reason(cublasStatus_t s) { return std::string(cublasGetStatusName(s)) + ": " + cublasGetStatusString(s); }
}  // namespace

TEST(EmuCublas, LeadingDimensionsAreValidated) {
  rooflab::CublasHandle handle;
  DeviceBuffer<float> a(64 * 64), b(64 * 64), c(64 * 64);
  c.upload(std::vector<float>(64 * 64, 7.0f));
  const float alpha = 1.0f, beta = 0.0f;
  const auto sgemm = [&](cublasOperation_t ta, cublasOperation_t tb, int lda, int ldb, int ldc) {
    return cublasSgemm(handle.get(), ta, tb, 16, 8, 12, &alpha, a.data(), lda, b.data(), ldb, &beta, c.data(), ldc);
  };
  // m = 16, n = 8, k = 12: A is 16 x 12 (N) or 12 x 16 (T) as stored, B 12 x 8 (N) or 8 x 12 (T), C 16 x 8.
  cublasStatus_t s = sgemm(CUBLAS_OP_N, CUBLAS_OP_N, 15, 12, 16);
  EXPECT_EQ(s, CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_NE(reason(s).find("cublasSgemm: lda = 15 is less than m = 16"), std::string::npos) << reason(s);
  EXPECT_EQ(sgemm(CUBLAS_OP_T, CUBLAS_OP_N, 12, 12, 16), CUBLAS_STATUS_SUCCESS);  // transposed: lda >= k
  EXPECT_EQ(sgemm(CUBLAS_OP_T, CUBLAS_OP_N, 11, 12, 16), CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(sgemm(CUBLAS_OP_N, CUBLAS_OP_N, 16, 11, 16), CUBLAS_STATUS_INVALID_VALUE);
  s = sgemm(CUBLAS_OP_N, CUBLAS_OP_T, 16, 7, 16);
  EXPECT_EQ(s, CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_NE(reason(s).find("ldb = 7 is less than n = 8"), std::string::npos) << reason(s);
  EXPECT_EQ(sgemm(CUBLAS_OP_N, CUBLAS_OP_N, 16, 12, 15), CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(cublasSgemm(handle.get(), CUBLAS_OP_N, CUBLAS_OP_N, -1, 8, 12, &alpha, a.data(), 16, b.data(), 12, &beta,
                        c.data(), 16),
            CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(cublasSgemm(handle.get(), static_cast<cublasOperation_t>(7), CUBLAS_OP_N, 16, 8, 12, &alpha, a.data(), 16,
                        b.data(), 12, &beta, c.data(), 16),
            CUBLAS_STATUS_INVALID_VALUE);
  // Refused calls left C alone (only the valid transposed call above wrote its 16 x 8 corner).
  const auto got = c.download();
  for (int j = 8; j < 64; ++j) EXPECT_EQ(got[j * 64], 7.0f);
}

TEST(EmuCublas, MatricesOutsideTheirAllocationAreRefused) {
  rooflab::CublasHandle handle;
  const int m = 32, n = 32, k = 32;
  DeviceBuffer<float> a(m * k), b(k * n - 1), c(m * n);  // B is one element short
  c.upload(std::vector<float>(m * n, 7.0f));
  const float alpha = 1.0f, beta = 0.0f;
  cublasStatus_t s = cublasSgemm(handle.get(), CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, a.data(), m, b.data(), k,
                                 &beta, c.data(), m);
  EXPECT_EQ(s, CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_NE(reason(s).find("matrix B (32 x 32 as stored, ldb = 32) spans 4096 bytes from byte 0 of a 4092-byte "
                           "cudaMalloc allocation: it runs 4 bytes past the end"),
            std::string::npos)
      << reason(s);
  EXPECT_EQ(c.download()[0], 7.0f) << "a refused call must not write C";

  // A leading dimension larger than the allocation allows: the last column runs past the end.
  s = cublasSgemm(handle.get(), CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, a.data(), m + 1, b.data(), k, &beta,
                  c.data(), m);
  EXPECT_EQ(s, CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_NE(reason(s).find("matrix A"), std::string::npos) << reason(s);

  // A host pointer.
  std::vector<float> host(m * n);
  s = cublasSgemm(handle.get(), CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, a.data(), m, a.data(), k, &beta, host.data(),
                  m);
  EXPECT_EQ(s, CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_NE(reason(s).find("matrix C (32 x 32 as stored, ldc = 32) starts at"), std::string::npos) << reason(s);
  EXPECT_NE(reason(s).find("not inside a cudaMalloc allocation"), std::string::npos) << reason(s);

  // The last batch of a strided batch runs past the end of C.
  DeviceBuffer<float> cc(m * n * 2);
  s = cublasSgemmStridedBatched(handle.get(), CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, a.data(), m, 0, a.data(), k, 0,
                                &beta, cc.data(), m, m * n, 3);
  EXPECT_EQ(s, CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_NE(reason(s).find("matrix C (32 x 32 as stored, ldc = 32, over every batch) spans 12288 bytes"),
            std::string::npos)
      << reason(s);

  // The check macro's exception carries the reason.
  try {
    ROOFLAB_CUBLAS_CHECK(cublasSgemm(handle.get(), CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, a.data(), m, b.data(), k,
                                     &beta, c.data(), m));
    ADD_FAILURE() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("CUBLAS_STATUS_INVALID_VALUE"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("runs 4 bytes past the end"), std::string::npos) << e.what();
  }
}

TEST(EmuCublas, UnsupportedTypesHandlesAndScalars) {
  rooflab::CublasHandle handle;
  DeviceBuffer<float> a(64), c(64);
  DeviceBuffer<__half> h(64);
  const float alpha = 1.0f, beta = 0.0f;
  // A and B of different types: cuBLAS has no such GEMM.
  cublasStatus_t s = cublasGemmEx(handle.get(), CUBLAS_OP_N, CUBLAS_OP_N, 8, 8, 8, &alpha, h.data(), CUDA_R_16F, 8,
                                  a.data(), CUDA_R_32F, 8, &beta, c.data(), CUDA_R_32F, 8, CUBLAS_COMPUTE_32F,
                                  CUBLAS_GEMM_DEFAULT);
  EXPECT_EQ(s, CUBLAS_STATUS_NOT_SUPPORTED) << reason(s);
  s = cublasGemmEx(handle.get(), CUBLAS_OP_N, CUBLAS_OP_N, 8, 8, 8, &alpha, a.data(), CUDA_R_32F, 8, a.data(),
                   CUDA_R_32F, 8, &beta, c.data(), CUDA_R_32F, 8, CUBLAS_COMPUTE_64F, CUBLAS_GEMM_DEFAULT);
  EXPECT_EQ(s, CUBLAS_STATUS_NOT_SUPPORTED) << reason(s);
  // alpha in device memory while the pointer mode is host.
  s = cublasSgemm(handle.get(), CUBLAS_OP_N, CUBLAS_OP_N, 8, 8, 8, a.data(), a.data(), 8, a.data(), 8, &beta, c.data(),
                  8);
  EXPECT_EQ(s, CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_NE(reason(s).find("alpha points to device memory"), std::string::npos) << reason(s);
  // A destroyed handle.
  cublasHandle_t gone = nullptr;
  ASSERT_EQ(cublasCreate(&gone), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasDestroy(gone), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cublasSetStream(gone, nullptr), CUBLAS_STATUS_NOT_INITIALIZED);
  EXPECT_EQ(cublasSgemm(nullptr, CUBLAS_OP_N, CUBLAS_OP_N, 8, 8, 8, &alpha, a.data(), 8, a.data(), 8, &beta, c.data(), 8),
            CUBLAS_STATUS_NOT_INITIALIZED);
}

// A GEMM is issued on its handle's stream in the streams' order (ordering.hpp), as a kernel is: on a
// cudaStreamNonBlocking stream nothing orders a synchronous copy after it (the copy gets the poison, as a GPU
// could give the bytes from before the GEMM), and an interval timed on another stream leaves it out, named;
// synchronized, or on the timed stream, it is covered.
TEST(EmuCublas, AGemmIsIssuedOnItsHandlesStream) {
  constexpr int n = 16;
  cudaStream_t side = nullptr, timer = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreate(&timer), cudaSuccess);
  cublasHandle_t handle = nullptr;
  ASSERT_EQ(cublasCreate(&handle), CUBLAS_STATUS_SUCCESS);
  const std::vector<float> ones(n * n, 1.0f);
  DeviceBuffer<float> a(n * n), b(n * n), c(n * n);
  ASSERT_EQ(cudaMemcpy(a.data(), ones.data(), ones.size() * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(b.data(), ones.data(), ones.size() * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
  c.poison();
  const float alpha = 1.0f, beta = 0.0f;
  const auto gemm = [&] {
    return cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, a.data(), n, b.data(), n, &beta, c.data(), n);
  };
  const auto c_back = [&] {
    std::vector<float> host(n * n);
    EXPECT_EQ(cudaMemcpy(host.data(), c.data(), host.size() * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
    return host;
  };
  ASSERT_EQ(cublasSetStream(handle, side), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(gemm(), CUBLAS_STATUS_SUCCESS);
  const std::vector<float> early = c_back();
  unsigned bits = 0;
  std::memcpy(&bits, &early[5], sizeof bits);
  EXPECT_EQ(bits, 0xCDCDCDCDu) << "a copy that nothing orders after the GEMM must not see its values";
  ASSERT_EQ(cudaStreamSynchronize(side), cudaSuccess);
  EXPECT_EQ(c_back()[5], static_cast<float>(n));

  cudaEvent_t start = nullptr, stop = nullptr;
  ASSERT_EQ(cudaEventCreate(&start), cudaSuccess);
  ASSERT_EQ(cudaEventCreate(&stop), cudaSuccess);
  const auto timed = [&] {
    EXPECT_EQ(cudaEventRecord(start, timer), cudaSuccess);
    EXPECT_EQ(gemm(), CUBLAS_STATUS_SUCCESS);
    EXPECT_EQ(cudaEventRecord(stop, timer), cudaSuccess);
    EXPECT_EQ(cudaEventSynchronize(stop), cudaSuccess);
    return rooflab::emu::work_not_covered(start, stop);
  };
  const std::string left = timed();
  EXPECT_NE(left.find("cublasSgemm"), std::string::npos) << left;
  EXPECT_NE(left.find("cudaStreamNonBlocking"), std::string::npos) << left;
  ASSERT_EQ(cublasSetStream(handle, timer), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(timed(), "") << "the GEMM on the timed stream is covered";
  cudaDeviceSynchronize();
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cublasDestroy(handle);
  cudaStreamDestroy(side);
  cudaStreamDestroy(timer);
}
