// Lab 05: the naive attention path, cuBLAS for both GEMMs and the student's softmax between them.
// PROVIDED: do not modify. It lives here, in harness code, so that the comparison is fair (the GEMMs are the
// library's best) and the student files stay free of cuBLAS (the grader refuses cublas* in them).
//
//   S = Q K^T            cublasGemmStridedBatchedEx, FP16 in, FP32 accumulate, FP16 out: batch_heads x L x L
//   P = softmax(scale S) lab05::softmax_rows, in place over S
//   O = P V              cublasGemmStridedBatchedEx, FP16 in, FP32 accumulate, FP16 out
//
// The scores take batch_heads x L x L x 2 bytes of device memory (the caller allocates them): that, and
// the 4 L^2 bytes per head the path moves through them, is what Flash attention removes.
#pragma once

#include "kernels.hpp"

#include <rooflab/cublas.hpp>

#include <cuda_fp16.h>

#include <cstddef>

namespace lab05 {

inline void naive_attention(cublasHandle_t handle, const __half* q, const __half* k, const __half* v, __half* scores,
                            __half* o, int batch_heads, int len, int head_dim, float scale, bool causal,
                            cudaStream_t stream) {
  const float one = 1.0f, zero = 0.0f;
  const long long stride_x = static_cast<long long>(len) * head_dim, stride_s = static_cast<long long>(len) * len;
  ROOFLAB_CUBLAS_CHECK(cublasSetStream(handle, stream));
  // cuBLAS is column-major: the row-major S = Q K^T is the column-major S^T = K Q^T, and a row-major
  // [len][head_dim] matrix is a column-major head_dim x len one, so K goes first, transposed.
  ROOFLAB_CUBLAS_CHECK(cublasGemmStridedBatchedEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, len, len, head_dim, &one, k,
                                                  CUDA_R_16F, head_dim, stride_x, q, CUDA_R_16F, head_dim, stride_x,
                                                  &zero, scores, CUDA_R_16F, len, stride_s, batch_heads,
                                                  CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  softmax_rows(scores, scores, batch_heads * len, len, scale, causal, stream);
  // O = P V row-major is O^T = V^T P^T column-major: V (head_dim x len) times P^T (len x len).
  ROOFLAB_CUBLAS_CHECK(cublasGemmStridedBatchedEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, head_dim, len, len, &one, v,
                                                  CUDA_R_16F, head_dim, stride_x, scores, CUDA_R_16F, len, stride_s,
                                                  &zero, o, CUDA_R_16F, head_dim, stride_x, batch_heads,
                                                  CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

// Bytes of the score matrices naive_attention needs.
inline std::size_t naive_scores_bytes(int batch_heads, int len) {
  return static_cast<std::size_t>(batch_heads) * static_cast<std::size_t>(len) * static_cast<std::size_t>(len) *
         sizeof(__half);
}

}  // namespace lab05
