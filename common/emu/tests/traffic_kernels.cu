// Kernels for the traffic model's self-tests (test_traffic.cpp): each access pattern has a known number of
// sectors per request and known DRAM bytes. Ordinary CUDA, also compiled by nvcc.
#include "traffic_kernels.hpp"

#include <rooflab/check.hpp>

namespace traffictest {

// One load site: lane t of a warp reads in[(w * 32 + t) * stride], so a request spans 32 * stride floats.
__global__ void strided_read_kernel(const float* in, float* out, int n, int stride) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) out[i] = in[static_cast<long long>(i) * stride];
}

// A float4 per lane: one 16-byte load and one 16-byte store per thread.
__global__ void copy_vec4_kernel(const float4* in, float4* out, int n4) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n4) {
    const float4 v = in[i];
    out[i] = make_float4(v.x, v.y, v.z, v.w);
  }
}

// Block b reads chunk b, then chunk b + gridDim/2 (mod the grid): the second read of a chunk comes about
// half the grid's blocks, one input's worth of loads, after the first.
__global__ void read_twice_kernel(const float* in, float* out, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int j = (i + n / 2) % n;
  out[i] = in[i] + in[j];
}

__global__ void copy_via_shared_kernel(const float* in, float* out, int n) {
  __shared__ float tile[256];
  const int t = static_cast<int>(threadIdx.x);
  const int i = static_cast<int>(blockIdx.x * blockDim.x) + t;
  tile[t] = i < n ? in[i] : 0.0f;
  __syncthreads();
  // Each thread writes the element its neighbour loaded: the values pass through shared memory.
  const int k = (t + 1) % 256;
  const int o = static_cast<int>(blockIdx.x * blockDim.x) + k;
  if (o < n) out[o] = tile[k];
}

void strided_read(const float* in, float* out, int n, int stride) {
  strided_read_kernel<<<(n + 255) / 256, 256>>>(in, out, n, stride);
  ROOFLAB_LAUNCH_CHECK();
}

void copy_vec4(const float4* in, float4* out, int n4) {
  copy_vec4_kernel<<<(n4 + 255) / 256, 256>>>(in, out, n4);
  ROOFLAB_LAUNCH_CHECK();
}

void read_twice(const float* in, float* out, int n) {
  read_twice_kernel<<<n / 256, 256>>>(in, out, n);
  ROOFLAB_LAUNCH_CHECK();
}

void copy_via_shared(const float* in, float* out, int n) {
  copy_via_shared_kernel<<<(n + 255) / 256, 256>>>(in, out, n);
  ROOFLAB_LAUNCH_CHECK();
}

}  // namespace traffictest
