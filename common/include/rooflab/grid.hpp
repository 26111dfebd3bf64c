// What every grid-stride kernel needs: this thread's index in the grid, the grid's size in threads, and
// (host side) the number of SMs to size grids by. For .cu files (nvcc or the CPU backend).
#pragma once

#include <rooflab/check.hpp>
#include <rooflab/cuda.hpp>

#include <cstddef>

namespace rooflab {

#if defined(__CUDACC__) || defined(ROOFLAB_EMU)
// Index of this thread in the whole (1D) grid, and the number of threads in the grid.
__device__ inline std::size_t global_thread() {
  return static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline std::size_t grid_threads() { return static_cast<std::size_t>(gridDim.x) * blockDim.x; }
#endif

// The number of SMs of the current device, asked once.
inline unsigned sm_count() {
  static const unsigned count = [] {
    int device = 0;
    int sms = 0;
    ROOFLAB_CUDA_CHECK(cudaGetDevice(&device));
    ROOFLAB_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    return static_cast<unsigned>(sms);
  }();
  return count;
}

}  // namespace rooflab
