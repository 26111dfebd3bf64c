// Lab 07: decode batching - the linear layers of a decode step, at batch 1 and batch B.
//
//   gemv_kernel       y = W x: one token through one layer; every weight read once for 2 FLOPs
//   batched_kernel    Y = X W^T for B tokens: every weight read once for 2B FLOPs (B <= 4, CUDA cores)
//   batched_tc_kernel the same on tensor cores for B > 4, the batch padded to a multiple of 16
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

#include <cstring>
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
//
// The reuse a batch offers is a register tile: a thread that holds R weights (one per row) and B inputs (one
// per batch row) for the same column does R x B FMAs with R + B values, so each weight it loads from DRAM
// serves B tokens and each input it reads from shared memory serves R rows. Both halves matter:
//   - W: every 16-byte piece is loaded once (128-bit, coalesced: a warp reads 512 contiguous bytes of a
//     row), converted to floats once, and multiplied by all B inputs while it sits in registers.
//   - X: a warp that owns one row would reread all B x k inputs for every row (16384 rows x 256 KB at batch
//     8 = 4 GB from L2: the time then follows L2, not DRAM; the first reference did that and took 3.1x batch
//     1's time on an H100). Here a block owns 8 warps x kRowsPerWarp rows and stages the inputs in shared
//     memory once for all of them, a chunk of kChunk columns at a time, already converted to FP32
//     (converted once per block, not once per row).
// Costs at batch B per warp step (256 columns, R rows): R x LDG.128 of W, 2B x LDS.128 of X, 8 R B FFMA, and
// the conversion of W to FP32. At batch 4 on an H200 the FFMAs take about 0.28x the weights' streaming time
// (2 x 4 x 16384^2 FLOPs at 58.8 TFLOP/s against 512 MB at 4179 GB/s), hidden under the DRAM traffic as long as
// enough W is in flight: 16 warps per SM, each with the next step's W already requested. At batch 8 they take
// 0.57x, and with the conversions and shared loads the CUDA cores no longer keep up (1.8x batch 1's time on an
// H200, 2026-12-04): the launcher hands batches past 4 to the tensor cores.
// Rows per warp: 4; at B = 8 a 4 x 8 tile with its prefetched W needs more than the 128 registers a thread
// has when two blocks share an SM (ptxas spills), so 3 rows there.
template <int B>
inline constexpr int kRowsPerWarp = B >= 8 ? 3 : 4;
template <int B>
inline constexpr int kRowsPerBlock = kWarpsPerBlock * kRowsPerWarp<B>;  // rows that share one staging of X
inline constexpr int kChunk = 512;                                  // columns of X staged per step
inline constexpr int kPiece = 8;                                    // halves per 128-bit load

// Eight halves of row `row` of a `rows` x k matrix from column c, as raw pairs: one 128-bit load where rows
// are 16-byte aligned (k % 8 == 0) and the piece lies inside the row, else one half at a time with zeros
// past the end of the row and for rows past the last (so tails need no other code).
__device__ inline void fetch_piece(const __half* m, int row, int rows, int k, int c, __half2 (&out)[kPiece / 2]) {
  const __half* p = m + static_cast<std::size_t>(row) * k + c;
  if (row < rows && k % kPiece == 0 && c + kPiece <= k) {
    const uint4 raw = *reinterpret_cast<const uint4*>(p);
    memcpy(static_cast<void*>(out), &raw, sizeof raw);  // the bytes as half pairs (compiles to nothing)
  } else {
    const __half zero = __float2half(0.0f);
#pragma unroll
    for (int j = 0; j < kPiece / 2; ++j) {
      const bool lo = row < rows && c + 2 * j < k, hi = row < rows && c + 2 * j + 1 < k;
      out[j] = __halves2half2(lo ? p[2 * j] : zero, hi ? p[2 * j + 1] : zero);
    }
  }
}

__device__ inline void to_floats(const __half2 (&in)[kPiece / 2], float (&out)[kPiece]) {
#pragma unroll
  for (int j = 0; j < kPiece / 2; ++j) {
    const float2 f = __half22float2(in[j]);
    out[2 * j] = f.x;
    out[2 * j + 1] = f.y;
  }
}

