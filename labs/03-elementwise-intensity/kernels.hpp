// Lab 03: elementwise intensity - the kernels' launchers.  PROVIDED: do not modify.
//
// Matrices are row-major rows x cols; bias has cols elements. T is float or __half (FP16 in memory, FP32
// arithmetic). Every launcher is asynchronous on `stream` and handles any rows, cols >= 1.
#pragma once

#include "lab.hpp"

#include <rooflab/cuda.hpp>

#include <cuda_fp16.h>

#include <cstddef>

namespace lab03 {

// The chain y = residual + gelu(x + bias[col]) as three kernels, through two scratch arrays t and u.
template <typename T>
void unfused_chain(const T* x, const T* bias, const T* residual, T* t, T* u, T* y, std::size_t rows,
                   std::size_t cols, cudaStream_t stream);
// The three steps one by one (what unfused_chain launches), for the per-kernel performance test.
template <typename T>
void bias_add(const T* x, const T* bias, T* t, std::size_t rows, std::size_t cols, cudaStream_t stream);
template <typename T>
void gelu(const T* t, T* u, std::size_t n, cudaStream_t stream);
template <typename T>
void residual_add(const T* u, const T* residual, T* y, std::size_t n, cudaStream_t stream);

// The same chain as one kernel: no scratch arrays.
template <typename T>
void fused_chain(const T* x, const T* bias, const T* residual, T* y, std::size_t rows, std::size_t cols,
                 cudaStream_t stream);

// The intensity sweep: out[i] = sweep_ref(in[i], a, b, k) for i < n; 2k FLOPs per 8 bytes.
void sweep(const float* in, float* out, std::size_t n, float a, float b, int k, cudaStream_t stream);

}  // namespace lab03
