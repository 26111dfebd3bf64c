// Kernels for the CPU backend's conformance tests of the CUDA library idioms Labs 04-08 use: cooperative
// groups (block and tile reductions, a softmax row with cg::reduce, tile shuffles at every width,
// partitions of partitions), cudaFuncSetAttribute with the kernel itself, and CUDA's mixed-sign min/max.
// Ordinary CUDA: also compiled by nvcc (rooflab_emu_tests_nvcc), so what passes here builds for a GPU.
#include "cg_kernels.hpp"

#include <rooflab/launch.hpp>

#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>

#include <cmath>
#include <stdexcept>

namespace cg = cooperative_groups;

namespace cgtest {

// ---- block reduction: tiles of 32 reduce, warp 0 combines the warps' sums ----

// out[block] = the sum of the block's elements of in[0, n). Any block size up to 1024 (the last warp may be
// partial, the last block ragged).
__global__ void block_sum_kernel(const float* in, float* out, int n) {
  __shared__ float warp_sums[32];
  const cg::thread_block block = cg::this_thread_block();
  const cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
  const int i = static_cast<int>(block.group_index().x * block.size() + block.thread_rank());
  const float v = i < n ? in[i] : 0.0f;
  const float warp_sum = cg::reduce(warp, v, cg::plus<float>());
  if (warp.thread_rank() == 0) warp_sums[warp.meta_group_rank()] = warp_sum;
  block.sync();  // every warp's sum is in shared memory before warp 0 reads them
  if (warp.meta_group_rank() == 0) {
    const float s = warp.thread_rank() < warp.meta_group_size() ? warp_sums[warp.thread_rank()] : 0.0f;
    const float total = cg::reduce(warp, s, cg::plus<float>());
    if (warp.thread_rank() == 0) out[block.group_index().x] = total;
  }
}

// ---- every reduction operator on tiles of Size ----

// Per thread: plus, less (minimum), greater (maximum), bit_and, bit_or, bit_xor of its tile's values, the
// int ones through cg::reduce and the float sum through a tile-sized butterfly by hand.
template <unsigned Size>
__global__ void tile_reduce_kernel(const int* in, const float* fin, TileReduceOut* out) {
  const cg::thread_block block = cg::this_thread_block();
  const auto tile = cg::tiled_partition<Size>(block);
  const unsigned t = block.thread_rank();
  const int v = in[t];
  const unsigned u = static_cast<unsigned>(v);
  TileReduceOut& o = out[t];
  o.sum = cg::reduce(tile, v, cg::plus<int>());
  o.min = cg::reduce(tile, v, cg::less<int>());
  o.max = cg::reduce(tile, v, cg::greater<int>());
  o.bit_and = cg::reduce(tile, u, cg::bit_and<unsigned>());
  o.bit_or = cg::reduce(tile, u, cg::bit_or<unsigned>());
  o.bit_xor = cg::reduce(tile, u, cg::bit_xor<unsigned>());
  o.fsum = cg::reduce(tile, fin[t], cg::plus<float>());
  o.fmax = cg::reduce(tile, fin[t], cg::greater<float>());
}

// ---- a softmax row per warp: max and sum with cg::reduce (the attention idiom) ----

// out[r][c] = exp(x[r][c] - max_r) / sum_r exp(x[r][c'] - max_r); one warp per row, cols of any length.
__global__ void softmax_rows_kernel(const float* x, float* out, int rows, int cols) {
  const cg::thread_block block = cg::this_thread_block();
  const cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
  const int row = static_cast<int>(block.group_index().x * warp.meta_group_size() + warp.meta_group_rank());
  if (row >= rows) return;  // the whole warp leaves together
  const float* in = x + static_cast<long>(row) * cols;
  float m = -INFINITY;
  for (int c = static_cast<int>(warp.thread_rank()); c < cols; c += 32) m = fmaxf(m, in[c]);
  m = cg::reduce(warp, m, cg::greater<float>());
  float s = 0.0f;
  for (int c = static_cast<int>(warp.thread_rank()); c < cols; c += 32) s += __expf(in[c] - m);
  s = cg::reduce(warp, s, cg::plus<float>());
  for (int c = static_cast<int>(warp.thread_rank()); c < cols; c += 32) {
    out[static_cast<long>(row) * cols + c] = __expf(in[c] - m) / s;
  }
}

// ---- tile shuffles, votes and ranks at width Size ----

template <unsigned Size>
__global__ void tile_shuffle_kernel(TileShuffleOut* out) {
  const cg::thread_block block = cg::this_thread_block();
  const cg::thread_block_tile<Size> tile = cg::tiled_partition<Size>(block);
  const unsigned r = tile.thread_rank();
  const int v = static_cast<int>(block.thread_rank()) * 10;
  TileShuffleOut& o = out[block.group_index().x * block.size() + block.thread_rank()];
  o.rank = r;
  o.size = tile.size();
  o.num_threads = tile.num_threads();
  o.meta_rank = tile.meta_group_rank();
  o.meta_size = tile.meta_group_size();
  o.from_next = tile.shfl(v, static_cast<int>((r + 1) % Size));
  o.down = tile.shfl_down(v, 1);
  o.up = tile.shfl_up(v, 1);
  o.xored = tile.shfl_xor(v, 1);
  o.ballot = tile.ballot(r % 2 == 1);
  o.any = tile.any(r == Size - 1);
  o.all = tile.all(r + 1 < Size);  // false: the last rank votes no
  o.all_true = tile.all(1);
  tile.sync();
  // Only the even tiles reduce: a tile's collectives wait for its own lanes, never for the other tiles of
  // its warp (which skip this one).
  o.even_tile_sum = -1;
  if (tile.meta_group_rank() % 2 == 0) o.even_tile_sum = cg::reduce(tile, v, cg::plus<int>());
  // A tile of this tile (Size / 2, or 1 for Size 1): ranks count within the parent tile.
  const auto sub = cg::tiled_partition<(Size > 1 ? Size / 2 : 1)>(tile);
  o.sub_rank = sub.thread_rank();
  o.sub_meta_rank = sub.meta_group_rank();
  o.sub_meta_size = sub.meta_group_size();
  o.sub_from_first = sub.shfl(v, 0);
  // The block's view, in a 2D block.
  o.block_rank = block.thread_rank();
  o.block_size = block.size();
  o.thread_index_x = block.thread_index().x;
  o.thread_index_y = block.thread_index().y;
  o.dim_x = block.dim_threads().x;
  o.group_x = block.group_index().x;
  o.free_rank = static_cast<unsigned>(cg::thread_rank(tile));
  o.free_size = static_cast<unsigned>(cg::group_size(tile));
  cg::sync(block);
}

// Ranks and counts of tiles of 16 in a block whose size is not a multiple of 16 (no collectives: a
// partial tile's lanes do not all exist). out[t] = {meta_group_rank, meta_group_size, thread_rank}.
__global__ void tile_meta_kernel(unsigned* out) {
  const cg::thread_block block = cg::this_thread_block();
  const auto tile = cg::tiled_partition<16>(block);
  out[3 * block.thread_rank()] = tile.meta_group_rank();
  out[3 * block.thread_rank() + 1] = tile.meta_group_size();
  out[3 * block.thread_rank() + 2] = tile.thread_rank();
}

// ---- a kernel that opts in to more than 48 KiB of dynamic shared memory ----

// out[t] = t + the sum of the block's dynamic shared memory as every thread wrote it (count floats).
__global__ void big_shared_kernel(float* out, int count) {
  ROOFLAB_DYNAMIC_SHARED(float, buffer);
  const cg::thread_block block = cg::this_thread_block();
  for (int i = static_cast<int>(block.thread_rank()); i < count; i += static_cast<int>(block.size())) buffer[i] = 1.0f;
  block.sync();
  float s = 0.0f;
  for (int i = 0; i < count; ++i) s += buffer[i];
  out[block.thread_rank()] = static_cast<float>(block.thread_rank()) + s;
}

// ---- CUDA's min/max overloads, mixed signs and widths ----

__global__ void min_max_kernel(int a, unsigned b, long long c, unsigned long long d, float f, double g,
                               MinMaxOut* out) {
  // The result types are CUDA's (crt/math_functions.h): a mixed-sign pair is unsigned, float/double is double.
  static_assert(sizeof(min(a, b)) == sizeof(unsigned) && static_cast<decltype(min(a, b))>(-1) > 0);
  static_assert(sizeof(max(b, a)) == sizeof(unsigned) && static_cast<decltype(max(b, a))>(-1) > 0);
  static_assert(sizeof(min(c, d)) == 8 && static_cast<decltype(min(c, d))>(-1) > 0);
  static_assert(sizeof(min(f, g)) == sizeof(double) && sizeof(max(g, f)) == sizeof(double));
  out->min_int_unsigned = min(a, b);
  out->max_int_unsigned = max(a, b);
  out->min_unsigned_int = min(b, a);
  out->max_unsigned_int = max(b, a);
  out->min_ll_ull = min(c, d);
  out->max_ull_ll = max(d, c);
  out->min_ll = min(c, static_cast<long long>(a));
  out->min_float_double = min(f, g);
  out->max_double_float = max(g, f);
  out->min_int = min(a, -a);
}

// ---- launchers ----

void block_sum(const float* in, float* out, int n, unsigned block) {
  rooflab::launch(block_sum_kernel, dim3((static_cast<unsigned>(n) + block - 1) / block), dim3(block), 0, nullptr, in,
                  out, n);
}

void tile_reduce(unsigned size, const int* in, const float* fin, TileReduceOut* out, unsigned threads) {
  const dim3 grid(1), block(threads);
  switch (size) {
    case 32: rooflab::launch(tile_reduce_kernel<32>, grid, block, 0, nullptr, in, fin, out); break;
    case 16: rooflab::launch(tile_reduce_kernel<16>, grid, block, 0, nullptr, in, fin, out); break;
    case 8: rooflab::launch(tile_reduce_kernel<8>, grid, block, 0, nullptr, in, fin, out); break;
    case 4: rooflab::launch(tile_reduce_kernel<4>, grid, block, 0, nullptr, in, fin, out); break;
    case 2: rooflab::launch(tile_reduce_kernel<2>, grid, block, 0, nullptr, in, fin, out); break;
    default: throw std::invalid_argument("tile_reduce: size must be 2, 4, 8, 16 or 32");
  }
}

void softmax_rows(const float* x, float* out, int rows, int cols) {
  constexpr unsigned kWarps = 4;
  rooflab::launch(softmax_rows_kernel, dim3((static_cast<unsigned>(rows) + kWarps - 1) / kWarps), dim3(32 * kWarps), 0,
                  nullptr, x, out, rows, cols);
}

void tile_shuffle(unsigned size, TileShuffleOut* out, dim3 block) {
  switch (size) {
    case 32: rooflab::launch(tile_shuffle_kernel<32>, dim3(2), block, 0, nullptr, out); break;
    case 16: rooflab::launch(tile_shuffle_kernel<16>, dim3(2), block, 0, nullptr, out); break;
    case 8: rooflab::launch(tile_shuffle_kernel<8>, dim3(2), block, 0, nullptr, out); break;
    case 4: rooflab::launch(tile_shuffle_kernel<4>, dim3(2), block, 0, nullptr, out); break;
    case 2: rooflab::launch(tile_shuffle_kernel<2>, dim3(2), block, 0, nullptr, out); break;
    default: throw std::invalid_argument("tile_shuffle: size must be 2, 4, 8, 16 or 32");
  }
}

void tile_meta(unsigned* out, unsigned threads) {
  rooflab::launch(tile_meta_kernel, dim3(1), dim3(threads), 0, nullptr, out);
}

void big_shared(float* out, unsigned threads, std::size_t bytes, bool opt_in) {
  // cudaFuncSetAttribute with the kernel itself (the C++ template of cuda_runtime.h), as lab code writes it.
  if (opt_in) {
    ROOFLAB_CUDA_CHECK(
        cudaFuncSetAttribute(big_shared_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
  }
  rooflab::launch(big_shared_kernel, dim3(1), dim3(threads), bytes, nullptr, out,
                  static_cast<int>(bytes / sizeof(float)));
}

int big_shared_max_dynamic_bytes() {
  cudaFuncAttributes attr{};
  ROOFLAB_CUDA_CHECK(cudaFuncGetAttributes(&attr, big_shared_kernel));
  return attr.maxDynamicSharedSizeBytes;
}

void min_max(int a, unsigned b, long long c, unsigned long long d, float f, double g, MinMaxOut* out) {
  rooflab::launch(min_max_kernel, dim3(1), dim3(1), 0, nullptr, a, b, c, d, f, g, out);
}

}  // namespace cgtest
