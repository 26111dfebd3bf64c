// Kernels that measure this GPU's ceilings. They are the harness's own, not the students': the perf
// graders compare student kernels with what these reach on the same GPU.
//
//   copy_vec4_kernel   grid-stride copy with 128-bit loads and stores: the bandwidth ceiling
//   fma_peak_kernel    FMA_CHAINS independent FMA chains per thread: the FP32 compute ceiling
#include "calibration_kernels.hpp"

#include <rooflab/launch.hpp>

namespace rooflab::calib {

__global__ void copy_vec4_kernel(const float4* __restrict__ in, float4* __restrict__ out, std::size_t n4) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n4; i += stride) {
    out[i] = in[i];
  }
}

// Eight independent chains hide the 4-cycle FMA latency with room to spare; each iteration is 8 FMAs.
// `a` and `b` are runtime values and the sum is stored, so the compiler can neither fold nor remove the work.
constexpr int FMA_CHAINS = 8;

__global__ void fma_peak_kernel(float a, float b, int iterations, float* __restrict__ out) {
  float acc[FMA_CHAINS];
#pragma unroll
  for (int c = 0; c < FMA_CHAINS; ++c) acc[c] = static_cast<float>(threadIdx.x + c);
  for (int i = 0; i < iterations; ++i) {
#pragma unroll
    for (int c = 0; c < FMA_CHAINS; ++c) acc[c] = fmaf(acc[c], a, b);
  }
  float sum = 0.0f;
#pragma unroll
  for (int c = 0; c < FMA_CHAINS; ++c) sum += acc[c];
  out[static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x] = sum;
}

void copy_vec4(const float4* in, float4* out, std::size_t n4, int sms, cudaStream_t stream) {
  constexpr unsigned kBlock = 256;
  copy_vec4_kernel<<<grid_for(n4, kBlock, 32u * static_cast<unsigned>(sms)), kBlock, 0, stream>>>(in, out, n4);
  ROOFLAB_LAUNCH_CHECK();
}

double fma_peak(float a, float b, int iterations, float* out, unsigned blocks, unsigned threads,
                cudaStream_t stream) {
  fma_peak_kernel<<<blocks, threads, 0, stream>>>(a, b, iterations, out);
  ROOFLAB_LAUNCH_CHECK();
  return 2.0 * FMA_CHAINS * static_cast<double>(iterations) * blocks * threads;
}

}  // namespace rooflab::calib
