// Host-side declarations of the calibration kernels' launchers (private to rooflab_cuda), and what every
// build of them shares: the kernels' names and launch shapes.
//
// Three sources define the launchers, one per build (common/CMakeLists.txt):
//   calibration_kernels.cu     the kernels and <<<>>> launches: the full course (nvcc, and the CPU backend)
//   calibration_loader.cpp     a student copy on a GPU: the same kernels from the fatbinary the release ships
//                              (common/prebuilt/), loaded with the runtime's library API
//   calibration_standins.cu    a student copy on the CPU backend: slow stand-ins, for dry runs only
#pragma once

#include <rooflab/cuda.hpp>

#include <cstddef>

namespace rooflab::calib {

// extern "C" names, so that the loader finds the kernels in a fatbinary by name.
inline constexpr const char* kCopyKernelName = "rooflab_calib_copy_vec4_kernel";
inline constexpr const char* kFmaKernelName = "rooflab_calib_fma_peak_kernel";

inline constexpr unsigned kCopyBlock = 256;
// Grid-stride blocks per SM for the copy: enough to keep every SM's memory pipeline full.
inline constexpr unsigned kCopyBlocksPerSm = 32;
// Independent FMA chains per thread of the FMA kernel; each iteration is FMA_CHAINS FMAs.
inline constexpr int FMA_CHAINS = 8;

// FLOPs of one FMA launch (two per FMA).
inline double fma_flops(int iterations, unsigned blocks, unsigned threads) {
  return 2.0 * FMA_CHAINS * static_cast<double>(iterations) * blocks * threads;
}

void copy_vec4(const float4* in, float4* out, std::size_t n4, int sms, cudaStream_t stream);
// Launches the FMA kernel and returns the FLOPs it performs.
double fma_peak(float a, float b, int iterations, float* out, unsigned blocks, unsigned threads,
                cudaStream_t stream);

}  // namespace rooflab::calib
