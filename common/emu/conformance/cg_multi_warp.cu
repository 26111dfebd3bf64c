// Cooperative groups beyond one warp, written as the CUDA samples and the programming guide write them: a
// block reduction that reduces each warp with thread_block_tile<32> and then each 128-thread tile (cg::reduce
// on both, and by hand through shared memory with the tile's own sync), an inclusive scan and shfl over a
// 64-thread tile, a device function taking `const cg::thread_group&` (the type-erased group) called with
// the block and with a tile of 16 made by tiled_partition(block, 16) at run time, and block_tile_memory.
// Checked against host loops; exit 0 when all match.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cooperative_groups/scan.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

namespace cg = cooperative_groups;

constexpr int kThreads = 256;  // two 128-thread tiles, four 64-thread tiles, eight warps per block

// Each warp's sum and each 128-thread tile's sum, by cg::reduce and by hand (warp sums in shared memory,
// then the tile's first thread adds them after the tile's own sync).
__global__ void tile_sums_kernel(const int* in, int* warp_sums, int* tile_sums, int* manual_sums, int n) {
  __shared__ int per_warp[kThreads / 32];
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<128> tile = cg::tiled_partition<128>(block);
  cg::thread_block_tile<32> warp = cg::tiled_partition<32>(tile);
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const int x = i < n ? in[i] : 0;
  const int warp_sum = cg::reduce(warp, x, cg::plus<int>());
  const int tile_sum = cg::reduce(tile, x, cg::plus<int>());
  if (warp.thread_rank() == 0) per_warp[block.thread_rank() / 32] = warp_sum;
  tile.sync();  // only this tile's warps: the other tile may still be reducing
  if (tile.thread_rank() == 0) {
    int s = 0;
    for (unsigned w = 0; w < tile.num_threads() / 32; ++w) s += per_warp[tile.meta_group_rank() * 4 + w];
    manual_sums[blockIdx.x * tile.meta_group_size() + tile.meta_group_rank()] = s;
    tile_sums[blockIdx.x * tile.meta_group_size() + tile.meta_group_rank()] = tile_sum;
  }
  if (warp.thread_rank() == 0) warp_sums[i / 32] = warp_sum;
}

// Over 64-thread tiles: the running sum (inclusive scan), the value of the tile's rank 40 (shfl), whether
// any / all values in the tile are odd.
__global__ void tile64_kernel(const int* in, int* scans, int* from40, int* votes) {
  __shared__ cg::block_tile_memory<kThreads> scratch;  // what pre-sm_80 GPUs need for tiles over 32 threads
  cg::thread_block block = cg::this_thread_block(scratch);
  auto tile = cg::tiled_partition<64>(block);
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  scans[i] = cg::inclusive_scan(tile, in[i]);
  from40[i] = tile.shfl(in[i], 40);
  votes[i] = tile.any(in[i] % 2 != 0) * 2 + tile.all(in[i] % 2 != 0);
}

// A tree sum over any group, through the group's own slice of shared memory: the shape of the programming
// guide's thread_group examples. Every thread of g calls it; each gets the group's total.
__device__ int group_sum(const cg::thread_group& g, int* slots, int value) {
  const unsigned rank = static_cast<unsigned>(g.thread_rank());
  for (unsigned half = static_cast<unsigned>(g.size()) / 2; half > 0; half /= 2) {
    slots[rank] = value;
    g.sync();
    if (rank < half) value += slots[rank + half];
    g.sync();
  }
  return value;  // rank 0's value is the total
}

__global__ void thread_group_kernel(const int* in, int* block_totals, int* tile_totals) {
  __shared__ int slots[kThreads];
  cg::thread_block block = cg::this_thread_block();
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const int total = group_sum(block, slots, in[i]);
  if (block.thread_rank() == 0) block_totals[blockIdx.x] = total;
  block.sync();
  cg::thread_group tile = cg::tiled_partition(block, 16);  // size known at run time
  int* mine = slots + (block.thread_rank() / 16) * 16;     // each tile its own 16 slots
  const int tile_total = group_sum(tile, mine, in[i]);
  if (tile.thread_rank() == 0) tile_totals[i / 16] = tile_total;
}

