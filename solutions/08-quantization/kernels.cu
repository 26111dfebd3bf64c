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
#include <rooflab/mma.hpp>
#include <rooflab/stub.hpp>
#include <rooflab/warp.hpp>

#include <algorithm>
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

__global__ void __launch_bounds__(kBlock, 4)
    gemv_int4_kernel(const std::uint8_t* __restrict__ q, const __half* __restrict__ scales,
                     const __half* __restrict__ x, __half* __restrict__ y, int n, int k, int group) {
  // STUDENT BEGIN (lab08.gemv_int4)
  // On the tensor cores. At 32 weights per 16-byte load the CUDA cores spent about four instructions per weight
  // (unpack, convert, multiply-add, x's conversion), so the H200 run found the int4 GEMV short of issue slots
  // (50% busy at 40% of the copy ceiling). Here mma.sync does the multiply-adds, 256 of them per instruction,
  // and unpacking costs about one instruction per weight.
  // - A block takes 16 rows of W; its 8 warps split each row's chunks (16 bytes: 32 weights) among them, and
  //   shared memory adds the 8 partial sums at the end. A warp's step is 4 chunks of its 16 rows.
  // - The weights are mma's A operand as they load: lane (g, t) (g = lane / 4, t = lane % 4) loads chunk t of
  //   the step for rows g and g + 8, the two rows its A fragment holds. A product sums over k, so any order of k
  //   works if x's follows it: the lane's weights go into its own k-slots of the fragment (columns 2t, 2t + 1,
  //   2t + 8, 2t + 9), two words of 8 weights per product.
  // - Unpacking without conversions: a nibble n put under the FP16 exponent of 1024 (bits 0x6400) is the FP16
  //   number 1024 + n, one LOP3 for two nibbles. The low nibbles of a word's bytes 0 and 2 (weights 0 and 4)
  //   give (1024 + q0 + 8, 1024 + q4 + 8), minus 1032: q0, q4 exactly. The high nibbles, left in place, are
  //   16x as large: 1024 + 16 (q + 8), times 1/16 minus 72 gives q, one HFMA2. So a word of 8 weights is 4
  //   pairs, (q0, q4), (q1, q5), (q2, q6), (q3, q7), in 9 instructions; x's halves are paired the same way.
  // - Groups kept apart: a product sums the k-slots of all 4 lanes of a quad, 4 chunks, and a group of 32 is one
  //   chunk. So x is mma's B operand with column j holding x only for lane j's k-slots (zeros elsewhere: lanes
  //   g == t read x, the others read zeros). Column j of the result is then chunk j's sum alone, unscaled, in
  //   FP32; each is scaled once (its group's FP16 scale) and added to the row's FP32 sum. The weights stay exact
  //   integers in FP16, as the CUDA-core loop's were in FP32: scaled in FP16 first, each would be rounded.
  // - The next step's loads go out before this step's math: the weights, and x for its 4 chunks (256 contiguous
  //   bytes, 8 in each lane). Lanes g == t need 64 bytes of it each, so x goes through a small buffer of the
  //   warp's in shared memory (two, for alternate steps). The scales come from shared memory too.
  // - Issue slots are what this kernel runs short of first, so the step has no branches and copies no registers
  //   (below: zeros kept in shared memory for the lanes without x, two steps a trip).
  constexpr int kRows = 16;  // rows per block (the launcher's grid counts on it)
  constexpr int kChunksPerStep = 4;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int chunks = k / 32;  // 16-byte chunks per row; chunk c holds weights 32c .. 32c + 31
  const int groups = k / group;
  const int chunk_shift = group == 128 ? 2 : 0;  // chunk c is in group c >> chunk_shift
  const uint4* q16 = reinterpret_cast<const uint4*>(q);
  const uint2* x8 = reinterpret_cast<const uint2*>(x);
  constexpr unsigned kExponent = 0x64006400u;  // the FP16 exponent bits of 1024, in both halves
  const __half2 sixteenth = __float2half2_rn(1.0f / 16), minus72 = __float2half2_rn(-72.0f),
               minus1032 = __float2half2_rn(-1032.0f);
  // Word w of 8 nibbles (weights 0..7, low nibble first) as the pairs (q0, q4), (q1, q5), (q2, q6), (q3, q7).
  const auto unpack = [&](unsigned w, std::uint32_t (&p)[4]) {
    const unsigned shifted = w >> 8;  // weights 2, 3, 6, 7 where 0, 1, 4, 5 were
    const unsigned u[4] = {rooflab::and_or(w, 0x000F000Fu, kExponent), rooflab::and_or(w, 0x00F000F0u, kExponent),
                           rooflab::and_or(shifted, 0x000F000Fu, kExponent),
                           rooflab::and_or(shifted, 0x00F000F0u, kExponent)};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      __half2 h;
      memcpy(static_cast<void*>(&h), &u[i], sizeof h);  // (register moves)
      h = i % 2 == 0 ? __hadd2(h, minus1032) : __hfma2(h, sixteenth, minus72);
      memcpy(&p[i], &h, sizeof h);
    }
  };
  // The block's 16 rows' scales for a segment of k, staged in shared memory with coalesced loads: read in
  // place, a lane's scales would be 16 rows apart, a sector a row for every request.
  constexpr int kSegmentGroups = 256;  // 8 KB: groups 0-255 of 16 rows (k = 8192 in groups of 32: one segment)
  __shared__ __half scale_rows[kRows][kSegmentGroups];
  __shared__ float partial[kWarpsPerBlock][kRows];
  // A step's x (4 chunks of 64 bytes: 8 bytes from each lane), then 64 bytes of zeros. Lanes g == t read their
  // chunk's x in 16-byte pieces, the others the zeros: an address chosen once, instead of a zeroed register and a
  // predicated load for every piece.
  constexpr int kZeroSlot = kChunksPerStep * 4, kSlots = kZeroSlot + 4;  // in 16-byte pieces
  __shared__ uint4 x_steps[kWarpsPerBlock][2 * kSlots];
  if (lane < 8) x_steps[warp][lane / 4 * kSlots + kZeroSlot + lane % 4] = make_uint4(0, 0, 0, 0);  // (barrier below)
  uint2* const x_put = reinterpret_cast<uint2*>(x_steps[warp]) + lane;  // the lane's 8 bytes in buffer 0
  const int x_get = g == t ? 4 * t : kZeroSlot;
  const int stride = kWarpsPerBlock * kChunksPerStep;  // chunks between a warp's steps
  for (int row0 = blockIdx.x * kRows; row0 < n; row0 += gridDim.x * kRows) {
    const int ra = row0 + g, rb = row0 + g + 8;
    float sum_a = 0.0f, sum_b = 0.0f;
    for (int g0 = 0; g0 < groups; g0 += kSegmentGroups) {
      const int segment = min(kSegmentGroups, groups - g0);
      const int c_end = min(chunks, (g0 + segment) << chunk_shift);  // the segment's chunks: c_begin .. c_end - 1
      const int first0 = (g0 << chunk_shift) + warp * kChunksPerStep;
      // Element offsets (32 bits: the launcher keeps a launch within 2^30 chunks) of the lane's next chunk of rows
      // ra and rb, and of its 8 bytes of x (piece lane % 8 of chunk first + lane / 8). Chunks past the segment load
      // nothing; a row past n reads the last row instead (its sum is never stored).
      int qa = min(ra, n - 1) * chunks + first0 + t, qb = min(rb, n - 1) * chunks + first0 + t;
      int xs = 8 * first0 + lane;
      int c = first0 + t;  // the lane's chunk in the step fetched next
      struct Loads {
        uint4 a, b;  // a step's chunk of rows ra and rb
        uint2 x;     // and the lane's piece of x
      };
      const auto fetch = [&](Loads& s) {
        s.a = c < c_end ? __ldg(q16 + qa) : make_uint4(0, 0, 0, 0);
        s.b = c < c_end ? __ldg(q16 + qb) : make_uint4(0, 0, 0, 0);
        s.x = c - t + lane / 8 < c_end ? __ldg(x8 + xs) : make_uint2(0, 0);
        qa += stride;
        qb += stride;
        xs += 8 * stride;
        c += stride;
      };
      Loads even, odd;  // the loads of even and odd steps: a step's math reads one set while the next fills the other
      fetch(even);      // the first step's weights are on their way while the block stages the scales
      __syncthreads();  // every warp is done with the previous segment's scales
      for (int r = 0; r < kRows; ++r) {
        const bool in = row0 + r < n;
        const __half* row_scales = scales + std::size_t(in ? row0 + r : 0) * groups + g0;
        for (int j = threadIdx.x; j < segment; j += kBlock) scale_rows[r][j] = in ? __ldg(row_scales + j) : __half();
      }
      __syncthreads();
      // One step: 4 chunks of the warp's 16 rows, starting at chunk `first`, in x's buffer `buf`.
      const auto step = [&](int first, int buf, const Loads& cur, Loads& next) {
        // The scales of the chunks this lane's result columns hold (chunks first + 2t and first + 2t + 1). Lanes
        // t >= 2 and chunks past the segment have zero sums (their x is zero), so any finite scale will do: the chunk
        // is clamped into the staged segment, and no lane branches.
        float sa[2], sb[2];
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          const int cj = min(first + 2 * t + j, c_end - 1);
          sa[j] = __half2float(scale_rows[g][(cj >> chunk_shift) - g0]);
          sb[j] = __half2float(scale_rows[g + 8][(cj >> chunk_shift) - g0]);
        }
        x_put[buf * 2 * kSlots] = cur.x;
        __syncwarp();  // (the buffer's last readers, two steps ago, passed the previous step's __syncwarp)
        fetch(next);
        float acc[4] = {};
        const unsigned words_a[4] = {cur.a.x, cur.a.y, cur.a.z, cur.a.w};
        const unsigned words_b[4] = {cur.b.x, cur.b.y, cur.b.z, cur.b.w};
#pragma unroll
        for (int i = 0; i < 4; ++i) {  // word i: weights 8i .. 8i + 7 of the lane's chunk, and their 8 halves of x
          std::uint32_t pa[4], pb[4], xp[4];
          unpack(words_a[i], pa);
          unpack(words_b[i], pb);
          // x in lanes g == t (zeros past k), zeros in the others; its halves (x0 x1, x2 x3, x4 x5, x6 x7) paired
          // as the weights: (x0, x4), (x1, x5), (x2, x6), (x3, x7).
          const uint4 xq = x_steps[warp][buf * kSlots + x_get + i];
          const unsigned xr[4] = {xq.x, xq.y, xq.z, xq.w};
          xp[0] = __byte_perm(xr[0], xr[2], 0x5410);
          xp[1] = __byte_perm(xr[0], xr[2], 0x7632);
          xp[2] = __byte_perm(xr[1], xr[3], 0x5410);
          xp[3] = __byte_perm(xr[1], xr[3], 0x7632);
          const std::uint32_t a0[4] = {pa[0], pb[0], pa[1], pb[1]}, b0[2] = {xp[0], xp[1]};
          const std::uint32_t a1[4] = {pa[2], pb[2], pa[3], pb[3]}, b1[2] = {xp[2], xp[3]};
          rooflab::mma_m16n8k16(acc, a0, b0, acc);
          rooflab::mma_m16n8k16(acc, a1, b1, acc);
        }
        // acc: row ra's columns 2t, 2t + 1 and row rb's: chunks first + 2t and first + 2t + 1 (zeros for t >= 2).
        sum_a = fmaf(sa[0], acc[0], fmaf(sa[1], acc[1], sum_a));
        sum_b = fmaf(sb[0], acc[2], fmaf(sb[1], acc[3], sum_b));
      };
      // Two steps a trip, so that the two sets of loads take turns without being copied: an even step reads
      // `even` and fetches into `odd`, an odd step the other way round.
      for (int first = first0; first < c_end; first += 2 * stride) {
        step(first, 0, even, odd);
        if (first + stride >= c_end) break;
        step(first + stride, 1, odd, even);
      }
    }
    // The quad's sums (lanes t >= 2 hold zeros), then the block's 8 warps.
    sum_a += __shfl_xor_sync(0xffffffffu, sum_a, 1);
    sum_b += __shfl_xor_sync(0xffffffffu, sum_b, 1);
    if (t == 0) {
      partial[warp][g] = sum_a;
      partial[warp][g + 8] = sum_b;
    }
    __syncthreads();
    if (threadIdx.x < kRows && row0 + static_cast<int>(threadIdx.x) < n) {
      float total = 0.0f;
#pragma unroll
      for (int w = 0; w < kWarpsPerBlock; ++w) total += partial[w][threadIdx.x];
      y[row0 + threadIdx.x] = __float2half(total);
    }
    __syncthreads();  // every row is read before the next tile's partial sums overwrite it
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
  // A block per 16 rows (its 8 warps split each row's chunks), at most the 4 blocks per SM that fit at once: one
  // wave, the blocks looping over further rows. The kernel's chunk offsets are 32-bit, so a launch covers at most
  // 2^30 chunks (16 GB of weights): a larger matrix goes in slices of rows (one launch for any layer of a model
  // that fits a GPU today).
  constexpr int kRows = 16;
  const std::size_t row_chunks = static_cast<std::size_t>(std::max(k / 32, 1));
  const int slice = static_cast<int>(std::min(static_cast<std::size_t>(n), (std::size_t{1} << 30) / row_chunks));
  for (int r0 = 0; r0 < n; r0 += slice) {
    const int rows = std::min(slice, n - r0);
    const std::size_t first = static_cast<std::size_t>(r0);
    const unsigned blocks = rooflab::grid_for(static_cast<std::size_t>(rows), kRows, 4 * sm_count());
    gemv_int4_kernel<<<blocks, kBlock, 0, stream>>>(q + first * k / 2, scales + first * (k / group), x, y + first,
                                                    rows, k, group);
    ROOFLAB_LAUNCH_CHECK();
  }
  // STUDENT END
}

}  // namespace lab08
