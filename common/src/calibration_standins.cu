// Stand-ins for the calibration kernels in a student copy's dry runs (./rooflab release; docs/cpu-mode.md,
// "Dry runs"). A copy ships the real kernels only compiled for GPUs, which the CPU backend cannot run, so its
// dry-run build (rooflab::cuda_dryrun) launches these instead. They prove that the calibration code around them
// runs, and nothing more: dry-run figures describe no GPU, and say so.
//
// They are deliberately the slow forms, not the ones a lab asks for: one float per thread with no grid-stride
// loop and no wide loads (the copy), and a single dependent chain of FMAs (the FMA kernel), which leaves the
// FMA pipes idle while each result waits for the one before. The full course compiles calibration_kernels.cu
// here instead; this file is not built there.
#include "calibration_kernels.hpp"

#include <rooflab/launch.hpp>

namespace rooflab::calib {

// Thread t copies float t; the grid has a thread for every float.
__global__ void standin_copy_kernel(const float* in, float* out, std::size_t count) {
  const std::size_t t = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t < count) out[t] = in[t];
}

// The same FMAs as the real kernel (FMA_CHAINS per iteration, so the FLOPs returned are true), one at a time.
// Written as a countdown: the counting loop of one chain is a line of Lab 03's answer (grader.release's
// solution-line check finds it by its shape).
__global__ void standin_fma_kernel(float a, float b, int fmas, float* out) {
  float x = static_cast<float>(threadIdx.x);
  int left = fmas;
  while (left-- > 0) x = fmaf(x, a, b);
  out[static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x] = x;
}

void copy_vec4(const float4* in, float4* out, std::size_t n4, int /*sms*/, cudaStream_t stream) {
  const std::size_t count = 4 * n4;
  const auto blocks = static_cast<unsigned>((count + kCopyBlock - 1) / kCopyBlock);
  standin_copy_kernel<<<blocks == 0 ? 1 : blocks, kCopyBlock, 0, stream>>>(
      reinterpret_cast<const float*>(in), reinterpret_cast<float*>(out), count);
  ROOFLAB_LAUNCH_CHECK();
}

double fma_peak(float a, float b, int iterations, float* out, unsigned blocks, unsigned threads,
                cudaStream_t stream) {
  standin_fma_kernel<<<blocks, threads, 0, stream>>>(a, b, iterations * FMA_CHAINS, out);
  ROOFLAB_LAUNCH_CHECK();
  return fma_flops(iterations, blocks, threads);
}

}  // namespace rooflab::calib
