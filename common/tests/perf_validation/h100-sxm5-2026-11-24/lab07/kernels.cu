// Lab 07: decode batching - the linear layers of a decode step, at batch 1 and batch B.
//
//   gemv_kernel       y = W x: one token through one layer; every weight read once for 2 FLOPs
//   batched_kernel    Y = X W^T for B tokens: every weight read once for 2B FLOPs (B <= 8, CUDA cores)
//   batched_tc_kernel the same on tensor cores for B > 8, the batch padded to a multiple of 16
//
// At batch 1 a linear layer does 2 FLOPs per 2-byte weight: intensity 1, far left of every ridge point, so
// its time is the weights' bytes over the bandwidth. The GEMV must therefore stream W at the copy ceiling:
// coalesced 128-bit loads, enough rows in flight, nothing else read from DRAM. Batching reuses each weight
// for B tokens while it is in registers, so the time stays nearly flat until the intensity reaches the
// ridge. Handout: README.md, sections "Decode reads every weight" and "Batching".
#include "kernels.hpp"

#include <rooflab/grid.hpp>
#include <rooflab/launch.hpp>
#include <rooflab/stub.hpp>
#include <rooflab/warp.hpp>

#include <mma.h>

#include <stdexcept>
#include <string>

namespace lab07 {

// ---- PROVIDED: do not modify ----

using rooflab::sm_count;     // SMs of the current device
using rooflab::warp_sum;     // the sum over the warp, in every lane (rooflab/warp.hpp)
using rooflab::load_halves;  // load_halves<8>: 16 bytes of halves as floats, one 128-bit load (rooflab/warp.hpp)

inline constexpr unsigned kBlock = 256;  // 8 warps: one row of W per warp at a time
inline constexpr int kWarpsPerBlock = kBlock / 32;

// This warp's index in the grid and the number of warps in it: rows are handed out warp by warp.
__device__ inline int global_warp() { return static_cast<int>((blockIdx.x * blockDim.x + threadIdx.x) / 32); }
__device__ inline int grid_warps() { return static_cast<int>(gridDim.x * blockDim.x / 32); }

// ---- GEMV ----

__global__ void gemv_kernel(const __half* __restrict__ w, const __half* __restrict__ x, __half* __restrict__ y, int n,
                            int k) {
  // STUDENT BEGIN (lab07.gemv)
  // A warp per row: the 32 lanes read consecutive 16-byte pieces of the row (512 contiguous bytes per warp
  // load: fully coalesced), each keeps a partial dot product, and warp_sum adds them. When k is a multiple
  // of 8 every row starts on a 16-byte boundary and the 128-bit path is legal; otherwise the row is read
  // one half at a time (still coalesced, more instructions).
  const int lane = threadIdx.x % 32;
  for (int row = global_warp(); row < n; row += grid_warps()) {
    const __half* w_row = w + static_cast<std::size_t>(row) * k;
    float sum = 0.0f;
    if (k % 8 == 0) {
      for (int i = lane * 8; i < k; i += 32 * 8) {
        float wv[8], xv[8];
        load_halves<8>(w_row + i, wv);
        load_halves<8>(x + i, xv);  // x is k halves: it stays in L1/L2 for every row
#pragma unroll
        for (int j = 0; j < 8; ++j) sum = fmaf(wv[j], xv[j], sum);
      }
    } else {
      for (int i = lane; i < k; i += 32) sum = fmaf(__half2float(w_row[i]), __half2float(x[i]), sum);
    }
    sum = warp_sum(sum);
    if (lane == 0) y[row] = __float2half(sum);
  }
  // STUDENT END
}

// ---- batched GEMV (skinny GEMM) ----

// B is the batch rounded up to a power of two (1 to 8): a compile-time bound keeps the B accumulators in
// registers; `batch` is the real count.
template <int B>
__global__ void batched_kernel(const __half* __restrict__ w, const __half* __restrict__ x, __half* __restrict__ y,
                               int n, int k, int batch) {
  // STUDENT BEGIN (lab07.batched)
  // The GEMV's loop with one change: each 16-byte piece of W, once in registers, is multiplied by the same
  // piece of every one of the batch's inputs. W is read from DRAM once for the whole batch; the inputs
  // (batch x k halves, a few hundred KB at most) come from L2. That reuse is what batching buys.
  const int lane = threadIdx.x % 32;
  for (int row = global_warp(); row < n; row += grid_warps()) {
    const __half* w_row = w + static_cast<std::size_t>(row) * k;
    float acc[B];
#pragma unroll
    for (int b = 0; b < B; ++b) acc[b] = 0.0f;
    if (k % 8 == 0) {
      for (int i = lane * 8; i < k; i += 32 * 8) {
        float wv[8];
        load_halves<8>(w_row + i, wv);
#pragma unroll
        for (int b = 0; b < B; ++b) {
          if (b < batch) {
            float xv[8];
            load_halves<8>(x + static_cast<std::size_t>(b) * k + i, xv);
#pragma unroll
            for (int j = 0; j < 8; ++j) acc[b] = fmaf(wv[j], xv[j], acc[b]);
          }
        }
      }
    } else {
      for (int i = lane; i < k; i += 32) {
        const float wv = __half2float(w_row[i]);
#pragma unroll
        for (int b = 0; b < B; ++b) {
          if (b < batch) acc[b] = fmaf(wv, __half2float(x[static_cast<std::size_t>(b) * k + i]), acc[b]);
        }
      }
    }
#pragma unroll
    for (int b = 0; b < B; ++b) {
      if (b < batch) {
        const float sum = warp_sum(acc[b]);
        if (lane == 0) y[static_cast<std::size_t>(b) * n + row] = __float2half(sum);
      }
    }
  }
  // STUDENT END
}

// ---- batched GEMV on tensor cores (batch 9 to 64) ----
//
// Each warp owns a slab of 16 rows of W and computes them for the whole batch: Y^T (16 x batch) = W slab
// (16 x K) times X^T (K x batch), in 16 x 16 x 16 WMMA steps, FP16 in and FP32 accumulate. It stages a 16 x 64
// piece of W and the matching 64 columns of X (the batch padded to a multiple of 16 with zeros) in shared
// memory, so that tails in n, K and the batch are zeros, never reads past an array.
inline constexpr unsigned kTcBlock = 128;  // 4 warps, each with its own staging area
inline constexpr int kTcWarps = kTcBlock / 32;
inline constexpr int kTcK = 64;           // K columns staged per step
inline constexpr int kMaxBatch = 64;

// Copies rows [row0, row0 + rows) x columns [k0, k0 + kTcK) of a `total_rows` x k FP16 matrix into a
// rows x kTcK shared tile, zeros outside the matrix (a warp-wide loop; lane is this thread's lane).
__device__ inline void stage_rows(__half* tile, const __half* m, int row0, int total_rows, int k, int k0, int rows,
                                  int lane) {
  for (int piece = lane; piece < rows * (kTcK / 8); piece += 32) {
    const int r = piece / (kTcK / 8), c = piece % (kTcK / 8) * 8;
    const __half* src = m + static_cast<std::size_t>(row0 + r) * k + k0 + c;
    __half* dst = tile + r * kTcK + c;
    if (row0 + r < total_rows && k % 8 == 0 && k0 + c + 8 <= k) {
      *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(src);
    } else {
      for (int j = 0; j < 8; ++j) dst[j] = row0 + r < total_rows && k0 + c + j < k ? src[j] : __float2half(0.0f);
    }
  }
}

__global__ void batched_tc_kernel(const __half* __restrict__ w, const __half* __restrict__ x, __half* __restrict__ y,
                                  int n, int k, int batch) {
  // STUDENT BEGIN (lab07.batched_tc)
  namespace wmma = nvcuda::wmma;
  __shared__ __align__(32) __half s_w[kTcWarps][16 * kTcK];
  __shared__ __align__(32) __half s_x[kTcWarps][kMaxBatch * kTcK];
  __shared__ __align__(32) float s_out[kTcWarps][16 * 16];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int tiles = (batch + 15) / 16;  // batch tiles of 16 (the last one zero-padded)
  const int slabs = (n + 15) / 16;
  __half* sw = s_w[warp];
  __half* sx = s_x[warp];
  for (int slab = global_warp(); slab < slabs; slab += grid_warps()) {
    const int r0 = slab * 16;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[kMaxBatch / 16];
#pragma unroll
    for (int t = 0; t < kMaxBatch / 16; ++t) wmma::fill_fragment(acc[t], 0.0f);
    for (int k0 = 0; k0 < k; k0 += kTcK) {
      // Stage W[r0 .. r0 + 16)[k0 .. k0 + 64) and X[0 .. 16 tiles)[k0 .. k0 + 64) in pieces of 8 halves: a
      // 128-bit load where the piece lies inside the array and rows are 16-byte aligned (k % 8 == 0),
      // else element by element with zeros outside.
      stage_rows(sw, w, r0, n, k, k0, 16, lane);
      stage_rows(sx, x, 0, batch, k, k0, tiles * 16, lane);
      __syncwarp();
#pragma unroll
      for (int kk = 0; kk < kTcK; kk += 16) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a;
        wmma::load_matrix_sync(a, sw + kk, kTcK);
#pragma unroll
        for (int t = 0; t < kMaxBatch / 16; ++t) {
          if (t < tiles) {
            // X^T as the B operand: element (k, b) sits at sx[b * 64 + k], i.e. column-major with ldm 64.
            wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> bx;
            wmma::load_matrix_sync(bx, sx + t * 16 * kTcK + kk, kTcK);
            wmma::mma_sync(acc[t], a, bx, acc[t]);
          }
        }
      }
      __syncwarp();  // the next step overwrites the staging area
    }
#pragma unroll
    for (int t = 0; t < kMaxBatch / 16; ++t) {
      if (t < tiles) {
        // Element (row m of the slab, batch column j of the tile) goes to s_out[j * 16 + m].
        wmma::store_matrix_sync(s_out[warp], acc[t], 16, wmma::mem_col_major);
        __syncwarp();
        for (int e = lane; e < 256; e += 32) {
          const int j = e / 16, m = e % 16, b = t * 16 + j, r = r0 + m;
          if (b < batch && r < n) y[static_cast<std::size_t>(b) * n + r] = __float2half(s_out[warp][e]);
        }
        __syncwarp();
      }
    }
  }
  // STUDENT END
}

