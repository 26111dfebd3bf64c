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

__global__ void __launch_bounds__(kBlock, 4)
    gemv_int8_kernel(const std::int8_t* __restrict__ q, const __half* __restrict__ scales,
                     const __half* __restrict__ x, __half* __restrict__ y, int n, int k) {
  // STUDENT BEGIN (lab08.gemv_int8)
  // On the tensor cores, as the int4 GEMV below (its comments say more of the layout). A warp-per-row kernel on
  // the CUDA cores spends about two instructions per weight (unpack, multiply-add) and x's conversion besides,
  // about 159 per 1,024 bytes of weights with its loads two steps ahead (the H200 run measured the one-step
  // version at 52% of the copy ceiling). Here mma.sync does the multiply-adds and unpacking costs 1.25
  // instructions per weight: about 89 per 1,024 bytes, the loads one step ahead in 32 warps per SM.
  // - A block takes 16 rows of W; its 8 warps split each row's chunks (16 bytes: 16 weights, half a group), and
  //   shared memory adds the 8 partial sums at the end. A warp's step is 4 chunks of its 16 rows.
  // - Lane (g, t) (g = lane / 4, t = lane % 4) loads chunk t of the step for rows g and g + 8, the two rows of its
  //   mma A fragment; word i of the chunk (weights 4i .. 4i + 3) fills the lane's four k-slots of product i.
  // - Unpacking by exponent: a byte u under the FP16 exponent bits of 1024 (0x64) is the FP16 number 1024 + u.
  //   With the sign bit flipped (u = q + 128, 0 to 255) two byte permutes make (1024 + u0, 1024 + u1) and
  //   (1024 + u2, 1024 + u3), and subtracting 1152 leaves q exactly: 5 instructions for 4 weights.
  // - Groups kept apart as in the int4 GEMV: x is mma's B operand with column j holding x only for lane j's
  //   k-slots, so column j of a product is chunk j's sum alone. Chunks 2t and 2t + 1 of a step (the columns lane
  //   t < 2 holds) are one group of 32: their sums are added and scaled once, in FP32.
  // - x: 128 contiguous bytes a step, 4 from each lane, through a buffer of the warp's in shared memory (two, for
  //   alternate steps) to the lanes g == t, which read their chunk's 32 bytes; the others read zeros kept beside
  //   it. The block's scales are staged in shared memory with row-contiguous loads.
  // - Issue slots run short before bandwidth does, so the step has no branches and copies no registers (two
  //   steps a trip, two sets of load registers that take turns).
  constexpr int kRows = 16;  // rows per block (the launcher's grid counts on it)
  constexpr int kChunksPerStep = 4;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int chunks = k / 16;  // 16-byte chunks per row; chunk c holds weights 16c .. 16c + 15, half of group c / 2
  const int groups = k / kInt8Group;
  const uint4* q16 = reinterpret_cast<const uint4*>(q);
  const unsigned* x4 = reinterpret_cast<const unsigned*>(x);  // x in pieces of 4 bytes (2 halves)
  const __half2 minus1152 = __float2half2_rn(-1152.0f);
  // Word w of 4 weights as the pairs (q0, q1) and (q2, q3).
  const auto unpack = [&](unsigned w, std::uint32_t& lo, std::uint32_t& hi) {
    const unsigned u = w ^ 0x80808080u;  // q + 128 in every byte: 0 to 255
    const unsigned p[2] = {__byte_perm(u, 0x64646464u, 0x5140), __byte_perm(u, 0x64646464u, 0x5342)};
    __half2 h[2];
    memcpy(static_cast<void*>(h), p, sizeof h);  // (register moves)
    h[0] = __hadd2(h[0], minus1152);
    h[1] = __hadd2(h[1], minus1152);
    memcpy(&lo, &h[0], sizeof lo);
    memcpy(&hi, &h[1], sizeof hi);
  };
  constexpr int kSegmentGroups = 256;  // 8 KB: groups 0-255 of 16 rows (k = 8192: one segment)
  // Each row padded by 4 halves: a warp's step reads two neighbouring scales (t = 0-1, 2-3) from each of 8 rows at
  // once (g = lane / 4); rows 512 bytes apart would put all 8 in the same banks (an 8-way bank conflict: 8 passes of
  // shared memory for one load), 520 bytes apart puts each row's two words in banks of their own, and each load is
  // one pass.
  __shared__ __half scale_rows[kRows][kSegmentGroups + 4];
  __shared__ float partial[kWarpsPerBlock][kRows];
  // A step's x (4 chunks of 32 bytes: 4 from each lane), then 32 bytes of zeros for the lanes g != t.
  constexpr int kZeroSlot = kChunksPerStep * 2, kSlots = kZeroSlot + 2;  // in 16-byte pieces
  __shared__ uint4 x_steps[kWarpsPerBlock][2 * kSlots];
  if (lane < 4) x_steps[warp][lane / 2 * kSlots + kZeroSlot + lane % 2] = make_uint4(0, 0, 0, 0);  // (barrier below)
  unsigned* const x_put = reinterpret_cast<unsigned*>(x_steps[warp]) + lane;  // the lane's 4 bytes in buffer 0
  const int x_get = g == t ? 2 * t : kZeroSlot;
  const int stride = kWarpsPerBlock * kChunksPerStep;  // chunks between a warp's steps
  for (int row0 = blockIdx.x * kRows; row0 < n; row0 += gridDim.x * kRows) {
    const int ra = row0 + g, rb = row0 + g + 8;
    float sum_a = 0.0f, sum_b = 0.0f;
    for (int g0 = 0; g0 < groups; g0 += kSegmentGroups) {
      const int segment = min(kSegmentGroups, groups - g0);
      const int c_end = min(chunks, 2 * (g0 + segment));  // the segment's chunks end here
      const int first0 = 2 * g0 + warp * kChunksPerStep;
      // Element offsets (32 bits: the launcher keeps a launch within 2^30 chunks) of the lane's next chunk of rows
      // ra and rb, and of its 4 bytes of x (piece lane % 8 of chunk first + lane / 8). Chunks past the segment load
      // nothing; a row past n reads the last row instead (its sum is never stored).
      int qa = min(ra, n - 1) * chunks + first0 + t, qb = min(rb, n - 1) * chunks + first0 + t;
      int xs = 8 * first0 + lane;
      int c = first0 + t;  // the lane's chunk in the step fetched next
      struct Loads {
        uint4 a, b;  // a step's chunk of rows ra and rb
        unsigned x;  // and the lane's piece of x
      };
      const auto fetch = [&](Loads& s) {
        s.a = c < c_end ? __ldg(q16 + qa) : make_uint4(0, 0, 0, 0);
        s.b = c < c_end ? __ldg(q16 + qb) : make_uint4(0, 0, 0, 0);
        s.x = c - t + lane / 8 < c_end ? __ldg(x4 + xs) : 0u;
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
        // The scale of the group of chunks first + 2t and first + 2t + 1, the columns this lane's results hold.
        // Lanes t >= 2 and chunks past the segment have zero sums (their x is zero), so any finite scale will do:
        // the chunk is clamped into the staged segment, and no lane branches.
        const int group = (min(first + 2 * t, c_end - 1) >> 1) - g0;
        const float sa = __half2float(scale_rows[g][group]), sb = __half2float(scale_rows[g + 8][group]);
        x_put[buf * 4 * kSlots] = cur.x;
        __syncwarp();  // (the buffer's last readers, two steps ago, passed the previous step's __syncwarp)
        fetch(next);
        // x in lanes g == t (zeros past k), zeros in the others: 16 halves, x0 x1 in word 0, x2 x3 in word 1, ...
        const uint4 x_lo = x_steps[warp][buf * kSlots + x_get], x_hi = x_steps[warp][buf * kSlots + x_get + 1];
        const unsigned xw[8] = {x_lo.x, x_lo.y, x_lo.z, x_lo.w, x_hi.x, x_hi.y, x_hi.z, x_hi.w};
        const unsigned words_a[4] = {cur.a.x, cur.a.y, cur.a.z, cur.a.w};
        const unsigned words_b[4] = {cur.b.x, cur.b.y, cur.b.z, cur.b.w};
        float acc[4] = {};
#pragma unroll
        for (int i = 0; i < 4; ++i) {  // word i: weights 4i .. 4i + 3 of the lane's chunk, and x's halves 4i ..
          std::uint32_t a[4], b[2] = {xw[2 * i], xw[2 * i + 1]};
          unpack(words_a[i], a[0], a[2]);  // row g: k-slots 2t, 2t + 1, then 2t + 8, 2t + 9
          unpack(words_b[i], a[1], a[3]);  // row g + 8
          rooflab::mma_m16n8k16(acc, a, b, acc);
        }
        // acc: row ra's columns 2t, 2t + 1 and row rb's: chunks first + 2t and first + 2t + 1 (zeros for t >= 2).
        sum_a = fmaf(sa, acc[0] + acc[1], sum_a);
        sum_b = fmaf(sb, acc[2] + acc[3], sum_b);
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
  __shared__ __half scale_rows[kRows][kSegmentGroups + 4];  // padded as in the int8 GEMV: no bank conflicts
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
  // As the int4 GEMV's launcher: a block per 16 rows, at most the 4 blocks per SM that fit at once, and slices of
  // rows where a matrix has more than 2^30 chunks (16 GB: the kernel's offsets are 32-bit).
  constexpr int kRows = 16;
  const std::size_t row_chunks = static_cast<std::size_t>(std::max(k / 16, 1));
  const int slice = static_cast<int>(std::min(static_cast<std::size_t>(n), (std::size_t{1} << 30) / row_chunks));
  for (int r0 = 0; r0 < n; r0 += slice) {
    const int rows = std::min(slice, n - r0);
    const std::size_t first = static_cast<std::size_t>(r0);
    const unsigned blocks = rooflab::grid_for(static_cast<std::size_t>(rows), kRows, 4 * sm_count());
    gemv_int8_kernel<<<blocks, kBlock, 0, stream>>>(q + first * k, scales + first * (k / kInt8Group), x, y + first,
                                                    rows, k);
    ROOFLAB_LAUNCH_CHECK();
  }
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
