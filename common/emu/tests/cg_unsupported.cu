// Cooperative groups the CPU backend does not emulate: each CG_CASE_* must fail to compile on the CPU
// backend with a message naming what is missing (CTest compiles each case and matches the message; see
// CMakeLists.txt). Every case but BLOCK_REDUCE and BLOCK_SCAN is valid CUDA that nvcc -arch=sm_80 compiles;
// a reduce or scan over a whole thread_block is an error under nvcc too. Without a case the file is one ordinary kernel, also
// built by nvcc.
#if defined(CG_CASE_BLOCK_SCAN)
#include <cooperative_groups/scan.h>
#endif
#if defined(CG_CASE_MEMCPY_ASYNC)
#include <cooperative_groups/memcpy_async.h>
#endif
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>

namespace cg = cooperative_groups;

namespace cgtest {

__global__ void unsupported_kernel(int* out) {
  const cg::thread_block block = cg::this_thread_block();
  int v = static_cast<int>(block.thread_rank());
#if defined(CG_CASE_THIS_GRID)
  cg::this_grid().sync();
#elif defined(CG_CASE_THREAD_GROUP)
  const cg::thread_group g = block;
  v = static_cast<int>(g.thread_rank());
#elif defined(CG_CASE_COALESCED)
  v = static_cast<int>(cg::coalesced_threads().size());
#elif defined(CG_CASE_RUNTIME_TILE)
  v = static_cast<int>(cg::tiled_partition(block, 8).thread_rank());
#elif defined(CG_CASE_TILE_64)
  v = static_cast<int>(cg::tiled_partition<64>(block).thread_rank());
#elif defined(CG_CASE_BLOCK_REDUCE)
  v = cg::reduce(block, v, cg::plus<int>());
#elif defined(CG_CASE_BLOCK_SCAN)
  v = cg::inclusive_scan(block, v);
#endif
  out[block.thread_rank()] = v;
}

}  // namespace cgtest
