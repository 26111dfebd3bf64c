// Lab 08: weight-only quantization - fewer bytes per weight, the same GEMV, a bounded error.
//
//   quantize_int8_kernel    FP16 -> int8 in groups of 32 with an FP16 scale (Q8_0-like)
//   dequantize_int8_kernel  back to FP16 (for the error tests)
//   quantize_int4_kernel    FP16 -> int4 in groups of 32 or 128, two weights per byte
//   dequantize_int4_kernel  back to FP16
//   gemv_int8_kernel        y = W x reading the int8 layout: 8.5 bits per weight instead of 16
//   gemv_int4_kernel        the same on the int4 layout: 4.5 or 4.125 bits per weight
//
// A batch-1 GEMV's time is its weights' bytes over the bandwidth (Lab 07), so a GEMV that reads 8.5 bits per
// weight instead of 16 can be up to 1.9x faster, and one that reads 4.125 up to 3.9x: if it still streams at
// the copy ceiling. That needs what Lab 07's GEMV did (a warp per row, 128-bit loads, coalesced) plus a
// dequantization cheap enough to hide under the loads: unpacked in registers, one scale per group, FP32
// sums, nothing written back. Handout: README.md, sections "Group-wise quantization and its error" and
// "The quantized GEMV".
#include "kernels.hpp"

#include <rooflab/grid.hpp>
#include <rooflab/launch.hpp>
#include <rooflab/stub.hpp>
#include <rooflab/warp.hpp>

#include <cstdint>
#include <cstring>

