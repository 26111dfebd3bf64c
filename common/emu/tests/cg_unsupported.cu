// Cooperative groups the CPU backend does not emulate: each CG_CASE_* must fail to compile on the CPU
// backend with a message naming what is missing (CTest compiles each case and matches the message; see
// CMakeLists.txt). COALESCED and CLUSTER are valid CUDA that nvcc -arch=sm_80 (sm_90 for clusters) compiles;
// the others are errors under nvcc too: a reduce or scan over a whole thread_block, and shfl_down on a tile
// of more than one warp (the toolkit gives those tiles sync, shfl, any and all only). Without a case the
// file is one ordinary kernel, also built by nvcc.
#if defined(CG_CASE_BLOCK_SCAN)
#include <cooperative_groups/scan.h>
#endif
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>

namespace cg = cooperative_groups;

namespace cgtest {

__global__ void unsupported_kernel(int* out) {
  const cg::thread_block block = cg::this_thread_block();
  int v = static_cast<int>(block.thread_rank());
#if defined(CG_CASE_COALESCED)
  v = static_cast<int>(cg::coalesced_threads().size());
#elif defined(CG_CASE_CLUSTER)
  v = static_cast<int>(cg::this_cluster().block_rank());
#elif defined(CG_CASE_TILE_64_SHFL_DOWN)
  v = cg::tiled_partition<64>(block).shfl_down(v, 1);
#elif defined(CG_CASE_BLOCK_REDUCE)
  v = cg::reduce(block, v, cg::plus<int>());
#elif defined(CG_CASE_BLOCK_SCAN)
  v = cg::inclusive_scan(block, v);
#endif
  out[block.thread_rank()] = v;
}

}  // namespace cgtest
