// Kernels that measure the CPU backend's own costs (emu_bench.cpp): a thread that does nothing, and a
// thread that does nothing but wait at barriers.
#include <rooflab/check.hpp>

namespace emubench {

__global__ void empty_kernel(int* sink) {
  if (threadIdx.x == 1u << 30) *sink = 1;  // never true: keeps the kernel from being empty
}

__global__ void barrier_kernel(int barriers) {
  for (int i = 0; i < barriers; ++i) __syncthreads();
}

void empty(unsigned blocks, unsigned threads, int* sink) {
  empty_kernel<<<dim3(blocks), dim3(threads)>>>(sink);
  ROOFLAB_LAUNCH_CHECK();
}
void barriers(unsigned blocks, unsigned threads, int count) {
  barrier_kernel<<<dim3(blocks), dim3(threads)>>>(count);
  ROOFLAB_LAUNCH_CHECK();
}

}  // namespace emubench
