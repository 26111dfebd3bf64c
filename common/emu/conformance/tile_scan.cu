// Prefix sums inside tiles with cooperative groups' scans (<cooperative_groups/scan.h>), as stream
// compaction and radix-sort passes use them: each warp tile's inclusive sum, each 8-thread tile's
// exclusive count of kept elements (the slot each kept element gets), and a scan with an operator that
// does not commute (the order of lanes must be kept). Checked against host loops; exit 0 when all match.
#include <cooperative_groups.h>
#include <cooperative_groups/scan.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

namespace cg = cooperative_groups;

// Keeps the last nonzero value seen so far: "last" is not commutative, so lane order matters.
struct LastNonzero {
  __device__ int operator()(int earlier, int later) const { return later != 0 ? later : earlier; }
};

__global__ void tile_scans_kernel(const int* in, int* sums, int* slots, int* last, int n) {
  const cg::thread_block block = cg::this_thread_block();
  const auto warp = cg::tiled_partition<32>(block);
  const auto eight = cg::tiled_partition<8>(block);
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const int x = i < n ? in[i] : 0;
  const int sum = cg::inclusive_scan(warp, x);
  const int slot = cg::exclusive_scan(eight, x % 3 == 0 ? 1 : 0);
  const int seen = cg::inclusive_scan(warp, x % 5 == 0 ? 0 : x, LastNonzero());
  if (i < n) {
    sums[i] = sum;
    slots[i] = slot;
    last[i] = seen;
  }
}

int main() {
  const int n = 200, threads = 64, blocks = (n + threads - 1) / threads;
  std::vector<int> h(n);
  for (int i = 0; i < n; ++i) h[i] = (i * 37 + 11) % 23;
  int *d_in = nullptr, *d_sums = nullptr, *d_slots = nullptr, *d_last = nullptr;
  cudaMalloc(&d_in, n * sizeof(int));
  cudaMalloc(&d_sums, n * sizeof(int));
  cudaMalloc(&d_slots, n * sizeof(int));
  cudaMalloc(&d_last, n * sizeof(int));
  cudaMemcpy(d_in, h.data(), n * sizeof(int), cudaMemcpyHostToDevice);
  tile_scans_kernel<<<blocks, threads>>>(d_in, d_sums, d_slots, d_last, n);
  std::vector<int> sums(n), slots(n), last(n);
  cudaMemcpy(sums.data(), d_sums, n * sizeof(int), cudaMemcpyDeviceToHost);
  cudaMemcpy(slots.data(), d_slots, n * sizeof(int), cudaMemcpyDeviceToHost);
  cudaMemcpy(last.data(), d_last, n * sizeof(int), cudaMemcpyDeviceToHost);
  int bad = cudaGetLastError() == cudaSuccess ? 0 : 1;
  int sum = 0, slot = 0, seen = 0;
  for (int i = 0; i < n; ++i) {
    if (i % 32 == 0) sum = seen = 0;  // tiles start at multiples of their size
    if (i % 8 == 0) slot = 0;
    sum += h[i];
    if (h[i] % 5 != 0) seen = h[i];
    if ((sums[i] != sum || slots[i] != slot || last[i] != seen) && ++bad <= 5) {
      std::printf("element %d: sum %d (want %d), slot %d (want %d), last %d (want %d)\n", i, sums[i], sum, slots[i],
                  slot, last[i], seen);
    }
    slot += h[i] % 3 == 0 ? 1 : 0;
  }
  std::printf("tile scans: %s\n", bad == 0 ? "match the host reference" : "MISMATCH");
  cudaFree(d_in);
  cudaFree(d_sums);
  cudaFree(d_slots);
  cudaFree(d_last);
  return bad == 0 ? 0 : 1;
}
