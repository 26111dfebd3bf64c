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
  // TODO(lab08.quantize_int8): for each group g (grid-stride: g = global_thread(); g < groups; g +=
  //   grid_threads()): absmax of its 32 weights w[g * 32 + i]; scale = __float2half_ru(absmax / kInt8Max)
  //   (rounded up: lab.hpp says why), stored in scales[g]; then q = rintf(w / s) with s the stored scale as a
  //   float, clamped to [-127, 127]; a group of zeros (s == 0) stores q = 0. About 12 lines. Handout:
  //   "Group-wise quantization and its error".
  rooflab::unused(w, q, scales, groups);  // delete this line when the kernel is written
  // STUDENT END
}

__global__ void dequantize_int8_kernel(const std::int8_t* __restrict__ q, const __half* __restrict__ scales,
                                       __half* __restrict__ w, std::size_t groups) {
  // STUDENT BEGIN (lab08.dequantize_int8)
  // TODO(lab08.dequantize_int8): w[g * 32 + i] = to_fp16_saturated(scale_g x q) for every group. About 4
  //   lines.
  rooflab::unused(q, scales, w, groups);  // delete this line when the kernel is written
  // STUDENT END
}

__global__ void quantize_int4_kernel(const __half* __restrict__ w, std::uint8_t* __restrict__ q,
                                     __half* __restrict__ scales, std::size_t groups, int group) {
  // STUDENT BEGIN (lab08.quantize_int4)
  // TODO(lab08.quantize_int4): quantize_int8's loop over groups of `group` weights with qmax kInt4Max (7),
  //   then pack: byte (g * group + i) / 2 holds weight i (even) in bits 0-3 and weight i + 1 in bits 4-7, each
  //   as q + kInt4Zero. About 16 lines. Handout: "Block formats and their bytes".
  rooflab::unused(w, q, scales, groups, group);  // delete this line when the kernel is written
  // STUDENT END
}

__global__ void dequantize_int4_kernel(const std::uint8_t* __restrict__ q, const __half* __restrict__ scales,
                                       __half* __restrict__ w, std::size_t groups, int group) {
  // STUDENT BEGIN (lab08.dequantize_int4)
  // TODO(lab08.dequantize_int4): unpack each byte (low nibble first), subtract kInt4Zero, multiply by the
  //   group's scale, write to_fp16_saturated(...). About 8 lines.
  rooflab::unused(q, scales, w, groups, group);  // delete this line when the kernel is written
  // STUDENT END
}

// ---- the int8 GEMV ----

__global__ void __launch_bounds__(kBlock, 4)
    gemv_int8_kernel(const std::int8_t* __restrict__ q, const __half* __restrict__ scales,
                     const __half* __restrict__ x, __half* __restrict__ y, int n, int k) {
  // STUDENT BEGIN (lab08.gemv_int8)
  // TODO(lab08.gemv_int8): Lab 07's GEMV on the int8 layout: one warp per row, rows grid-stride
  //   (`for (row = global_warp(); row < n; row += grid_warps())`). Lane `lane` reads 16 weights at
  //   i = lane * 16, lane * 16 + 512, ... in ONE 128-bit load (`*reinterpret_cast<const uint4*>(q_row + i)`,
  //   then memcpy into int8_t[16]), the matching 16 halves of x with two load_halves<8>, sums the 16
  //   products in a float and multiplies that by the group's scale (group i / 32 of the row). warp_sum adds
  //   the lanes; lane 0 writes y[row] as FP16. About 25 lines. Handout: "The quantized GEMV".
  rooflab::unused(q, scales, x, y, n, k);  // delete this line when the kernel is written
  // STUDENT END
}

// ---- the int4 GEMV ----

__global__ void __launch_bounds__(kBlock, 4)
    gemv_int4_kernel(const std::uint8_t* __restrict__ q, const __half* __restrict__ scales,
                     const __half* __restrict__ x, __half* __restrict__ y, int n, int k, int group) {
  // STUDENT BEGIN (lab08.gemv_int4)
  // TODO(lab08.gemv_int4): as gemv_int8, with 32 weights (16 bytes, one uint4) per lane per step, so one
  //   scale (group i / group) covers the whole load; the warp covers 1024 weights per step. In each 32-bit
  //   word, byte b holds weights 2b (bits 0-3) and 2b + 1 (bits 4-7) of its 8, each nibble minus kInt4Zero.
  //   Read x with four load_halves<8>. About 30 lines. (The reference goes further, onto the tensor cores with
  //   rooflab/mma.hpp's mma_m16n8k16, 16 rows a block: about 90 lines.) Handout: "The quantized GEMV".
  rooflab::unused(q, scales, x, y, n, k, group);  // delete this line when the kernel is written
  // STUDENT END
}

