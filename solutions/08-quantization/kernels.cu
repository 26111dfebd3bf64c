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
  // of zeros has scale 0 and must not divide by it (0 / 0 is NaN). The scale is rounded up (_ru): a scale no
  // smaller than absmax / 127 puts every w / s inside [-127, 127], so nothing clips. Round to nearest would do
  // as well for a normal FP16 scale (it is off by at most 2^-11 of itself), but below 2^-14 FP16's steps are
  // 2^-24 apart, and a tiny group's nearest scale can be half of absmax / 127, or 0.
  for (std::size_t g = global_thread(); g < groups; g += grid_threads()) {
    const __half* v = w + g * kInt8Group;
    float absmax = 0.0f;
    for (int i = 0; i < kInt8Group; ++i) absmax = fmaxf(absmax, fabsf(__half2float(v[i])));
    const __half scale = __float2half_ru(absmax / kInt8Max);
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
    const __half scale = __float2half_ru(absmax / kInt4Max);
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
  // one 128-bit load, the warp 512 contiguous bytes of a row per step. What keeps it near the copy roof:
  // - x read once for several rows. Every row multiplies the same x, and x is 2 bytes per weight against
  //   the weights' 1: a warp that takes one row at a time moves twice the weights' bytes of x through L1 and
  //   converts every x value once per row. A warp here takes kRows rows at once: each 16 bytes of x it
  //   loads and converts serve kRows rows' weights.
  // - Loads overlap the math. A lane issues the loads of the step kAhead = 2 steps ahead (kRows rows x kSteps
  //   chunks, and their scales) before it does this step's math, so its bytes are on their way while it
  //   unpacks. Without it the warps of a wave load together, then compute together, and the memory idles
  //   while they compute (measured on an H100: the time was the load time plus the math's). With one step
  //   ahead, each warp's 16 steps still waited for DRAM one after another: the grid is under one wave (every
  //   warp resident from the start), so the kernel took about as long as one warp's chain of 16 waits (the
  //   H200 run: 52% of the copy ceiling, issue slots 38% busy). Two steps ahead halve that chain for 24 more
  //   registers (96), which cost no occupancy: the grid holds fewer warps than the SMs could.
  // - Cheap unpacking. int -> float conversion (I2F) issues at 1/8 of the FMA rate. Instead q + 128 (the
  //   sign bit flipped) goes into the low byte of the float 2^23 (bits 0x4B000000), which makes the float
  //   2^23 + 128 + q exactly: one byte permute and one subtract per weight.
  // - FP32 sums: the 16 products of a load are summed unscaled and the group's scale applied once.
  constexpr int kRows = 4;   // rows per warp (the launcher's grid counts on it)
  constexpr int kSteps = 1;  // 128-bit loads per row per step (more: more bytes in flight, more registers)
  constexpr int kAhead = 2;  // steps of loads in flight during a step's math
  const int lane = threadIdx.x % 32;
  const int chunks = k / 16;  // 16-byte loads per row; chunk c holds weights 16c.. and is half of group c / 2
  const int groups = k / kInt8Group;
  const uint4* q16 = reinterpret_cast<const uint4*>(q);  // chunk c of row j is q16[j chunks + c]
  const uint4* x16 = reinterpret_cast<const uint4*>(x);  // x as 16-byte pieces (8 halves each)
  // The 4 int8 weights of a word as floats: byte b of the flipped word into the float 2^23, minus 2^23 + 128.
  const auto unpack4 = [](unsigned word, float* out) {
    const unsigned biased = word ^ 0x80808080u;  // q + 128 in every byte: 0 to 255
#pragma unroll
    for (int b = 0; b < 4; ++b) out[b] = __uint_as_float(__byte_perm(biased, 0x4B000000u, 0x7650u + b)) - 8388736.0f;
  };
  for (int row0 = global_warp() * kRows; row0 < n; row0 += grid_warps() * kRows) {
    // The loads of the step that starts at chunk `first` (read-only path); rows past n and chunks past k
    // load zeros.
    const auto fetch = [&](int first, uint4 (&raw)[kSteps][kRows], float (&scale)[kSteps][kRows]) {
#pragma unroll
      for (int u = 0; u < kSteps; ++u) {
#pragma unroll
        for (int r = 0; r < kRows; ++r) {
          const int c = first + 32 * u;
          const bool inside = c < chunks && row0 + r < n;
          const std::size_t row = static_cast<std::size_t>(row0 + r);
          raw[u][r] = inside ? __ldg(q16 + row * chunks + c) : make_uint4(0, 0, 0, 0);
          scale[u][r] = inside ? __half2float(__ldg(scales + row * groups + c / 2)) : 0.0f;
        }
      }
    };
    float sum[kRows] = {};
    uint4 ahead_raw[kAhead][kSteps][kRows];
    float ahead_scale[kAhead][kSteps][kRows];
#pragma unroll
    for (int a = 0; a < kAhead; ++a) fetch(lane + 32 * kSteps * a, ahead_raw[a], ahead_scale[a]);
    for (int first = lane; first < chunks; first += 32 * kSteps) {
      // This step's loads went out kAhead steps ago; the step kAhead ahead goes out now, before this step's
      // math, so each warp keeps kAhead steps of loads in flight while it computes.
      uint4 raw[kSteps][kRows];
      float scale[kSteps][kRows];
      memcpy(static_cast<void*>(raw), ahead_raw[0], sizeof raw);  // register moves
      memcpy(scale, ahead_scale[0], sizeof scale);
#pragma unroll
      for (int a = 0; a + 1 < kAhead; ++a) {
        memcpy(static_cast<void*>(ahead_raw[a]), ahead_raw[a + 1], sizeof raw);
        memcpy(ahead_scale[a], ahead_scale[a + 1], sizeof scale);
      }
      fetch(first + 32 * kSteps * kAhead, ahead_raw[kAhead - 1], ahead_scale[kAhead - 1]);
#pragma unroll
      for (int u = 0; u < kSteps; ++u) {
        const int c = first + 32 * u;
        if (c >= chunks) break;
        float part[kRows] = {};
#pragma unroll
        for (int h = 0; h < 2; ++h) {  // the chunk's two halves: words 2h and 2h + 1, 8 halves of x
          const uint4 xr = __ldg(x16 + 2 * c + h);
          __half2 xh[4];
          memcpy(static_cast<void*>(xh), &xr, sizeof xr);  // the 8 halves as pairs (register moves)
          float xf[8];
#pragma unroll
          for (int j = 0; j < 4; ++j) {
            const float2 f = __half22float2(xh[j]);
            xf[2 * j] = f.x;
            xf[2 * j + 1] = f.y;
          }
#pragma unroll
          for (int r = 0; r < kRows; ++r) {
            const unsigned words[4] = {raw[u][r].x, raw[u][r].y, raw[u][r].z, raw[u][r].w};
            float wv[8];
            unpack4(words[2 * h], wv);
            unpack4(words[2 * h + 1], wv + 4);
#pragma unroll
            for (int j = 0; j < 8; ++j) part[r] = fmaf(wv[j], xf[j], part[r]);
          }
        }
#pragma unroll
        for (int r = 0; r < kRows; ++r) sum[r] = fmaf(scale[u][r], part[r], sum[r]);
      }
    }
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const float total = warp_sum(sum[r]);
      if (lane == 0 && row0 + r < n) y[row0 + r] = __float2half(total);
    }
  }
  // STUDENT END
}