// ---- launchers ----

// Enough warps to keep every SM's loads in flight, never more than there are rows.
unsigned blocks_for_rows(int n) { return rooflab::grid_for(static_cast<std::size_t>(n), kWarpsPerBlock, 16 * sm_count()); }

void gemv(const __half* w, const __half* x, __half* y, int n, int k, cudaStream_t stream) {
  // STUDENT BEGIN (lab07.gemv.launch)
  gemv_kernel<<<blocks_for_rows(n), kBlock, 0, stream>>>(w, x, y, n, k);
  ROOFLAB_LAUNCH_CHECK();
  // STUDENT END
}

void batched_gemv(const __half* w, const __half* x, __half* y, int n, int k, int batch, cudaStream_t stream) {
  // STUDENT BEGIN (lab07.batched.launch)
  // Up to 8 the CUDA cores keep up with the memory (intensity up to 8 FLOP/byte, under every FP32 ridge in
  // data/gpus.json): one instance per power of two, so a batch of 5 runs B = 8 with 3 accumulators idle.
  // Past 8 the FP32 math would become the bottleneck, so the tensor cores take over (the batch padded to 16).
  const unsigned blocks = blocks_for_rows(n);
  if (batch <= 1) {
    batched_kernel<1><<<blocks, kBlock, 0, stream>>>(w, x, y, n, k, batch);
  } else if (batch <= 2) {
    batched_kernel<2><<<blocks, kBlock, 0, stream>>>(w, x, y, n, k, batch);
  } else if (batch <= 4) {
    batched_kernel<4><<<blocks, kBlock, 0, stream>>>(w, x, y, n, k, batch);
  } else if (batch <= 8) {
    batched_kernel<8><<<blocks, kBlock, 0, stream>>>(w, x, y, n, k, batch);
  } else if (batch <= kMaxBatch) {
    const std::size_t slabs = (static_cast<std::size_t>(n) + 15) / 16;
    batched_tc_kernel<<<rooflab::grid_for(slabs, kTcWarps, 16 * sm_count()), kTcBlock, 0, stream>>>(w, x, y, n, k, batch);
  } else {
    throw std::invalid_argument("batched_gemv: batch must be 1 to 64, not " + std::to_string(batch));
  }
  ROOFLAB_LAUNCH_CHECK();
  // STUDENT END
}

}  // namespace lab07
