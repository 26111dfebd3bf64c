// Warp collectives after some lanes have returned, as segmented reductions write them: eight lanes per row,
// the lanes of rows past the end return at once, and the rows still running reduce with full-mask
// collectives (0xffffffff). PTX waits for the non-exited lanes of a mask only, so naming a lane that has
// exited is allowed; reading its value is not. The kernels here stay on the allowed side: shuffles that read
// within the row's own eight lanes, a ballot, an any/all vote and a __reduce_add_sync over the lanes still
// running. Checked against host loops; exit 0 when all match.
//
// --reads-exited runs the known-bad side of the line: a whole-warp shuffle-down reduction whose first step
// reads lanes that have returned. The CPU backend must report it (the value is undefined on a GPU).
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <vector>

constexpr int kLanesPerRow = 8;

// One row of `cols` (<= 8) values per eight lanes; sums, the count of positive values (a ballot), whether
// any or all are positive, and the warp's count of running lanes (__reduce_add_sync over the live lanes).
__global__ void row_stats_kernel(const int* in, int* sums, int* positives, int* any_all, int* live, int rows,
                                 int cols) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  const int row = t / kLanesPerRow, col = t % kLanesPerRow;
  if (row >= rows) return;  // whole groups of eight lanes leave the warp here
  const int v = col < cols ? in[row * cols + col] : 0;
  int sum = v;
  for (int offset = kLanesPerRow / 2; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  const unsigned ballot = __ballot_sync(0xffffffffu, v > 0);
  const unsigned group = (ballot >> (threadIdx.x % 32 / kLanesPerRow * kLanesPerRow)) & 0xffu;
  const int any = __any_sync(0xffffffffu, v > 0), all = __all_sync(0xffffffffu, col >= cols || v > 0);
  const unsigned running = __reduce_add_sync(0xffffffffu, 1u);
  if (col == 0) {
    sums[row] = sum;
    positives[row] = __popc(group);
    any_all[row] = any * 2 + all;
    live[row] = static_cast<int>(running);
  }
}

// Known bad: a whole-warp tree reduction after lanes past `n` returned; lane 0's first step reads lane 16.
__global__ void reads_exited_kernel(const float* in, float* out, int n) {
  const int i = threadIdx.x;
  if (i >= n) return;
  float v = in[i];
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  if (i == 0) *out = v;
}

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--reads-exited") == 0) {
    float *d_in = nullptr, *d_out = nullptr;
    cudaMalloc(&d_in, 32 * sizeof(float));
    cudaMalloc(&d_out, sizeof(float));
    cudaMemset(d_in, 0, 32 * sizeof(float));
    reads_exited_kernel<<<1, 32>>>(d_in, d_out, 12);
    const cudaError_t err = cudaDeviceSynchronize();
    std::printf("reads_exited_kernel: %s\n", cudaGetErrorString(err));
    return err == cudaSuccess ? 0 : 1;
  }
  // 13 rows of 6 values: the last warp has one running row (lanes 0-7 of 32) and three that returned.
  const int rows = 13, cols = 6, threads = 64;
  const int blocks = (rows * kLanesPerRow + threads - 1) / threads;
  std::vector<int> h(rows * cols);
  for (int i = 0; i < rows * cols; ++i) h[i] = (i * 29 + 7) % 11 - 3;
  int *d_in = nullptr, *d_sums = nullptr, *d_pos = nullptr, *d_any_all = nullptr, *d_live = nullptr;
  cudaMalloc(&d_in, h.size() * sizeof(int));
  for (int** p : {&d_sums, &d_pos, &d_any_all, &d_live}) cudaMalloc(p, rows * sizeof(int));
  cudaMemcpy(d_in, h.data(), h.size() * sizeof(int), cudaMemcpyHostToDevice);
  row_stats_kernel<<<blocks, threads>>>(d_in, d_sums, d_pos, d_any_all, d_live, rows, cols);
  int bad = cudaGetLastError() == cudaSuccess ? 0 : 1;
  std::vector<int> sums(rows), pos(rows), any_all(rows), live(rows);
  cudaMemcpy(sums.data(), d_sums, rows * sizeof(int), cudaMemcpyDeviceToHost);
  cudaMemcpy(pos.data(), d_pos, rows * sizeof(int), cudaMemcpyDeviceToHost);
  cudaMemcpy(any_all.data(), d_any_all, rows * sizeof(int), cudaMemcpyDeviceToHost);
  cudaMemcpy(live.data(), d_live, rows * sizeof(int), cudaMemcpyDeviceToHost);
  const int rows_per_warp = 32 / kLanesPerRow;
  for (int r = 0; r < rows; ++r) {
    int sum = 0, positive = 0;
    for (int c = 0; c < cols; ++c) {
      sum += h[r * cols + c];
      positive += h[r * cols + c] > 0;
    }
    // The warp's running lanes: eight per row of this warp that is not past the end.
    const int first = r / rows_per_warp * rows_per_warp;
    const int running = kLanesPerRow * (rows - first < rows_per_warp ? rows - first : rows_per_warp);
    // any/all over the whole warp's running lanes: any value of those rows positive, all of them positive.
    int any = 0, all = 1;
    for (int q = first; q < first + rows_per_warp && q < rows; ++q) {
      for (int c = 0; c < cols; ++c) {
        any |= h[q * cols + c] > 0;
        all &= h[q * cols + c] > 0;
      }
    }
    const int want_any_all = any * 2 + all;
    if ((sums[r] != sum || pos[r] != positive || any_all[r] != want_any_all || live[r] != running) && ++bad <= 5) {
      std::printf("row %d: sum %d (want %d), positives %d (want %d), any/all %d (want %d), running lanes %d (want %d)\n",
                  r, sums[r], sum, pos[r], positive, any_all[r], want_any_all, live[r], running);
    }
  }
  std::printf("exited lanes: %s\n", bad == 0 ? "all match" : "MISMATCH");
  return bad == 0 ? 0 : 1;
}
