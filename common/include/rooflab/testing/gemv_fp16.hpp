// rooflab's own FP16 GEMV: the baseline a quantized GEMV is timed against in the same run (Lab 08), at the
// same shape, on the same GPU. It is the harness's code, compiled into rooflab::cuda (and the dry run's
// rooflab::cuda_dryrun) beside the calibration kernels, so no student file can change it; its design is Lab
// 07's GEMV solution (a warp per row, 128-bit loads of W, a shuffle reduction, FP32 sums).
#pragma once

#include <rooflab/cuda.hpp>

#include <cuda_fp16.h>

namespace rooflab::baseline {

// y[j] = sum_i W[j][i] x[i] for j < n, W n x k row-major FP16 (any n, k >= 1), y rounded to FP16; asynchronous
// on `stream`, launch checked.
void gemv_fp16(const __half* w, const __half* x, __half* y, int n, int k, cudaStream_t stream);

}  // namespace rooflab::baseline
