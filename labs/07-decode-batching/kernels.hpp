// Lab 07: decode batching - the kernels' launchers.  PROVIDED: do not modify.
//
// W is the weight matrix of a linear layer, N x K row-major FP16 (one row per output); inputs and outputs
// are FP16, sums are FP32. Every launcher is asynchronous on `stream` and handles any N, K >= 1. Every array
// starts on a 16-byte boundary: a kernel may count on that much alignment and no more (the tests pass some
// arrays 16 bytes past a multiple of 32, as a slice of a larger allocation would be); a row of W or X is then
// 16-byte aligned only when K is a multiple of 8.
#pragma once

#include "lab.hpp"

#include <rooflab/cuda.hpp>

#include <cuda_fp16.h>

namespace lab07 {

// y[j] = sum_k W[j][k] x[k] for j < n: one decode token through one layer.
void gemv(const __half* w, const __half* x, __half* y, int n, int k, cudaStream_t stream);

// Y[b][j] = sum_k X[b][k] W[j][k] for b < batch (1 to 64), j < n: X is batch x k, Y batch x n. Each weight is
// read from DRAM once for the whole batch.
void batched_gemv(const __half* w, const __half* x, __half* y, int n, int k, int batch, cudaStream_t stream);

}  // namespace lab07
