// A single-pass reduction over the whole grid with cooperative groups, as the CUDA samples' multi-block
// reduction does it: the host checks cudaDevAttrCooperativeLaunch, sizes the grid from
// cudaOccupancyMaxActiveBlocksPerMultiprocessor and the SM count so that every block is resident at once,
// and launches with cudaLaunchCooperativeKernel; each block reduces a grid-stride slice (warp tiles, then
// shared memory), this_grid().sync() waits for every block, and block 0 adds the blocks' sums. A grid one
// block larger than the device holds must be refused with cudaErrorCooperativeLaunchTooLarge.
// Checked against a host sum; exit 0 when all match.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

namespace cg = cooperative_groups;

constexpr int kThreads = 128;

__global__ void grid_sum_kernel(const double* in, double* block_sums, double* total, unsigned long long* facts, int n) {
  __shared__ double warp_sums[kThreads / 32];
  cg::grid_group grid = cg::this_grid();
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
  double s = 0.0;
  for (unsigned long long i = grid.thread_rank(); i < static_cast<unsigned long long>(n); i += grid.size()) s += in[i];
  s = cg::reduce(warp, s, cg::plus<double>());
  if (warp.thread_rank() == 0) warp_sums[warp.meta_group_rank()] = s;
  block.sync();
  if (block.thread_rank() == 0) {
    double b = 0.0;
    for (unsigned w = 0; w < warp.meta_group_size(); ++w) b += warp_sums[w];
    block_sums[grid.block_rank()] = b;
  }
  grid.sync();  // every block's sum is written before block 0 reads them
  if (grid.block_rank() == 0 && block.thread_rank() == 0) {
    double t = 0.0;
    for (unsigned long long k = 0; k < grid.num_blocks(); ++k) t += block_sums[k];
    *total = t;
    facts[0] = grid.is_valid() ? 1 : 0;
    facts[1] = grid.num_blocks();
    facts[2] = grid.dim_blocks().x;
    facts[3] = grid.num_threads();
  }
}

int main() {
  int device = 0, cooperative = 0, sms = 0, per_sm = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, device);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  if (cooperative == 0) {
    std::printf("the device does not support cooperative launches\n");
    return 1;
  }
  const int smem = 0;
  cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, grid_sum_kernel, kThreads, smem);
  const int n = 100003;
  const int blocks = std::min(per_sm * sms, (n + kThreads - 1) / kThreads / 8);  // at most every block resident
  std::vector<double> h(n);
  double want = 0.0;
  for (int i = 0; i < n; ++i) {
    h[i] = static_cast<double>((i * 2654435761u) % 1000) / 8.0;  // exact in binary: the order cannot matter
    want += h[i];
  }
  double *d_in = nullptr, *d_block_sums = nullptr, *d_total = nullptr;
  unsigned long long* d_facts = nullptr;
  cudaMalloc(&d_in, n * sizeof(double));
  cudaMalloc(&d_block_sums, (per_sm * sms + 1) * sizeof(double));
  cudaMalloc(&d_total, sizeof(double));
  cudaMalloc(&d_facts, 4 * sizeof(unsigned long long));
  cudaMemcpy(d_in, h.data(), n * sizeof(double), cudaMemcpyHostToDevice);
  int count = n;
  void* args[] = {&d_in, &d_block_sums, &d_total, &d_facts, &count};
  int bad = 0;
  if (cudaLaunchCooperativeKernel((void*)grid_sum_kernel, dim3(blocks), dim3(kThreads), args, smem, 0) != cudaSuccess) {
    std::printf("cudaLaunchCooperativeKernel failed: %s\n", cudaGetErrorString(cudaGetLastError()));
    ++bad;
  }
  double got = 0.0;
  unsigned long long facts[4] = {};
  cudaMemcpy(&got, d_total, sizeof(double), cudaMemcpyDeviceToHost);
  cudaMemcpy(facts, d_facts, sizeof facts, cudaMemcpyDeviceToHost);
  if (got != want) {
    std::printf("grid sum %.3f, want %.3f (%d blocks)\n", got, want, blocks);
    ++bad;
  }
  const unsigned long long want_facts[4] = {1, static_cast<unsigned long long>(blocks),
                                            static_cast<unsigned long long>(blocks),
                                            static_cast<unsigned long long>(blocks) * kThreads};
  for (int k = 0; k < 4; ++k) {
    if (facts[k] != want_facts[k]) {
      std::printf("grid fact %d = %llu, want %llu\n", k, facts[k], want_facts[k]);
      ++bad;
    }
  }
  // One block more than the device holds at once: refused before anything runs, as on a GPU.
  const cudaError_t too_large = cudaLaunchCooperativeKernel((void*)grid_sum_kernel, dim3(per_sm * sms + 1),
                                                            dim3(kThreads), args, smem, 0);
  if (too_large != cudaErrorCooperativeLaunchTooLarge) {
    std::printf("a grid of %d blocks: %s, want cudaErrorCooperativeLaunchTooLarge\n", per_sm * sms + 1,
                cudaGetErrorName(too_large));
    ++bad;
  }
  cudaGetLastError();  // clear it
  std::printf("grid-wide reduction with grid.sync(): %s\n", bad == 0 ? "matches the host reference" : "MISMATCH");
  cudaFree(d_in);
  cudaFree(d_block_sums);
  cudaFree(d_total);
  cudaFree(d_facts);
  return bad == 0 ? 0 : 1;
}
