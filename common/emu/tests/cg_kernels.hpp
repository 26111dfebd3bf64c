// Launchers of the CPU backend's conformance kernels for CUDA library idioms (cg_kernels.cu).
#pragma once

#include <rooflab/cuda.hpp>

#include <cstddef>

namespace cgtest {

// out[b] = sum of in[b * block, (b + 1) * block) within [0, n); block a multiple of 32.
void block_sum(const float* in, float* out, int n, unsigned block);

// What thread t got from cooperative_groups::reduce over its tile (tile_reduce_kernel).
struct TileReduceOut {
  int sum, min, max;
  unsigned bit_and, bit_or, bit_xor;
  float fsum, fmax;
};
// One block of `threads` threads (a multiple of 32), tiles of `size` (2 ... 32).
void tile_reduce(unsigned size, const int* in, const float* fin, TileReduceOut* out, unsigned threads);

// Row-wise softmax of a rows x cols row-major matrix, one warp per row.
void softmax_rows(const float* x, float* out, int rows, int cols);

// What thread t (its rank in the block) saw in tile_shuffle_kernel<size>.
struct TileShuffleOut {
  unsigned rank, size, num_threads, meta_rank, meta_size;
  int from_next, down, up, xored;
  unsigned ballot;
  int any, all, all_true;
  int even_tile_sum;  // the tile's sum of 10 x block rank in even tiles, -1 in odd ones
  unsigned sub_rank, sub_meta_rank, sub_meta_size;
  int sub_from_first;
  unsigned block_rank, block_size, thread_index_x, thread_index_y, dim_x, group_x;
  unsigned free_rank, free_size;
};
// Two blocks of `block` threads (a multiple of 32 in all), tiles of `size`; out[b * threads + rank].
void tile_shuffle(unsigned size, TileShuffleOut* out, dim3 block);

// One block of `threads` threads in tiles of 16: out[3 t .. 3 t + 2] = meta_group_rank, meta_group_size,
// thread_rank of thread t's tile.
void tile_meta(unsigned* out, unsigned threads);

// One block with `bytes` of dynamic shared memory; opt_in calls cudaFuncSetAttribute(kernel, ...) first.
// out[t] = t + bytes / 4.
void big_shared(float* out, unsigned threads, std::size_t bytes, bool opt_in);
// cudaFuncGetAttributes(&attr, big_shared_kernel).maxDynamicSharedSizeBytes
int big_shared_max_dynamic_bytes();

// min/max of CUDA's device library on mixed argument types (min_max_kernel).
struct MinMaxOut {
  unsigned min_int_unsigned, max_int_unsigned, min_unsigned_int, max_unsigned_int;
  unsigned long long min_ll_ull, max_ull_ll;
  long long min_ll;
  double min_float_double, max_double_float;
  int min_int;
};
void min_max(int a, unsigned b, long long c, unsigned long long d, float f, double g, MinMaxOut* out);

}  // namespace cgtest
