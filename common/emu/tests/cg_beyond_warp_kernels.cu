// Kernels that check cooperative groups beyond one warp on the CPU backend (tests in test_cg_beyond_warp.cpp):
// each is written so that a wrong implementation fails. A tile sync that waited for the whole block would
// deadlock divergent_tiles_kernel (its tiles sync at different lines, a different number of times: legal on a
// GPU); a grid reduction without grid.sync() reads block sums not yet written when block 0 runs first; a
// grid.sync() outside a cooperative launch is undefined on a GPU and must be reported.
#include "cg_beyond_warp_kernels.hpp"

#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cooperative_groups/scan.h>

namespace cg = cooperative_groups;

namespace cgbeyond {

__global__ void divergent_tiles_kernel(int* out) {
  __shared__ int slots[256];
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<128> tile = cg::tiled_partition<128>(block);
  const unsigned me = block.thread_rank(), first = me - tile.thread_rank();
  slots[me] = static_cast<int>(tile.thread_rank() + 128 * tile.meta_group_rank());
  int sum = 0;
  if (tile.meta_group_rank() == 0) {
    for (int round = 0; round < 3; ++round) tile.sync();  // tile 0 waits three times here
  } else {
    tile.sync();  // tile 1 once, elsewhere
  }
  for (unsigned k = 0; k < tile.num_threads(); ++k) sum += slots[first + k];
  out[me] = sum;
}

// Phase 1: each block's sum of a grid-stride slice; phase 2: block 0 adds the block sums.
__global__ void two_phase_sum_kernel(const int* in, int* block_sums, int* total, int n, bool sync) {
  __shared__ int partial[64];
  cg::grid_group grid = cg::this_grid();
  cg::thread_block block = cg::this_thread_block();
  int s = 0;
  for (unsigned long long i = grid.thread_rank(); i < static_cast<unsigned long long>(n); i += grid.size()) s += in[i];
  partial[block.thread_rank()] = s;
  block.sync();
  if (block.thread_rank() == 0) {
    int b = 0;
    for (unsigned k = 0; k < block.size(); ++k) b += partial[k];
    block_sums[grid.block_rank()] = b;
  }
  if (sync) grid.barrier_wait(grid.barrier_arrive());  // the split form of grid.sync()
  if (grid.block_rank() == 0 && block.thread_rank() == 0) {
    int t = 0;
    for (unsigned long long k = 0; k < grid.num_blocks(); ++k) t += block_sums[k];
    *total = t;
  }
}

__global__ void tile_of_block_kernel(int* out) {
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<128> tile = cg::tiled_partition<128>(block);
  out[block.thread_rank()] = static_cast<int>(tile.thread_rank());
}

__global__ void tile_member_exits_kernel(int* out) {
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<128> tile = cg::tiled_partition<128>(block);
  if (block.thread_rank() == 130) return;
  tile.sync();
  out[block.thread_rank()] = 1;
}

// What each thread of a <<<>>> launch sees of the groups (GroupFacts, one per thread of the block).
__global__ void group_facts_kernel(GroupFacts* out) {
  cg::thread_block block = cg::this_thread_block();
  GroupFacts f{};
  f.grid_valid = cg::this_grid().is_valid() ? 1 : 0;
  const cg::thread_group warp = cg::tiled_partition<32>(block);  // a tile of one warp is a thread_group
  f.warp_rank = static_cast<unsigned>(warp.thread_rank());
  f.warp_size = static_cast<unsigned>(warp.size());
  const cg::thread_group eight = cg::tiled_partition(warp, 8);  // run-time partition of a tile
  f.eight_rank = static_cast<unsigned>(eight.thread_rank());
  f.eight_size = static_cast<unsigned>(eight.size());
  const cg::thread_group me = cg::this_thread();
  f.alone = static_cast<unsigned>(me.size() * 100 + me.thread_rank());
  const cg::thread_group sixteen = cg::tiled_partition(block, 16);
  f.sixteen_size = static_cast<unsigned>(sixteen.size());
  sixteen.sync();
  if (block.size() % 64 == 0) {
    cg::thread_block_tile<64> tile = cg::tiled_partition<64>(block);
    f.exclusive = cg::exclusive_scan(tile, 1);
    f.largest = cg::reduce(tile, static_cast<int>(block.thread_rank()), cg::greater<int>());
  }
  out[block.thread_rank()] = f;
}

void group_facts(GroupFacts* out, unsigned threads) { group_facts_kernel<<<1, threads>>>(out); }

void divergent_tiles(int* out) { divergent_tiles_kernel<<<1, 256>>>(out); }

cudaError_t two_phase_sum(const int* in, int* block_sums, int* total, int n, unsigned blocks, bool sync) {
  void* args[] = {&in, &block_sums, &total, &n, &sync};
  return cudaLaunchCooperativeKernel((void*)two_phase_sum_kernel, dim3(blocks), dim3(64), args, 0, nullptr);
}

void two_phase_sum_plain_launch(const int* in, int* block_sums, int* total, int n, unsigned blocks) {
  two_phase_sum_kernel<<<blocks, 64>>>(in, block_sums, total, n, true);
}

void tile_larger_than_block(int* out) { tile_of_block_kernel<<<1, 64>>>(out); }

void tile_member_exits(int* out) { tile_member_exits_kernel<<<1, 256>>>(out); }

}  // namespace cgbeyond
