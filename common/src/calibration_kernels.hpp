// Host-side declarations of the calibration kernels' launchers (private to rooflab_cuda).
#pragma once

#include <rooflab/cuda.hpp>

#include <cstddef>

namespace rooflab::calib {

void copy_vec4(const float4* in, float4* out, std::size_t n4, int sms, cudaStream_t stream);
// Launches the FMA kernel and returns the FLOPs it performs.
double fma_peak(float a, float b, int iterations, float* out, unsigned blocks, unsigned threads,
                cudaStream_t stream);

}  // namespace rooflab::calib