int check(const char* what, const std::vector<int>& got, const std::vector<int>& want) {
  int bad = 0;
  for (std::size_t k = 0; k < want.size(); ++k) {
    if (got[k] != want[k] && ++bad <= 3) std::printf("%s[%zu] = %d, want %d\n", what, k, got[k], want[k]);
  }
  return bad;
}

std::vector<int> download(const int* d, int count) {
  std::vector<int> h(count);
  cudaMemcpy(h.data(), d, count * sizeof(int), cudaMemcpyDeviceToHost);
  return h;
}

int main() {
  const int blocks = 3, n = blocks * kThreads;
  std::vector<int> h(n);
  for (int i = 0; i < n; ++i) h[i] = (i * 7919 + 13) % 101 - 50;
  int *d_in, *d_warp, *d_tile, *d_manual, *d_scan, *d_from40, *d_votes, *d_block, *d_tile16;
  int* buffers[] = {nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr};
  for (int*& b : buffers) cudaMalloc(&b, n * sizeof(int));
  d_in = buffers[0], d_warp = buffers[1], d_tile = buffers[2], d_manual = buffers[3], d_scan = buffers[4];
  d_from40 = buffers[5], d_votes = buffers[6], d_block = buffers[7], d_tile16 = buffers[8];
  cudaMemcpy(d_in, h.data(), n * sizeof(int), cudaMemcpyHostToDevice);
  tile_sums_kernel<<<blocks, kThreads>>>(d_in, d_warp, d_tile, d_manual, n);
  tile64_kernel<<<blocks, kThreads>>>(d_in, d_scan, d_from40, d_votes);
  thread_group_kernel<<<blocks, kThreads>>>(d_in, d_block, d_tile16);
  int bad = cudaDeviceSynchronize() == cudaSuccess && cudaGetLastError() == cudaSuccess ? 0 : 1;

  // Host references: sums over runs of 32, 128, 16 and 256 elements; scans and votes over runs of 64.
  const auto sums_of = [&](int run) {
    std::vector<int> s(n / run, 0);
    for (int i = 0; i < n; ++i) s[i / run] += h[i];
    return s;
  };
  std::vector<int> scan(n), from40(n), votes(n);
  for (int i = 0; i < n; ++i) {
    const int first = i / 64 * 64;
    scan[i] = (i == first ? 0 : scan[i - 1]) + h[i];
    from40[i] = h[first + 40];
    bool any = false, all = true;
    for (int k = first; k < first + 64; ++k) {
      any = any || h[k] % 2 != 0;
      all = all && h[k] % 2 != 0;
    }
    votes[i] = (any ? 2 : 0) + (all ? 1 : 0);
  }
  bad += check("warp sum", download(d_warp, n / 32), sums_of(32));
  bad += check("128-tile sum (cg::reduce)", download(d_tile, n / 128), sums_of(128));
  bad += check("128-tile sum (by hand)", download(d_manual, n / 128), sums_of(128));
  bad += check("64-tile inclusive scan", download(d_scan, n), scan);
  bad += check("64-tile shfl from rank 40", download(d_from40, n), from40);
  bad += check("64-tile any/all", download(d_votes, n), votes);
  bad += check("thread_group sum (block)", download(d_block, blocks), sums_of(kThreads));
  bad += check("thread_group sum (tiled_partition(block, 16))", download(d_tile16, n / 16), sums_of(16));
  std::printf("cooperative groups beyond a warp: %s\n", bad == 0 ? "match the host reference" : "MISMATCH");
  for (int* b : buffers) cudaFree(b);
  return bad == 0 ? 0 : 1;
}
