// Lab 08: weight-only quantization - the kernels' launchers.  PROVIDED: do not modify.
//
// W is the weight matrix of a linear layer, n x k row-major (one row per output). The packed layouts are in
// lab.hpp: int8 in groups of 32, int4 in groups of `group` (32 or 128), two weights per byte; k is a
// multiple of the group. Every launcher is asynchronous on `stream`, launches its kernel once and allocates
// no device memory: the GEMVs get the packed weights and nothing else. Every array starts on a 16-byte
// boundary: a kernel may count on that much alignment and no more (the tests pass some arrays 16 bytes past a
// multiple of 32, as a slice of a larger allocation would be); with k a multiple of 32 every row of quants
// is then 16-byte aligned too.
#pragma once

#include "lab.hpp"

#include <rooflab/cuda.hpp>

#include <cuda_fp16.h>

#include <cstdint>

namespace lab08 {

// FP16 weights -> the int8 layout (q: n x k int8, scales: n x k / 32 halves), and back to FP16.
void quantize_int8(const __half* w, std::int8_t* q, __half* scales, int n, int k, cudaStream_t stream);
void dequantize_int8(const std::int8_t* q, const __half* scales, __half* w, int n, int k, cudaStream_t stream);

// FP16 weights -> the int4 layout (q: n x k / 2 bytes, scales: n x k / group halves), and back to FP16.
void quantize_int4(const __half* w, std::uint8_t* q, __half* scales, int n, int k, int group, cudaStream_t stream);
void dequantize_int4(const std::uint8_t* q, const __half* scales, __half* w, int n, int k, int group,
                     cudaStream_t stream);

// y[j] = sum_i scale(j, i) q(j, i) x[i] for j < n: one decode token through a quantized layer. x is k halves,
// y n halves; sums in FP32.
void gemv_int8(const std::int8_t* q, const __half* scales, const __half* x, __half* y, int n, int k,
               cudaStream_t stream);
void gemv_int4(const std::uint8_t* q, const __half* scales, const __half* x, __half* y, int n, int k, int group,
               cudaStream_t stream);

}  // namespace lab08
