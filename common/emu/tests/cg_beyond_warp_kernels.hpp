// Launchers of the kernels that check cooperative groups beyond one warp on the CPU backend
// (cg_beyond_warp_kernels.cu): tiles of several warps that take different branches, a two-phase grid
// reduction with and without grid.sync(), grid.sync() outside a cooperative launch, and tiles that cannot be.
#pragma once

#include <rooflab/cuda.hpp>

namespace cgbeyond {

// One block of 256 threads in two 128-thread tiles that take different branches: tile 0 syncs three times
// at one line, tile 1 once at another. out[t] = what thread t read from its tile's slots after its syncs
// (the sum of its tile's 128 values written before the syncs: 128 * 127 / 2 + 128 * tile).
void divergent_tiles(int* out);

// Blocks of 64 threads write their block sums, then (after grid.sync() when `sync` is set) block 0 adds
// them into *total. Launched with cudaLaunchCooperativeKernel; returns its error code.
cudaError_t two_phase_sum(const int* in, int* block_sums, int* total, int n, unsigned blocks, bool sync);

// The same kernel launched with <<<>>>: its grid.sync() must be reported.
void two_phase_sum_plain_launch(const int* in, int* block_sums, int* total, int n, unsigned blocks);

// What thread t of one block of `threads` threads saw (group_facts_kernel, launched with <<<>>>).
struct GroupFacts {
  int grid_valid;                        // this_grid().is_valid(): 0 outside a cooperative launch
  unsigned warp_rank, warp_size;         // tiled_partition<32>(block) as a thread_group
  unsigned eight_rank, eight_size;       // tiled_partition(that group, 8)
  unsigned alone;                        // this_thread(): size * 100 + thread_rank = 100
  unsigned sixteen_size;                 // tiled_partition(block, 16): the last tile may be short
  int exclusive, largest;                // over tiled_partition<64>(block), when the block holds whole tiles
};
void group_facts(GroupFacts* out, unsigned threads);

// A 128-thread tile of a 64-thread block (the tile cannot exist).
void tile_larger_than_block(int* out);

// Thread 130 of a 256-thread block returns before its 128-thread tile's sync (the sync cannot complete).
void tile_member_exits(int* out);

}  // namespace cgbeyond
