// Kernels for race mode's test of races between blocks (test_race.cpp): nothing orders two blocks of a
// grid, not even two blocks that run one after the other on one CPU worker.
#include "conformance.hpp"

#include <rooflab/check.hpp>

namespace conform {

// A grid-stride loop that strides by blockDim.x instead of gridDim.x * blockDim.x: every block writes every
// element. The values are the same, so the output is right; it is still a race between blocks.
__global__ void block_stride_kernel(float* out, int n) {
  for (int i = static_cast<int>(threadIdx.x); i < n; i += static_cast<int>(blockDim.x)) out[i] = 2.0f * static_cast<float>(i);
}

void block_stride(float* out, int n, unsigned blocks) {
  block_stride_kernel<<<blocks, 64>>>(out, n);
  ROOFLAB_LAUNCH_CHECK();
}

}  // namespace conform
