// Kernels that measure this GPU's ceilings. They are the harness's own, not the students': the perf
// graders compare student kernels with what these reach on the same GPU.
//
//   rooflab_calib_copy_vec4_kernel   grid-stride copy with 128-bit loads and stores: the bandwidth ceiling
//   rooflab_calib_fma_peak_kernel    FMA_CHAINS independent FMA chains per thread: the FP32 compute ceiling
//
// A student copy of the course (./rooflab release) does not hold this file: they are close to Lab 01's and
// Lab 02's answers. It ships them compiled (common/calibration_fatbin.cmake) and launches them by their
// extern "C" names (calibration_loader.cpp); keep the names and parameters in step with that file.
#include "calibration_kernels.hpp"

#include <rooflab/launch.hpp>

extern "C" __global__ void rooflab_calib_copy_vec4_kernel(const float4* __restrict__ in, float4* __restrict__ out,
                                                          std::size_t n4) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n4; i += stride) {
    out[i] = in[i];
  }
}

// Eight independent chains hide the 4-cycle FMA latency with room to spare; each iteration is 8 FMAs.
// `a` and `b` are runtime values and the sum is stored, so the compiler can neither fold nor remove the work.
extern "C" __global__ void rooflab_calib_fma_peak_kernel(float a, float b, int iterations, float* __restrict__ out) {
  using rooflab::calib::FMA_CHAINS;
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

namespace rooflab::calib {

void copy_vec4(const float4* in, float4* out, std::size_t n4, int sms, cudaStream_t stream) {
  const unsigned blocks = grid_for(n4, kCopyBlock, kCopyBlocksPerSm * static_cast<unsigned>(sms));
  rooflab_calib_copy_vec4_kernel<<<blocks, kCopyBlock, 0, stream>>>(in, out, n4);
  ROOFLAB_LAUNCH_CHECK();
}

double fma_peak(float a, float b, int iterations, float* out, unsigned blocks, unsigned threads,
                cudaStream_t stream) {
  rooflab_calib_fma_peak_kernel<<<blocks, threads, 0, stream>>>(a, b, iterations, out);
  ROOFLAB_LAUNCH_CHECK();
  return fma_flops(iterations, blocks, threads);
}

}  // namespace rooflab::calib
