// Kernels for the self-tests of what the CPU backend must not let through: a copy that reads and writes one
// element past the end (canaries), a vectorised copy whose last float4 overruns, a misaligned float4 and
// a __half overrun. Also compiled by nvcc (they are ordinary CUDA, bugs included).
#include "trust_kernels.hpp"

#include <rooflab/launch.hpp>

namespace emutest {

// Reads in[n] and writes out[n]: past both ends. When n is not a multiple of 4 floats both land in the
// alignment padding (no guard page), so only the canaries, different in the two buffers, tell.
__global__ void copy_inclusive_kernel(const float* in, float* out, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i <= n) out[i] = in[i];  // (bug: should be i < n)
}

// A float4 copy sized by rounding n up to whole vectors: the last vector reads and writes up to 3 floats
// past the end (bug: the tail needs a scalar loop).
__global__ void copy_float4_rounded_up_kernel(const float4* in, float4* out, int vectors) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < vectors) out[i] = in[i];
}

__global__ void peek_bytes_kernel(const unsigned char* in, int from, int count, unsigned char* out) {
  const int i = static_cast<int>(threadIdx.x);
  if (i < count) out[i] = in[from + i];
}

// float4 needs 16-byte alignment: in + 1 is 4 bytes past it (bug). The CPU backend checks the pointer
// where reinterpret_cast makes it.
__global__ void misaligned_float4_kernel(const float* in, float* out) {
  const float4 v = reinterpret_cast<const float4*>(in + 1)[threadIdx.x];
  reinterpret_cast<float4*>(out)[threadIdx.x] = v;
}

// The same bug through a C-style cast, which the rewriter leaves alone: the access itself faults on the CPU
// (an aligned SSE load), and the fault handler reports it.
__global__ void misaligned_float4_cast_kernel(const float* in, float* out) {
  const float4 v = ((const float4*)(in + 1))[threadIdx.x];
  ((float4*)out)[threadIdx.x] = v;
}

__global__ void half_off_by_one_kernel(__half* out, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i <= n) out[i] = __float2half(1.0f);  // (bug: should be i < n)
}

// ---- launchers ----

void copy_inclusive(const float* in, float* out, int n) {
  rooflab::launch(copy_inclusive_kernel, dim3(static_cast<unsigned>((n + 1 + 127) / 128)), dim3(128), 0, nullptr,
                  in, out, n);
}
void copy_float4_rounded_up(const float* in, float* out, int n) {
  const int vectors = (n + 3) / 4;
  rooflab::launch(copy_float4_rounded_up_kernel, dim3(static_cast<unsigned>((vectors + 63) / 64)), dim3(64), 0,
                  nullptr, reinterpret_cast<const float4*>(in), reinterpret_cast<float4*>(out), vectors);
}
void peek_bytes(const unsigned char* in, int from, int count, unsigned char* out) {
  rooflab::launch(peek_bytes_kernel, dim3(1), dim3(static_cast<unsigned>(count)), 0, nullptr, in, from, count, out);
}
void misaligned_float4(const float* in, float* out) {
  rooflab::launch(misaligned_float4_kernel, dim3(1), dim3(4), 0, nullptr, in, out);
}
void misaligned_float4_cast(const float* in, float* out) {
  rooflab::launch(misaligned_float4_cast_kernel, dim3(1), dim3(4), 0, nullptr, in, out);
}
void half_off_by_one(__half* out, int n) {
  rooflab::launch(half_off_by_one_kernel, dim3(static_cast<unsigned>((n + 1 + 127) / 128)), dim3(128), 0, nullptr,
                  out, n);
}

}  // namespace emutest
