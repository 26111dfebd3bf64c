// Lab 02: the ridge point - the kernels' launchers.  PROVIDED: do not modify.
#pragma once

#include "lab.hpp"

#include <rooflab/cuda.hpp>

#include <cuda_fp16.h>

#include <cstddef>

namespace lab02 {

// FP32 FMA throughput: `threads` threads (a multiple of kBlock), out[t] as reference_fma_fp32 describes.
// Returns the FLOPs the launch performs (2 per FMA).
double fma_fp32(float a, float b, int iterations, float* out, std::size_t threads, cudaStream_t stream);

// The same with __half2 (two FP16 FMAs per instruction on the CUDA cores): chain c of thread t starts at
// x = (t % 64 + c) / 64 in both halves, x = __hfma2(x, a, b); out[t] = the chains summed in order with
// __hadd2. Returns the FLOPs (4 per __hfma2).
double fma_half2(__half2 a, __half2 b, int iterations, __half2* out, std::size_t threads, cudaStream_t stream);

// C = A x B for n x n row-major matrices through cuBLAS on the tensor cores: A and B in FP16 or BF16
// (`type`), C in FP32, FP32 accumulation. GPU only: on the CPU backend it throws (cuBLAS is GPU code).
void tensor_gemm(rooflab::DType type, int n, const void* a, const void* b, float* c, cudaStream_t stream);

}  // namespace lab02