// ---- launchers ----

// One thread per group, enough blocks to fill the GPU, never more than there are groups.
unsigned blocks_for_groups(std::size_t groups) { return rooflab::grid_for(groups, kBlock, 8 * sm_count()); }
// Enough warps to keep every SM's loads in flight, never more than there are rows.
unsigned blocks_for_rows(int n) { return rooflab::grid_for(static_cast<std::size_t>(n), kWarpsPerBlock, 16 * sm_count()); }

void quantize_int8(const __half* w, std::int8_t* q, __half* scales, int n, int k, cudaStream_t stream) {
  // STUDENT BEGIN (lab08.quantize_int8.launch)
  // TODO(lab08.quantize_int8.launch): one thread per group, groups = n x k / kInt8Group: launch
  //   quantize_int8_kernel<<<blocks_for_groups(groups), kBlock, 0, stream>>>(...), then ROOFLAB_LAUNCH_CHECK().
  ROOFLAB_TODO("lab08.quantize_int8.launch", w, q, scales, n, k, stream);
  // STUDENT END
}

void dequantize_int8(const std::int8_t* q, const __half* scales, __half* w, int n, int k, cudaStream_t stream) {
  // STUDENT BEGIN (lab08.dequantize_int8.launch)
  // TODO(lab08.dequantize_int8.launch): one thread per group, groups = n x k / kInt8Group: launch
  //   dequantize_int8_kernel<<<blocks_for_groups(groups), kBlock, 0, stream>>>(...), then ROOFLAB_LAUNCH_CHECK().
  ROOFLAB_TODO("lab08.dequantize_int8.launch", q, scales, w, n, k, stream);
  // STUDENT END
}

void quantize_int4(const __half* w, std::uint8_t* q, __half* scales, int n, int k, int group, cudaStream_t stream) {
  // STUDENT BEGIN (lab08.quantize_int4.launch)
  // TODO(lab08.quantize_int4.launch): one thread per group, groups = n x k / group: launch
  //   quantize_int4_kernel<<<blocks_for_groups(groups), kBlock, 0, stream>>>(...), then ROOFLAB_LAUNCH_CHECK().
  ROOFLAB_TODO("lab08.quantize_int4.launch", w, q, scales, n, k, group, stream);
  // STUDENT END
}

void dequantize_int4(const std::uint8_t* q, const __half* scales, __half* w, int n, int k, int group,
                     cudaStream_t stream) {
  // STUDENT BEGIN (lab08.dequantize_int4.launch)
  // TODO(lab08.dequantize_int4.launch): one thread per group, groups = n x k / group: launch
  //   dequantize_int4_kernel<<<blocks_for_groups(groups), kBlock, 0, stream>>>(...), then ROOFLAB_LAUNCH_CHECK().
  ROOFLAB_TODO("lab08.dequantize_int4.launch", q, scales, w, n, k, group, stream);
  // STUDENT END
}

void gemv_int8(const std::int8_t* q, const __half* scales, const __half* x, __half* y, int n, int k,
               cudaStream_t stream) {
  // STUDENT BEGIN (lab08.gemv_int8.launch)
  // TODO(lab08.gemv_int8.launch): launch gemv_int8_kernel<<<blocks_for_rows(n), kBlock, 0, stream>>>(...),
  //   then ROOFLAB_LAUNCH_CHECK(). Two lines.
  ROOFLAB_TODO("lab08.gemv_int8.launch", q, scales, x, y, n, k, stream);
  // STUDENT END
}

void gemv_int4(const std::uint8_t* q, const __half* scales, const __half* x, __half* y, int n, int k, int group,
               cudaStream_t stream) {
  // STUDENT BEGIN (lab08.gemv_int4.launch)
  // TODO(lab08.gemv_int4.launch): the same for gemv_int4_kernel. Two lines.
  ROOFLAB_TODO("lab08.gemv_int4.launch", q, scales, x, y, n, k, group, stream);
  // STUDENT END
}

}  // namespace lab08
