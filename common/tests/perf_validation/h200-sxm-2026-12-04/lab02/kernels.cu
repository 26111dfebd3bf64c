// Lab 02: the ridge point - kernels that find this GPU's compute roofs.
//
//   fma_fp32_kernel    FP32 FMAs in kChains independent chains per thread: the FP32 CUDA-core roof
//   fma_half2_kernel   the same with __half2: two FP16 FMAs per instruction (the FP16 CUDA-core roof)
//   tensor_gemm        cuBLAS cublasGemmEx on the tensor cores: the FP16/BF16 tensor roofs
//
// The FMA kernels read nothing from memory and store one value per thread: their intensity is enormous,
// so they sit far right of every ridge point and measure the compute roof alone. Handout: README.md,
// sections "Latency and independent chains", "Keeping the work alive" and "cuBLAS".
#include "kernels.hpp"

#include <rooflab/grid.hpp>
#include <rooflab/launch.hpp>
#include <rooflab/stub.hpp>

#include <rooflab/cublas.hpp>

namespace lab02 {

// ---- PROVIDED: do not modify ----

using rooflab::global_thread;  // this thread's index in the grid (rooflab/grid.hpp)

// ---- FP32 FMA throughput ----

__global__ void fma_fp32_kernel(float a, float b, int iterations, float* __restrict__ out) {
  // STUDENT BEGIN (lab02.fma)
  // kChains independent chains: while one chain's FMA waits for its previous result (about 4 cycles), the
  // scheduler issues the others', so the FMA pipes never idle. The chains live in registers (the array is
  // indexed with compile-time constants after unrolling).
  const std::size_t t = global_thread();
  float x[kChains];
#pragma unroll
  for (int c = 0; c < kChains; ++c) x[c] = static_cast<float>(t % 1024 + static_cast<std::size_t>(c));
  for (int i = 0; i < iterations; ++i) {
#pragma unroll
    for (int c = 0; c < kChains; ++c) x[c] = fmaf(x[c], a, b);
  }
  // `a`, `b` and `iterations` are runtime values and the result is stored: the compiler can neither
  // precompute the chains nor drop them.
  float sum = 0.0f;
#pragma unroll
  for (int c = 0; c < kChains; ++c) sum += x[c];
  out[t] = sum;
  // STUDENT END
}

// ---- FP16 (half2) FMA throughput ----

__global__ void fma_half2_kernel(__half2 a, __half2 b, int iterations, __half2* __restrict__ out) {
  // STUDENT BEGIN (lab02.fma_half2)
  // One __hfma2 does two FP16 FMAs (4 FLOPs): the FP16 roof of the CUDA cores is twice the FP32 one on
  // GPUs with full-rate FP16 arithmetic.
  const std::size_t t = global_thread();
  __half2 x[kChains];
#pragma unroll
  for (int c = 0; c < kChains; ++c) {
    x[c] = __float2half2_rn(static_cast<float>(t % 64 + static_cast<std::size_t>(c)) / 64.0f);
  }
  for (int i = 0; i < iterations; ++i) {
#pragma unroll
    for (int c = 0; c < kChains; ++c) x[c] = __hfma2(x[c], a, b);
  }
  __half2 sum = __float2half2_rn(0.0f);
#pragma unroll
  for (int c = 0; c < kChains; ++c) sum = __hadd2(sum, x[c]);
  out[t] = sum;
  // STUDENT END
}

// ---- launchers ----

double fma_fp32(float a, float b, int iterations, float* out, std::size_t threads, cudaStream_t stream) {
  // STUDENT BEGIN (lab02.fma.launch)
  fma_fp32_kernel<<<static_cast<unsigned>(threads / kBlock), kBlock, 0, stream>>>(a, b, iterations, out);
  ROOFLAB_LAUNCH_CHECK();
  return 2.0 * kChains * static_cast<double>(iterations) * static_cast<double>(threads);
  // STUDENT END
}

double fma_half2(__half2 a, __half2 b, int iterations, __half2* out, std::size_t threads, cudaStream_t stream) {
  // STUDENT BEGIN (lab02.fma_half2.launch)
  fma_half2_kernel<<<static_cast<unsigned>(threads / kBlock), kBlock, 0, stream>>>(a, b, iterations, out);
  ROOFLAB_LAUNCH_CHECK();
  return 4.0 * kChains * static_cast<double>(iterations) * static_cast<double>(threads);
  // STUDENT END
}

void tensor_gemm(rooflab::DType type, int n, const void* a, const void* b, float* c, cudaStream_t stream) {
  // STUDENT BEGIN (lab02.cublas)
  // cuBLAS is column-major. A row-major matrix read as column-major is its transpose, so for row-major
  // C = A B we ask for C^T = B^T A^T: pass B first, then A, and every leading dimension is n.
  static rooflab::CublasHandle handle;
  ROOFLAB_CUBLAS_CHECK(cublasSetStream(handle.get(), stream));
  const cudaDataType_t in = type == rooflab::DType::bf16 ? CUDA_R_16BF : CUDA_R_16F;
  const float alpha = 1.0f, beta = 0.0f;
  ROOFLAB_CUBLAS_CHECK(cublasGemmEx(handle.get(), CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, b, in, n, a, in, n,
                                    &beta, c, CUDA_R_32F, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  // STUDENT END
}

}  // namespace lab02
