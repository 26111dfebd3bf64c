// Kernels for the test of the dry run's read accounting: one thread per output element, grid-stride free.
#include "timed_reads_kernels.hpp"

namespace timedtest {

__global__ void scale_kernel(const float* in, float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 2.0f * in[i] + 1.0f;
}

__global__ void copy_kernel(const float* kept, float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = kept[i];
}

__global__ void sliver_kernel(const float* in, float* out, int n, int stride) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i % stride];
}

__global__ void touch_pages_kernel(const float* in, float* sink, int n) {
  const int i = (blockIdx.x * blockDim.x + threadIdx.x) * 1024;
  if (i < n) sink[i / 1024] = in[i];
}

namespace {
unsigned blocks(int n) { return static_cast<unsigned>((n + 255) / 256); }
}  // namespace

void scale(const float* in, float* out, int n, cudaStream_t stream) { scale_kernel<<<blocks(n), 256, 0, stream>>>(in, out, n); }
void copy(const float* kept, float* out, int n, cudaStream_t stream) { copy_kernel<<<blocks(n), 256, 0, stream>>>(kept, out, n); }
void sliver(const float* in, float* out, int n, int stride, cudaStream_t stream) {
  sliver_kernel<<<blocks(n), 256, 0, stream>>>(in, out, n, stride);
}
void touch_pages(const float* in, float* sink, int n, cudaStream_t stream) {
  touch_pages_kernel<<<blocks((n + 1023) / 1024), 256, 0, stream>>>(in, sink, n);
}

}  // namespace timedtest
