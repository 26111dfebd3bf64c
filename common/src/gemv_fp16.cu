// rooflab's FP16 GEMV (rooflab/testing/gemv_fp16.hpp): the baseline of Lab 08's speedups, never a student's.
//
//   gemv_fp16_kernel   one warp per row of W, rows handed out grid-stride
//
// A batch-1 GEMV reads every weight once for 2 FLOPs, so its time is W's bytes over the bandwidth: the lanes
// of a warp read consecutive 16-byte pieces of a row (512 contiguous bytes per warp load), x comes from L1/L2,
// and warp_sum adds the lanes' partial sums. This is Lab 07's GEMV solution, kept here so that a lab grading
// against it does not depend on a student's Lab 07 or on its own student files.
#include <rooflab/testing/gemv_fp16.hpp>

#include <rooflab/grid.hpp>
#include <rooflab/launch.hpp>
#include <rooflab/warp.hpp>

#include <cstddef>

namespace rooflab::baseline {

namespace {
constexpr unsigned kBlock = 256;  // 8 warps, one row each at a time
constexpr unsigned kWarpsPerBlock = kBlock / 32;
}  // namespace

__global__ void gemv_fp16_kernel(const __half* __restrict__ w, const __half* __restrict__ x, __half* __restrict__ y,
                                 int n, int k) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int warps = static_cast<int>(gridDim.x * blockDim.x / 32);
  for (int row = static_cast<int>((blockIdx.x * blockDim.x + threadIdx.x) / 32); row < n; row += warps) {
    const __half* w_row = w + static_cast<std::size_t>(row) * k;
    float sum = 0.0f;
    if (k % 8 == 0) {
      // Rows start on 16-byte boundaries: one 128-bit load per lane per step.
      for (int i = lane * 8; i < k; i += 32 * 8) {
        float wv[8], xv[8];
        load_halves<8>(w_row + i, wv);
        load_halves<8>(x + i, xv);
#pragma unroll
        for (int j = 0; j < 8; ++j) sum = fmaf(wv[j], xv[j], sum);
      }
    } else {
      for (int i = lane; i < k; i += 32) sum = fmaf(__half2float(w_row[i]), __half2float(x[i]), sum);
    }
    sum = warp_sum(sum);
    if (lane == 0) y[row] = __float2half(sum);
  }
}

void gemv_fp16(const __half* w, const __half* x, __half* y, int n, int k, cudaStream_t stream) {
  // Enough warps to keep every SM's loads in flight (16 blocks of 8 warps per SM), never more than rows.
  const unsigned blocks = grid_for(static_cast<std::size_t>(n), kWarpsPerBlock, 16 * sm_count());
  gemv_fp16_kernel<<<blocks, kBlock, 0, stream>>>(w, x, y, n, k);
  ROOFLAB_LAUNCH_CHECK();
}

}  // namespace rooflab::baseline