namespace lab08 {

// ---- PROVIDED: do not modify ----

using rooflab::sm_count;     // SMs of the current device
using rooflab::warp_sum;     // the sum over the warp, in every lane (rooflab/warp.hpp)
using rooflab::load_halves;  // load_halves<8>: 16 bytes of halves as floats, one 128-bit load (rooflab/warp.hpp)

inline constexpr unsigned kBlock = 256;  // 8 warps (GEMVs: one row of W per warp at a time)
inline constexpr int kWarpsPerBlock = kBlock / 32;

// This warp's index in the grid and the number of warps in it: rows are handed out warp by warp.
__device__ inline int global_warp() { return static_cast<int>((blockIdx.x * blockDim.x + threadIdx.x) / 32); }
__device__ inline int grid_warps() { return static_cast<int>(gridDim.x * blockDim.x / 32); }
// This thread's index in the grid and the number of threads in it (the quantizers: one group per thread).
__device__ inline std::size_t global_thread() { return static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ inline std::size_t grid_threads() { return static_cast<std::size_t>(gridDim.x) * blockDim.x; }

// A float as FP16, saturated at +-65504 instead of rounding to infinity: the scale is rounded to FP16, so
// scale x qmax can pass the group's absmax (65504 / 7 rounds up to 9360, and 7 x 9360 = 65520 is infinity).
__device__ inline __half to_fp16_saturated(float v) { return __float2half(fminf(fmaxf(v, -65504.0f), 65504.0f)); }

// ---- quantize and dequantize: one thread per group ----
//
// The groups of W follow one another in memory (lab.hpp), so group G is weights [G group, (G + 1) group) and
// scale G, whatever n and k are: these kernels walk `groups` groups and never need the matrix's shape.

__global__ void quantize_int8_kernel(const __half* __restrict__ w, std::int8_t* __restrict__ q,
                                     __half* __restrict__ scales, std::size_t groups) {
  // STUDENT BEGIN (lab08.quantize_int8)
  // Symmetric: the scale maps the group's largest magnitude to 127, so that both signs use the whole range.
  // The quantizer divides by the FP16 scale it stores, which is what dequantization will multiply by; a group
  // of zeros has scale 0 and must not divide by it (0 / 0 is NaN).
  for (std::size_t g = global_thread(); g < groups; g += grid_threads()) {
    const __half* v = w + g * kInt8Group;
    float absmax = 0.0f;
    for (int i = 0; i < kInt8Group; ++i) absmax = fmaxf(absmax, fabsf(__half2float(v[i])));
    const __half scale = __float2half(absmax / kInt8Max);
    scales[g] = scale;
    const float s = __half2float(scale);
    for (int i = 0; i < kInt8Group; ++i) {
      const float r = s > 0.0f ? rintf(__half2float(v[i]) / s) : 0.0f;
      q[g * kInt8Group + i] = static_cast<std::int8_t>(fminf(fmaxf(r, -kInt8Max), kInt8Max));
    }
  }
  // STUDENT END
}

__global__ void dequantize_int8_kernel(const std::int8_t* __restrict__ q, const __half* __restrict__ scales,
                                       __half* __restrict__ w, std::size_t groups) {
  // STUDENT BEGIN (lab08.dequantize_int8)
  for (std::size_t g = global_thread(); g < groups; g += grid_threads()) {
    const float s = __half2float(scales[g]);
    for (int i = 0; i < kInt8Group; ++i) w[g * kInt8Group + i] = to_fp16_saturated(s * q[g * kInt8Group + i]);
  }
  // STUDENT END
}

__global__ void quantize_int4_kernel(const __half* __restrict__ w, std::uint8_t* __restrict__ q,
                                     __half* __restrict__ scales, std::size_t groups, int group) {
  // STUDENT BEGIN (lab08.quantize_int4)
  // The int8 quantizer with qmax 7, then two weights per byte: weight 2b in the low nibble, 2b + 1 in the
  // high one, each as q + 8 (lab.hpp).
  for (std::size_t g = global_thread(); g < groups; g += grid_threads()) {
    const __half* v = w + g * group;
    float absmax = 0.0f;
    for (int i = 0; i < group; ++i) absmax = fmaxf(absmax, fabsf(__half2float(v[i])));
    const __half scale = __float2half(absmax / kInt4Max);
    scales[g] = scale;
    const float s = __half2float(scale);
    for (int i = 0; i < group; i += 2) {
      int nib[2];
      for (int j = 0; j < 2; ++j) {
        const float r = s > 0.0f ? rintf(__half2float(v[i + j]) / s) : 0.0f;
        nib[j] = static_cast<int>(fminf(fmaxf(r, -kInt4Max), kInt4Max)) + kInt4Zero;
      }
      q[(g * group + i) / 2] = static_cast<std::uint8_t>(nib[0] | (nib[1] << 4));
    }
  }
  // STUDENT END
}

__global__ void dequantize_int4_kernel(const std::uint8_t* __restrict__ q, const __half* __restrict__ scales,
                                       __half* __restrict__ w, std::size_t groups, int group) {
  // STUDENT BEGIN (lab08.dequantize_int4)
  for (std::size_t g = global_thread(); g < groups; g += grid_threads()) {
    const float s = __half2float(scales[g]);
    for (int i = 0; i < group; i += 2) {
      const unsigned byte = q[(g * group + i) / 2];
      w[g * group + i] = to_fp16_saturated(s * static_cast<float>(static_cast<int>(byte & 0xFu) - kInt4Zero));
      w[g * group + i + 1] = to_fp16_saturated(s * static_cast<float>(static_cast<int>(byte >> 4) - kInt4Zero));
    }
  }
  // STUDENT END
}

// ---- the int8 GEMV ----

__global__ void gemv_int8_kernel(const std::int8_t* __restrict__ q, const __half* __restrict__ scales,
                                 const __half* __restrict__ x, __half* __restrict__ y, int n, int k) {
  // STUDENT BEGIN (lab08.gemv_int8)
  // Lab 07's warp per row on a quarter of the bytes per load: a lane reads 16 int8 weights (half a group) in
  // one 128-bit load, and the warp 512 contiguous bytes. The 16 products are summed unscaled and the group's
  // scale applied once to the partial sum: one multiply per 16 weights instead of 16.
  const int lane = threadIdx.x % 32;
  const int groups = k / kInt8Group;
  for (int row = global_warp(); row < n; row += grid_warps()) {
    const std::int8_t* q_row = q + static_cast<std::size_t>(row) * k;
    const __half* s_row = scales + static_cast<std::size_t>(row) * groups;
    float sum = 0.0f;
    for (int i = lane * 16; i < k; i += 32 * 16) {
      const uint4 raw = *reinterpret_cast<const uint4*>(q_row + i);
      std::int8_t qv[16];
      memcpy(qv, &raw, sizeof raw);  // the 16 bytes as int8 (register moves, no memory)
      float lo[8], hi[8];
      load_halves<8>(x + i, lo);  // x is k halves: it stays in L1/L2 for every row
      load_halves<8>(x + i + 8, hi);
      float part = 0.0f;
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        part = fmaf(static_cast<float>(qv[j]), lo[j], part);
        part = fmaf(static_cast<float>(qv[8 + j]), hi[j], part);
      }
      sum = fmaf(__half2float(s_row[i / kInt8Group]), part, sum);
    }
    sum = warp_sum(sum);
    if (lane == 0) y[row] = __float2half(sum);
  }
  // STUDENT END
}

// ---- the int4 GEMV ----

__global__ void gemv_int4_kernel(const std::uint8_t* __restrict__ q, const __half* __restrict__ scales,
                                 const __half* __restrict__ x, __half* __restrict__ y, int n, int k, int group) {
  // STUDENT BEGIN (lab08.gemv_int4)
  // A lane's 128-bit load now holds 32 weights, one group of 32 or a quarter of a group of 128, so one scale
  // covers it. Each 32-bit word is 8 weights: byte b's low nibble is weight 2b, its high nibble 2b + 1; the
  // nibble minus 8 is q. The warp reads 1024 weights (512 bytes) per step.
  const int lane = threadIdx.x % 32;
  const int groups = k / group;
  for (int row = global_warp(); row < n; row += grid_warps()) {
    const std::uint8_t* q_row = q + static_cast<std::size_t>(row) * (k / 2);
    const __half* s_row = scales + static_cast<std::size_t>(row) * groups;
    float sum = 0.0f;
    for (int i = lane * 32; i < k; i += 32 * 32) {
      const uint4 raw = *reinterpret_cast<const uint4*>(q_row + i / 2);
      const unsigned words[4] = {raw.x, raw.y, raw.z, raw.w};
      float part = 0.0f;
#pragma unroll
      for (int wd = 0; wd < 4; ++wd) {
        float xv[8];
        load_halves<8>(x + i + wd * 8, xv);
#pragma unroll
        for (int b = 0; b < 4; ++b) {
          const unsigned byte = words[wd] >> (8 * b);
          part = fmaf(static_cast<float>(static_cast<int>(byte & 0xFu) - kInt4Zero), xv[2 * b], part);
          part = fmaf(static_cast<float>(static_cast<int>((byte >> 4) & 0xFu) - kInt4Zero), xv[2 * b + 1], part);
        }
      }
      sum = fmaf(__half2float(s_row[i / group]), part, sum);
    }
    sum = warp_sum(sum);
    if (lane == 0) y[row] = __float2half(sum);
  }
  // STUDENT END
}

// ---- launchers ----

// One thread per group, enough blocks to fill the GPU, never more than there are groups.
unsigned blocks_for_groups(std::size_t groups) { return rooflab::grid_for(groups, kBlock, 8 * sm_count()); }
// Enough warps to keep every SM's loads in flight, never more than there are rows.
unsigned blocks_for_rows(int n) { return rooflab::grid_for(static_cast<std::size_t>(n), kWarpsPerBlock, 16 * sm_count()); }

void quantize_int8(const __half* w, std::int8_t* q, __half* scales, int n, int k, cudaStream_t stream) {
  // STUDENT BEGIN (lab08.quantize_int8.launch)
  const std::size_t groups = static_cast<std::size_t>(n) * k / kInt8Group;
  quantize_int8_kernel<<<blocks_for_groups(groups), kBlock, 0, stream>>>(w, q, scales, groups);
  ROOFLAB_LAUNCH_CHECK();
  // STUDENT END
}

void dequantize_int8(const std::int8_t* q, const __half* scales, __half* w, int n, int k, cudaStream_t stream) {
  // STUDENT BEGIN (lab08.dequantize_int8.launch)
  const std::size_t groups = static_cast<std::size_t>(n) * k / kInt8Group;
  dequantize_int8_kernel<<<blocks_for_groups(groups), kBlock, 0, stream>>>(q, scales, w, groups);
  ROOFLAB_LAUNCH_CHECK();
  // STUDENT END
}

void quantize_int4(const __half* w, std::uint8_t* q, __half* scales, int n, int k, int group, cudaStream_t stream) {
  // STUDENT BEGIN (lab08.quantize_int4.launch)
  const std::size_t groups = static_cast<std::size_t>(n) * k / group;
  quantize_int4_kernel<<<blocks_for_groups(groups), kBlock, 0, stream>>>(w, q, scales, groups, group);
  ROOFLAB_LAUNCH_CHECK();
  // STUDENT END
}

void dequantize_int4(const std::uint8_t* q, const __half* scales, __half* w, int n, int k, int group,
                     cudaStream_t stream) {
  // STUDENT BEGIN (lab08.dequantize_int4.launch)
  const std::size_t groups = static_cast<std::size_t>(n) * k / group;
  dequantize_int4_kernel<<<blocks_for_groups(groups), kBlock, 0, stream>>>(q, scales, w, groups, group);
  ROOFLAB_LAUNCH_CHECK();
  // STUDENT END
}

void gemv_int8(const std::int8_t* q, const __half* scales, const __half* x, __half* y, int n, int k,
               cudaStream_t stream) {
  // STUDENT BEGIN (lab08.gemv_int8.launch)
  gemv_int8_kernel<<<blocks_for_rows(n), kBlock, 0, stream>>>(q, scales, x, y, n, k);
  ROOFLAB_LAUNCH_CHECK();
  // STUDENT END
}

void gemv_int4(const std::uint8_t* q, const __half* scales, const __half* x, __half* y, int n, int k, int group,
               cudaStream_t stream) {
  // STUDENT BEGIN (lab08.gemv_int4.launch)
  gemv_int4_kernel<<<blocks_for_rows(n), kBlock, 0, stream>>>(q, scales, x, y, n, k, group);
  ROOFLAB_LAUNCH_CHECK();
  // STUDENT END
}

}  // namespace lab08