// ---- the int4 GEMV ----

__global__ void gemv_int4_kernel(const std::uint8_t* __restrict__ q, const __half* __restrict__ scales,
                                 const __half* __restrict__ x, __half* __restrict__ y, int n, int k, int group) {
  // STUDENT BEGIN (lab08.gemv_int4)
  // The int8 GEMV's loop (kRows rows per warp, the next step's loads issued before this step's math) with
  // 32 weights per 128-bit load: one group of 32, or a quarter of a group of 128, so one scale covers a
  // load. Each load now brings 4x the unpacking of an FP16 one and x is 4 bytes per weight byte, so both the
  // unpacking and x's reuse across rows matter more. Unpacking a word, in order: its low nibbles (weights
  // 0, 2, 4, 6) are word & 0x0F0F0F0F, its high ones (1, 3, 5, 7) the same after a shift by 4; a byte
  // permute puts each nibble (q + 8: 0 to 15) into the float 2^23, and subtracting 2^23 + 8 leaves q.
  constexpr int kRows = 4;   // rows per warp (the launcher's grid counts on it)
  constexpr int kSteps = 1;  // 128-bit loads per row per step (more: more bytes in flight, more registers)
  const int lane = threadIdx.x % 32;
  const int chunks = k / 32;  // 16-byte loads per row; chunk c holds weights 32c .. 32c + 31
  const int groups = k / group;
  // Chunk c is in group c * 32 / group: group is 32 or 128, so this is c or c / 4 (a shift, no division).
  const int chunk_shift = group == 128 ? 2 : 0;
  const uint4* q16 = reinterpret_cast<const uint4*>(q);  // chunk c of row j is q16[j chunks + c]
  const uint4* x16 = reinterpret_cast<const uint4*>(x);  // x as 16-byte pieces (8 halves each)
  // The 8 int4 weights of a word as floats, in order.
  const auto unpack8 = [](unsigned word, float* out) {
    const unsigned lo = word & 0x0F0F0F0Fu;         // byte b: weight 2b's nibble
    const unsigned hi = (word >> 4) & 0x0F0F0F0Fu;  // byte b: weight 2b + 1's nibble
#pragma unroll
    for (int b = 0; b < 4; ++b) {
      out[2 * b] = __uint_as_float(__byte_perm(lo, 0x4B000000u, 0x7650u + b)) - 8388616.0f;
      out[2 * b + 1] = __uint_as_float(__byte_perm(hi, 0x4B000000u, 0x7650u + b)) - 8388616.0f;
    }
  };
  for (int row0 = global_warp() * kRows; row0 < n; row0 += grid_warps() * kRows) {
    // The loads of the step that starts at chunk `first` (read-only path); rows past n and chunks past k
    // load zeros.
    const auto fetch = [&](int first, uint4 (&raw)[kSteps][kRows], float (&scale)[kSteps][kRows]) {
#pragma unroll
      for (int u = 0; u < kSteps; ++u) {
#pragma unroll
        for (int r = 0; r < kRows; ++r) {
          const int c = first + 32 * u;
          const bool inside = c < chunks && row0 + r < n;
          const std::size_t row = static_cast<std::size_t>(row0 + r);
          raw[u][r] = inside ? __ldg(q16 + row * chunks + c) : make_uint4(0, 0, 0, 0);
          scale[u][r] = inside ? __half2float(__ldg(scales + row * groups + (c >> chunk_shift))) : 0.0f;
        }
      }
    };
    float sum[kRows] = {};
    uint4 next_raw[kSteps][kRows];
    float next_scale[kSteps][kRows];
    fetch(lane, next_raw, next_scale);
    for (int first = lane; first < chunks; first += 32 * kSteps) {
      // The next step's loads go out before this step's math, so the memory never waits for the math.
      uint4 raw[kSteps][kRows];
      float scale[kSteps][kRows];
      memcpy(static_cast<void*>(raw), next_raw, sizeof raw);  // register moves
      memcpy(scale, next_scale, sizeof scale);
      fetch(first + 32 * kSteps, next_raw, next_scale);
#pragma unroll
      for (int u = 0; u < kSteps; ++u) {
        const int c = first + 32 * u;
        if (c >= chunks) break;
        float part[kRows] = {};
#pragma unroll
        for (int wd = 0; wd < 4; ++wd) {  // word wd of the chunk: 8 weights, 8 halves of x
          const uint4 xr = __ldg(x16 + 4 * c + wd);
          __half2 xh[4];
          memcpy(static_cast<void*>(xh), &xr, sizeof xr);  // the 8 halves as pairs (register moves)
          float xf[8];
#pragma unroll
          for (int j = 0; j < 4; ++j) {
            const float2 f = __half22float2(xh[j]);
            xf[2 * j] = f.x;
            xf[2 * j + 1] = f.y;
          }
#pragma unroll
          for (int r = 0; r < kRows; ++r) {
            const unsigned words[4] = {raw[u][r].x, raw[u][r].y, raw[u][r].z, raw[u][r].w};
            float wv[8];
            unpack8(words[wd], wv);
#pragma unroll
            for (int j = 0; j < 8; ++j) part[r] = fmaf(wv[j], xf[j], part[r]);
          }
        }
#pragma unroll
        for (int r = 0; r < kRows; ++r) sum[r] = fmaf(scale[u][r], part[r], sum[r]);
      }
    }
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const float total = warp_sum(sum[r]);
      if (lane == 0 && row0 + r < n) y[row0 + r] = __float2half(total);
    }
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
  constexpr int kRows = 4;  // rows per warp in gemv_int8_kernel: one warp for every 4 rows
  gemv_int8_kernel<<<blocks_for_rows((n + kRows - 1) / kRows), kBlock, 0, stream>>>(q, scales, x, y, n, k);
  ROOFLAB_LAUNCH_CHECK();
  // STUDENT END
}

void gemv_int4(const std::uint8_t* q, const __half* scales, const __half* x, __half* y, int n, int k, int group,
               cudaStream_t stream) {
  // STUDENT BEGIN (lab08.gemv_int4.launch)
  constexpr int kRows = 4;  // rows per warp in gemv_int4_kernel: one warp for every 4 rows
  gemv_int4_kernel<<<blocks_for_rows((n + kRows - 1) / kRows), kBlock, 0, stream>>>(q, scales, x, y, n, k, group);
  ROOFLAB_LAUNCH_CHECK();
  // STUDENT END
}

}  // namespace lab08
