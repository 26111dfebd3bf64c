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
  // TODO(lab07.gemv): one warp per row, rows handed out grid-stride: `for (row = global_warp(); row < n;
  //   row += grid_warps())`. Lane `lane` reads the row's pieces lane * 8, lane * 8 + 256, ... with load_halves<8>
  //   (16 bytes, legal when k % 8 == 0; otherwise one half at a time: i = lane, lane + 32, ...), multiplies
  //   them with the same pieces of x and keeps a float sum; warp_sum adds the lanes; lane 0 writes y[row] as
  //   FP16 (__float2half). About 18 lines. Handout: "Decode reads every weight".
  rooflab::unused(w, x, y, n, k);  // delete this line when the kernel is written
  // STUDENT END
}

// ---- batched GEMV (skinny GEMM) ----

// B is the batch rounded up to a power of two (1 to 8): a compile-time bound keeps the B accumulators in
// registers; `batch` is the real count.
template <int B>
__global__ void batched_kernel(const __half* __restrict__ w, const __half* __restrict__ x, __half* __restrict__ y,
                               int n, int k, int batch) {
  // STUDENT BEGIN (lab07.batched)
  // TODO(lab07.batched): the GEMV's loop, with B accumulators (float acc[B], used for b < batch): each piece
  //   of W loaded once (load_halves<8>) is multiplied by the same piece of every input row x + b * k. After the loop,
  //   warp_sum each accumulator and write y[b * n + row]. About 35 lines (B is 1, 2, 4 or 8). Handout: "Batching".
  rooflab::unused(w, x, y, n, k, batch);  // delete this line when the kernel is written
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
  // TODO(lab07.batched_tc): warp w of the grid owns the slab of W rows [16 w, 16 w + 16) (grid-stride over
  //   slabs). Keep one FP32 accumulator fragment per 16 batch rows; for k0 = 0, 64, ...: stage_rows() the
  //   slab's 64 columns into s_w[warp] and the batch's into s_x[warp] (declare both __shared__ __align__(32)),
  //   __syncwarp(), then for kk = 0, 16, 32, 48: load_matrix_sync the W piece as matrix_a (row_major, ldm 64)
  //   and each batch tile as matrix_b (col_major, ldm 64: element (k, b) is at b * 64 + k), mma_sync. Store
  //   each accumulator (store_matrix_sync, mem_col_major) and write y[b * n + row] for b < batch, row < n.
  //   About 45 lines. Handout: "Tensor cores for the batch".
  rooflab::unused(w, x, y, n, k, batch);  // delete this line when the kernel is written
  // STUDENT END
}

// ---- launchers ----

// Enough warps to keep every SM's loads in flight, never more than there are rows.
unsigned blocks_for_rows(int n) { return rooflab::grid_for(static_cast<std::size_t>(n), kWarpsPerBlock, 16 * sm_count()); }

void gemv(const __half* w, const __half* x, __half* y, int n, int k, cudaStream_t stream) {
  // STUDENT BEGIN (lab07.gemv.launch)
  // TODO(lab07.gemv.launch): launch gemv_kernel<<<blocks_for_rows(n), kBlock, 0, stream>>>(...), then
  //   ROOFLAB_LAUNCH_CHECK(). Two lines.
  ROOFLAB_TODO("lab07.gemv.launch", w, x, y, n, k, stream);
  // STUDENT END
}

void batched_gemv(const __half* w, const __half* x, __half* y, int n, int k, int batch, cudaStream_t stream) {
  // STUDENT BEGIN (lab07.batched.launch)
  // TODO(lab07.batched.launch): batch 1 to 8: launch batched_kernel<B> for the smallest B in 1, 2, 4, 8 that
  //   is >= batch (B must be a compile-time constant: an if/else chain) on blocks_for_rows(n) blocks of kBlock;
  //   batch 9 to 64: batched_tc_kernel on enough kTcBlock blocks for ceil(n / 16) slabs, one per warp; a
  //   batch over 64 throws std::invalid_argument. Then ROOFLAB_LAUNCH_CHECK().
  ROOFLAB_TODO("lab07.batched.launch", w, x, y, n, k, batch, stream);
  // STUDENT END
}

}  // namespace lab07