// Staging layout of one chunk: for batch row b, the kChunk floats are split in two planes, elements 0-3 of
// every 8-column piece first, then elements 4-7. A lane then reads its piece as two float4 at consecutive
// 16-byte addresses across the warp: conflict-free, where one contiguous float[8] per lane (32-byte stride)
// would make every 128-bit shared load two-way bank-conflicted.
__device__ inline int staged_index(int b, int piece, int j) {
  return b * kChunk + (j / 4) * (kChunk / 2) + piece * 4 + j % 4;
}

// One thread's share of staging chunk [c0, c0 + kChunk) of the batch's inputs, in two steps so that the
// global loads of the next chunk overlap the math on the current one: fetch() into registers (kept as
// halves: half the registers; zeros for batch rows >= batch and columns >= k), then store() as floats into
// a staging buffer.
template <int B>
struct XStager {
  static constexpr int kPieces = B * kChunk / kPiece;                                   // pieces in a chunk
  static constexpr int kPerThread = (kPieces + kBlock - 1) / static_cast<int>(kBlock);  // at most 2 (B = 8)
  __half2 v[kPerThread][kPiece / 2];

  __device__ void fetch(const __half* x, int k, int batch, int c0) {
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      const int piece = static_cast<int>(threadIdx.x) + i * static_cast<int>(kBlock);
      const int b = piece / (kChunk / kPiece), c = c0 + piece % (kChunk / kPiece) * kPiece;
      if (piece < kPieces) fetch_piece(x, b, batch, k, c, v[i]);  // batch rows >= batch come back as zeros
    }
  }
  __device__ void store(float* stage) const {
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      const int piece = static_cast<int>(threadIdx.x) + i * static_cast<int>(kBlock);
      if (piece >= kPieces) continue;
      const int b = piece / (kChunk / kPiece), p = piece % (kChunk / kPiece);
      float f[kPiece];
      to_floats(v[i], f);
      *reinterpret_cast<float4*>(stage + staged_index(b, p, 0)) = make_float4(f[0], f[1], f[2], f[3]);
      *reinterpret_cast<float4*>(stage + staged_index(b, p, 4)) = make_float4(f[4], f[5], f[6], f[7]);
    }
  }
};

// B is the batch rounded up to a power of two (1 to 8): a compile-time bound keeps the R x B accumulators
// in registers; `batch` is the real count.
template <int B>
__global__ void __launch_bounds__(kBlock, 2) batched_kernel(const __half* __restrict__ w, const __half* __restrict__ x,
                                                            __half* __restrict__ y, int n, int k, int batch) {
  // STUDENT BEGIN (lab07.batched)
  // TODO(lab07.batched): a block owns kRowsPerBlock<B> rows at a time (grid-stride over row groups: the same
  //   loop count in every thread, as __syncthreads requires), warp `warp` the R = kRowsPerWarp<B> rows from
  //   group * kRowsPerBlock<B> + warp * R, with float acc[R][B]. Declare
  //   `__shared__ __align__(16) float stage[2][B * kChunk]`; stage chunk 0 (XStager<B>: fetch, store,
  //   __syncthreads), then per chunk: fetch the next chunk, and for each of the kChunk / 256 warp steps take
  //   lane's piece p = 32 s + lane (columns chunk * kChunk + 8 p) of each row (fetch_piece, best one step
  //   ahead, then to_floats), read batch row b's 8 inputs as two float4 at staged_index(b, p, 0) and
  //   (b, p, 4), FMA them into every row's acc[r][b]; then store the next chunk into the other buffer and
  //   __syncthreads. Finally warp_sum each accumulator (b < batch) and lane 0 writes y[b * n + row] for
  //   rows < n. About 50 lines. Handout: "Batching".
  rooflab::unused(w, x, y, n, k, batch);  // delete this line when the kernel is written
  // STUDENT END
}

