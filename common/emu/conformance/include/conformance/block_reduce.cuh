// Block-wide reductions in a header found through an include directory (`#include <conformance/...>`), as
// a repository's common.h offers them: a __shared__ array inside a __device__ function and a kernel that
// uses it (nothing else the CPU backend rewrites: the __shared__ declaration alone makes it rewrite the header).
#pragma once

// The sum of `value` over the block: warp sums through shuffles, then the first warp adds the warp sums.
__device__ inline float block_sum(float value) {
  __shared__ float warp_sums[32];
  const int lane = threadIdx.x % warpSize, warp = threadIdx.x / warpSize;
  for (int offset = warpSize / 2; offset > 0; offset /= 2) value += __shfl_down_sync(0xffffffffu, value, offset);
  if (lane == 0) warp_sums[warp] = value;
  __syncthreads();
  const int warps = (blockDim.x + warpSize - 1) / warpSize;
  value = threadIdx.x < warps ? warp_sums[threadIdx.x] : 0.0f;
  if (warp == 0) {
    for (int offset = warpSize / 2; offset > 0; offset /= 2) value += __shfl_down_sync(0xffffffffu, value, offset);
  }
  __syncthreads();  // warp_sums is free again for the next call
  return value;
}

// One block per row of a rows x cols matrix; the row's sum in sums[row].
__global__ void row_sum_kernel(const float* x, float* sums, int cols) {
  float partial = 0.0f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) partial += x[blockIdx.x * cols + c];
  const float total = block_sum(partial);
  if (threadIdx.x == 0) sums[blockIdx.x] = total;
}
