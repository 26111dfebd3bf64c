// Kernels for the traffic model's self-tests (test_traffic.cpp): each access pattern has a known number of
// sectors per request and known DRAM bytes. Ordinary CUDA, also compiled by nvcc.
#include "traffic_kernels.hpp"

#include <rooflab/check.hpp>

#include <cuda_pipeline.h>

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

// The same through shared memory with cp.async: each lane copies 16 bytes (the last warp of the block zero-fills
// its second half: 8 bytes read, 16 written), waits, and writes the float4 back.
__global__ void copy_async_kernel(const float4* in, float4* out, int n4) {
  __shared__ __align__(16) float4 tile[128];
  const int t = static_cast<int>(threadIdx.x);
  const int i = static_cast<int>(blockIdx.x * blockDim.x) + t;
  const bool half = t >= 96;  // the block's last warp copies 8 bytes and zero-fills 8
  if (i < n4) __pipeline_memcpy_async(&tile[t], &in[i], 16, half ? 8 : 0);
  __pipeline_commit();
  __pipeline_wait_prior(0);
  if (i < n4) out[i] = tile[t];
}

// One warp: lane l stores to word l * stride of a shared array, then loads it back into out[l]. The lanes
// share gcd(stride, 32) to a bank: stride 1 and 33 (a 32-wide tile padded by one) are conflict-free, 32 has
// all 32 lanes in one bank.
__global__ void shared_strided_kernel(float* out, int stride) {
  __shared__ float words[32 * 33];
  const int l = static_cast<int>(threadIdx.x);
  words[l * stride] = static_cast<float>(l);
  __syncwarp();
  out[l] = words[l * stride];
}

// One warp, 16 bytes per lane: lane l stores float4 l * stride and loads it back. Stride 1 is 512 contiguous
// bytes, 4 wavefronts (the fewest for 512 bytes); stride 2 puts 8 words in each bank it uses: 8 wavefronts.
__global__ void shared_vec4_kernel(float4* out, int stride) {
  __shared__ float4 quads[64];
  const int l = static_cast<int>(threadIdx.x);
  const float f = static_cast<float>(l);
  quads[l * stride] = make_float4(f, f + 0.25f, f + 0.5f, f + 0.75f);
  __syncwarp();
  out[l] = quads[l * stride];
}

// One warp, 16 bytes per lane, as an ldmatrix .x4 reads a 16 x 16 tile of halves whose rows are `row_floats`
// floats apart: lanes 8m .. 8m + 7 name the 8 rows of matrix m (rows 0-7 or 8-15, the left or right 16 bytes). Rows 8
// floats (32 bytes) apart put rows r and r + 4 of each matrix in the same banks: 2-way within each group of 8 lanes,
// 8 wavefronts, though over all 32 lanes no bank holds more than 4 of the words. Rows 12 floats apart (padded by 16
// bytes): 4.
__global__ void shared_rows16_kernel(float4* out, int row_floats) {
  __shared__ float tile[16 * 12];
  const int l = static_cast<int>(threadIdx.x), m = l / 8;
  const int at = (l % 8 + (m % 2) * 8) * row_floats + (m / 2) * 4;
  const float f = static_cast<float>(l);
  *reinterpret_cast<float4*>(&tile[at]) = make_float4(f, f + 0.25f, f + 0.5f, f + 0.75f);
  __syncwarp();
  out[l] = *reinterpret_cast<const float4*>(&tile[at]);
}

// One warp: lane 0 stores a word, every lane loads it (one word for all: a broadcast, 1 wavefront).
__global__ void shared_broadcast_kernel(float* out) {
  __shared__ float word;
  const int l = static_cast<int>(threadIdx.x);
  if (l == 0) word = 42.0f;
  __syncwarp();
  out[l] = word + static_cast<float>(l);
}

void shared_strided(float* out, int stride) {
  shared_strided_kernel<<<1, 32>>>(out, stride);
  ROOFLAB_LAUNCH_CHECK();
}

void shared_rows16(float4* out, int row_floats) {
  shared_rows16_kernel<<<1, 32>>>(out, row_floats);
  ROOFLAB_LAUNCH_CHECK();
}

void shared_vec4(float4* out, int stride) {
  shared_vec4_kernel<<<1, 32>>>(out, stride);
  ROOFLAB_LAUNCH_CHECK();
}

void shared_broadcast(float* out) {
  shared_broadcast_kernel<<<1, 32>>>(out);
  ROOFLAB_LAUNCH_CHECK();
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

void copy_async(const float4* in, float4* out, int n4) {
  copy_async_kernel<<<(n4 + 127) / 128, 128>>>(in, out, n4);
  ROOFLAB_LAUNCH_CHECK();
}

void copy_via_shared(const float* in, float* out, int n) {
  copy_via_shared_kernel<<<(n + 255) / 256, 256>>>(in, out, n);
  ROOFLAB_LAUNCH_CHECK();
}

}  // namespace traffictest