// ---- batched GEMV on tensor cores (batch 5 to 64) ----
//
// Each warp owns a slab of 16 rows of W and computes them for the whole batch: Y^T (16 x batch) = W slab
// (16 x K) times X^T (K x batch), in 16 x 16 x 16 WMMA steps, FP16 in and FP32 accumulate. A block of
// kTcWarps warps owns kTcWarps adjacent slabs, and per step of kTcK columns it stages the batch's inputs
// (the batch padded to Tiles x 16 rows with zeros) in shared memory once for all its warps, each warp
// staging its own 16 x kTcK piece of W. Tails in n, K and the batch become zeros, so nothing reads past an
// array.
// Why these choices: a warp per slab that staged X on its own read all 2 MB of X from L2 for every 16 rows
// (2 GB per call at batch 64; 14x batch 1's time on an H100); shared by 4 warps that is 512 MB. The staged
// rows are padded by 8 halves (kTcLd): each row then starts 4 banks further round than the one before, so the
// 8 rows of 16 bytes a fragment load reads in one phase fall in different shared-memory banks (a 256-byte row
// pitch puts them all in the same ones). kTcK = 128 keeps 4 KB of W per warp in flight per step, and the
// staging is split in two (StripStager: fetch, then store) so that those 4 KB are requested a whole step
// ahead: a staging that loaded and stored one piece at a time waited for DRAM once per piece, 16 round trips
// per step, and left the memory 9% busy at batch 64 on an H200 (ncu, 2026-12-04). The strips at K's end, which
// may stop inside a piece, take a plain loop of their own (stage_edge), so that the loop the timed sizes run
// holds the 128-bit loads alone.
inline constexpr unsigned kTcBlock = 128;  // 4 warps: 4 slabs of 16 rows share one staging of X
inline constexpr int kTcWarps = kTcBlock / 32;
inline constexpr int kTcK = 128;           // K columns staged per step
inline constexpr int kTcLd = kTcK + 8;     // staged row pitch in halves (padding against bank conflicts)
inline constexpr int kMaxBatch = 64;

// One thread's share of a strip of `Rows` rows x kTcK columns of an FP16 matrix (total_rows x k, row-major),
// staged in two steps so that its global loads are in flight while the tensor cores work on the previous
// strip: fetch() issues the loads of the thread's 16-byte pieces into registers (all of them before any is
// used), store() writes them into a Rows x kTcLd shared tile. `Threads` threads share the strip (a warp: its
// lanes; a block: all its threads), thread `tid` takes pieces tid, tid + Threads, ... Rows past total_rows
// are zeros. Only for a whole strip: rows 16-byte aligned (k % 8 == 0) and the strip ending inside them
// (k0 + kTcK <= k); stage_edge() below copies any other.
template <int Rows, int Threads>
struct StripStager {
  static constexpr int kPieces = Rows * (kTcK / 8);                   // 16-byte pieces in the strip
  static constexpr int kPerThread = (kPieces + Threads - 1) / Threads;  // W: 8 per lane; X: 2 per tile of 16 rows
  uint4 v[kPerThread];

  __device__ void fetch(const __half* m, int row0, int total_rows, int k, int k0, int tid) {
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      const int piece = tid + i * Threads, r = piece / (kTcK / 8), c = piece % (kTcK / 8) * 8;
      const bool inside = piece < kPieces && row0 + r < total_rows;
      v[i] = inside ? *reinterpret_cast<const uint4*>(m + static_cast<std::size_t>(row0 + r) * k + k0 + c)
                    : make_uint4(0, 0, 0, 0);
    }
  }
  __device__ void store(__half* tile, int tid) const {
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      const int piece = tid + i * Threads, r = piece / (kTcK / 8), c = piece % (kTcK / 8) * 8;
      if (piece < kPieces) *reinterpret_cast<uint4*>(tile + r * kTcLd + c) = v[i];
    }
  }
};

// The strip at columns [k0, k0 + kTcK) of rows [row0, row0 + rows) straight into the rows x kTcLd shared tile,
// half by half, with zeros past k and past total_rows: for a strip StripStager cannot take (the end of a K that
// is not a multiple of kTcK, or any strip when k is not a multiple of 8). Each thread waits for its loads here.
__device__ inline void stage_edge(__half* tile, const __half* m, int row0, int total_rows, int k, int k0, int rows,
                                  int tid, int threads) {
  for (int e = tid; e < rows * kTcK; e += threads) {
    const int r = e / kTcK, c = e % kTcK;
    const bool inside = row0 + r < total_rows && k0 + c < k;
    tile[r * kTcLd + c] = inside ? m[static_cast<std::size_t>(row0 + r) * k + k0 + c] : __float2half(0.0f);
  }
}

