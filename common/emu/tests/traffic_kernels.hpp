// Launchers of the traffic model's self-test kernels (traffic_kernels.cu): access patterns whose
// coalescing and DRAM bytes are known in closed form.
#pragma once

#include <rooflab/cuda.hpp>

namespace traffictest {
// out[i] = in[i * stride], i < n: 32 lanes of a warp read 32 floats `stride` apart.
void strided_read(const float* in, float* out, int n, int stride);
// out[i] = in[i] as float4, i < n4: 16 bytes per lane, consecutive.
void copy_vec4(const float4* in, float4* out, int n4);
// Each block reads its own chunk of `in` and then the chunk half the grid away, so every chunk is read
// twice, about one input's size of traffic apart: out[i] = in[i] + in[(i + n/2) % n]. n a multiple of 256.
void read_twice(const float* in, float* out, int n);
// out = in through shared memory with cp.async (__pipeline_memcpy_async, blocks of 128 threads, 16 bytes each);
// lanes 96-127 of a block copy 8 bytes and zero-fill the other 8. n4 a multiple of 128.
void copy_async(const float4* in, float4* out, int n4);
// out = in through a shared-memory tile (256 floats per block): shared-memory accesses are not global bytes.
void copy_via_shared(const float* in, float* out, int n);
// Shared-memory patterns whose bank conflicts are known (one warp each, out: 32 elements):
// lane l stores and loads word l * stride (stride 1 to 33) of a shared array;
void shared_strided(float* out, int stride);
// lane l stores and loads float4 l * stride (stride 1 or 2);
void shared_vec4(float4* out, int stride);
void shared_rows16(float4* out, int row_floats);
// lane 0 stores a word and every lane loads it: out[l] = 42 + l.
void shared_broadcast(float* out);
}  // namespace traffictest
