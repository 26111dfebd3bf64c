// What warp-per-row kernels need (Labs 05, 06 and 07, and any lab that reads FP16 rows): a warp-wide sum
// and maximum, and FP16 loads as wide as the data allows. For .cu files (nvcc or the CPU backend).
#pragma once

#include <rooflab/cuda.hpp>

#include <cuda_fp16.h>

#include <cstring>
#include <type_traits>

namespace rooflab {

#if defined(__CUDACC__) || defined(ROOFLAB_EMU)
// The sum of v over the (full) warp, in every lane: a butterfly of five shuffles, no shared memory.
__device__ inline float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// The maximum of v over the (full) warp, in every lane (a row's max for a stable softmax).
__device__ inline float warp_max(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// N consecutive halves from p as floats, in one load of 2N bytes (N = 2, 4 or 8: a 32-, 64- or 128-bit
// load; p must be aligned to 2N bytes).
// The halves held in a register value already loaded (unsigned, uint2 or uint4: 2, 4 or 8 halves) as floats;
// for code that issues its loads early and converts later. By value: a reference to global memory here would
// let the compiler read the halves one by one instead of in one wide load.
template <typename Raw, int N>
__device__ inline void halves_to_floats(const Raw raw, float (&out)[N]) {
  static_assert(sizeof(Raw) == 2 * N, "the raw value holds exactly N halves");
  __half2 pairs[N / 2];
  memcpy(static_cast<void*>(pairs), &raw, sizeof raw);  // the bytes as half pairs (compiles to nothing)
#pragma unroll
  for (int i = 0; i < N / 2; ++i) {
    const float2 f = __half22float2(pairs[i]);
    out[2 * i] = f.x;
    out[2 * i + 1] = f.y;
  }
}

template <int N>
__device__ inline void load_halves(const __half* p, float (&out)[N]) {
  static_assert(N == 2 || N == 4 || N == 8, "a load moves 2, 4 or 8 halves");
  using Raw = std::conditional_t<N == 2, unsigned, std::conditional_t<N == 4, uint2, uint4>>;
  const Raw raw = *reinterpret_cast<const Raw*>(p);  // the one wide load
  halves_to_floats(raw, out);
}
#endif

}  // namespace rooflab