// Tiles: the batch rounded up to 1, 2 or 4 tiles of 16 rows, a compile-time bound that keeps the
// accumulators and the staged pieces in registers; `batch` is the real count. Two blocks per SM at most
// (__launch_bounds__): at 4 tiles a thread holds 32 accumulators and 64 registers of staged pieces, and ptxas
// left to itself spills at 2 tiles on sm_80 (it aims at more blocks than the grid has).
template <int Tiles>
__global__ void __launch_bounds__(kTcBlock, 2)
    batched_tc_kernel(const __half* __restrict__ w, const __half* __restrict__ x, __half* __restrict__ y, int n, int k, int batch) {
  // STUDENT BEGIN (lab07.batched_tc)
  // TODO(lab07.batched_tc): block `blockIdx.x` owns kTcWarps adjacent slabs of 16 rows at a time (grid-stride
  //   over groups of slabs), warp `warp` the slab at row (group * kTcWarps + warp) * 16. Keep Tiles FP32
  //   accumulator fragments (one per 16 batch rows); declare the staging tiles __shared__ __align__(32), rows
  //   kTcLd halves apart: one 16-row tile of W per warp, one Tiles * 16-row tile of X for the block. The whole
  //   strips (k_whole = k / kTcK * kTcK columns when k % 8 == 0, else none) are staged a step ahead with a
  //   StripStager<16, 32> (the warp's lanes, W) and a StripStager<Tiles * 16, kTcBlock> (all the block's
  //   threads, X): fetch step 0 before the loop; in each step __syncthreads(), store() both, __syncthreads(),
  //   fetch() the next step's (if there is one), multiply. The columns left (k_whole to k) take a second loop:
  //   __syncthreads(), stage_edge() both, __syncthreads(), multiply. To multiply: for kk = 0, 16, ...:
  //   load_matrix_sync the W piece as matrix_a (row_major, ldm kTcLd) and each batch tile as matrix_b
  //   (col_major, ldm kTcLd: element (k, b) is at b * kTcLd + k), mma_sync. Then store each accumulator
  //   (store_matrix_sync, mem_col_major, into a per-warp 16 x 16 float tile, __syncwarp() before and after the
  //   lanes read it) and write y[b * n + row] for b < batch, row < n. About 70 lines. Handout: "Tensor cores
  //   for the batch", "Staging a step ahead".
  rooflab::unused(w, x, y, n, k, batch);  // delete this line when the kernel is written
  // STUDENT END
}

// ---- launchers ----

// Enough warps to keep every SM's loads in flight, never more than there are rows.
unsigned blocks_for_rows(int n) { return rooflab::grid_for(static_cast<std::size_t>(n), kWarpsPerBlock, 16 * sm_count()); }
// The batched kernel hands out groups of kRowsPerBlock<B> rows to blocks (24 or 32): a grid for the smaller
// groups serves every instance (blocks past the last group return at once).
unsigned blocks_for_row_groups(int n) {
  return rooflab::grid_for(static_cast<std::size_t>(n), kRowsPerBlock<8>, 8 * sm_count());
}
// The tensor-core kernel hands out groups of kTcWarps slabs of 16 rows to blocks, a slab per warp.
unsigned blocks_for_slabs(int n) {
  return rooflab::grid_for((static_cast<std::size_t>(n) + 15) / 16, kTcWarps, 16 * sm_count());
}

void gemv(const __half* w, const __half* x, __half* y, int n, int k, cudaStream_t stream) {
  // STUDENT BEGIN (lab07.gemv.launch)
  // TODO(lab07.gemv.launch): launch gemv_kernel<<<blocks_for_rows(n), kBlock, 0, stream>>>(...), then
  //   ROOFLAB_LAUNCH_CHECK(). Two lines.
  ROOFLAB_TODO("lab07.gemv.launch", w, x, y, n, k, stream);
  // STUDENT END
}

void batched_gemv(const __half* w, const __half* x, __half* y, int n, int k, int batch, cudaStream_t stream) {
  // STUDENT BEGIN (lab07.batched.launch)
  // TODO(lab07.batched.launch): batch 1 to 4: launch batched_kernel<B> for the smallest B in 1, 2, 4 that is
  //   >= batch (B must be a compile-time constant: an if/else chain) on blocks_for_row_groups(n) blocks of
  //   kBlock; batch 5 to 64: batched_tc_kernel<Tiles> for the smallest Tiles in 1, 2, 4 with Tiles * 16 >= batch,
  //   on blocks_for_slabs(n) blocks of kTcBlock; a batch over 64 throws std::invalid_argument. Then
  //   ROOFLAB_LAUNCH_CHECK().
  ROOFLAB_TODO("lab07.batched.launch", w, x, y, n, k, batch, stream);
  // STUDENT END
}

}  // namespace lab07
