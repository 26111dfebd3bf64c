// A launch helper for code that prefers a function to `<<<>>>` (the labs use `<<<>>>`, which both backends
// accept: the CPU backend rewrites it, docs/cpu-mode.md). Under nvcc it is exactly
// kernel<<<grid, block, smem, stream>>>; under the CPU backend it hands the kernel to the emulator's
// scheduler. Either way the launch is checked.
//
//   rooflab::launch(triad_kernel, grid, block, 0, stream, a, b, c, scalar, n);
//
// ROOFLAB_DYNAMIC_SHARED(float, tile); is the older spelling of `extern __shared__ float tile[];`, kept for
// code written before the rewriter.
#pragma once

#include <rooflab/check.hpp>
#include <rooflab/cuda.hpp>

#include <cstddef>
#include <utility>

namespace rooflab {

#if defined(__CUDACC__) || defined(ROOFLAB_EMU)
template <typename... KernelArgs, typename... Args>
void launch(void (*kernel)(KernelArgs...), dim3 grid, dim3 block, std::size_t dynamic_smem, cudaStream_t stream,
            Args&&... args) {
#if defined(__CUDACC__)
  kernel<<<grid, block, dynamic_smem, stream>>>(std::forward<Args>(args)...);
#else
  emu::launch(kernel, grid, block, dynamic_smem, stream, std::forward<Args>(args)...);
#endif
  ROOFLAB_LAUNCH_CHECK();
}
#endif

// Blocks for a grid-stride loop over n elements: enough to fill the GPU, never more than the data needs.
constexpr unsigned grid_for(std::size_t n, unsigned block, unsigned max_blocks) {
  const std::size_t needed = (n + block - 1) / block;
  return static_cast<unsigned>(needed < max_blocks ? (needed == 0 ? 1 : needed) : max_blocks);
}

// Marks a stub kernel's parameters as used (a stub kernel has no body yet; device code cannot throw).
template <typename... T>
__host__ __device__ constexpr void unused(const T&... /*values*/) {}

}  // namespace rooflab

#if defined(__CUDACC__)
#define ROOFLAB_DYNAMIC_SHARED(T, name)                                      \
  extern __shared__ __align__(16) unsigned char rooflab_dynamic_smem_[];     \
  T* name = reinterpret_cast<T*>(rooflab_dynamic_smem_)
#else
#define ROOFLAB_DYNAMIC_SHARED(T, name) T* name = static_cast<T*>(::rooflab::emu::dynamic_shared_memory())
#endif
