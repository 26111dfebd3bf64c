// Global-to-shared copies that overlap with compute, in the styles public code uses for them (Ampere's
// cp.async and the libraries on top of it), each checked against a host loop; exit 0 when all match:
//   1. a tiled matrix product double-buffered with __pipeline_memcpy_async / __pipeline_commit /
//      __pipeline_wait_prior (the CUDA samples' globalToShmemAsyncCopy),
//   2. the same product through a block-scope cuda::pipeline (make_pipeline(block, &shared_state),
//      producer_acquire / producer_commit / consumer_wait / consumer_release), two stages, an odd tile count,
//   3. a block-scope cuda::barrier: cuda::memcpy_async(block, ..., barrier) + arrive_and_wait, then the same
//      barrier's next phase with arrive() and wait(token),
//   4. cooperative_groups::memcpy_async + wait_prior<1> / wait, double-buffered chunks of a row sum,
//   5. a thread-scope cuda::pipeline with cuda::aligned_size_t and pipeline_consumer_wait_prior<1>,
//   6. cuda::std basics in a kernel (array, span, numeric_limits, min/max, plus, type traits),
//   7. warp specialization: a producer warp and consumer warps through a pipeline with cuda::pipeline_role,
//   8. a barrier with a completion function that threads leave with arrive_and_drop, and a thread-scope
//      pipeline's copies handed to a barrier with cuda::pipeline_producer_commit.
// With --read-before-wait / --write-before-wait, kernel 4 touches a chunk before its wait, and with
// --barrier-count-too-high a barrier waits forever: bugs the backend reports (docs/cpu-mode.md).
#include <cooperative_groups.h>
#include <cooperative_groups/memcpy_async.h>
#include <cuda/barrier>
#include <cuda/pipeline>
#include <cuda/std/array>
#include <cuda/std/functional>
#include <cuda/std/limits>
#include <cuda/std/span>
#include <cuda/std/type_traits>
#include <cuda_pipeline.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

namespace cg = cooperative_groups;

constexpr int TILE = 16;

// ---- 1. cp.async primitives, two stages: the next tile's loads are in flight while this one is used ----
__global__ void matmul_primitives_kernel(const float* A, const float* B, float* C, int M, int N, int K) {
  __shared__ alignas(16) float As[2][TILE][TILE];
  __shared__ alignas(16) float Bs[2][TILE][TILE];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
  const int tiles = K / TILE;
  __pipeline_memcpy_async(&As[0][ty][tx], &A[row * K + tx], sizeof(float));
  __pipeline_memcpy_async(&Bs[0][ty][tx], &B[ty * N + col], sizeof(float));
  __pipeline_commit();
  float acc = 0.0f;
  for (int t = 0; t < tiles; ++t) {
    const int cur = t % 2, next = (t + 1) % 2;
    if (t + 1 < tiles) {
      __pipeline_memcpy_async(&As[next][ty][tx], &A[row * K + (t + 1) * TILE + tx], sizeof(float));
      __pipeline_memcpy_async(&Bs[next][ty][tx], &B[((t + 1) * TILE + ty) * N + col], sizeof(float));
    }
    __pipeline_commit();       // an empty batch on the last trip keeps the count of batches regular
    __pipeline_wait_prior(1);  // this thread's copies of tile t have landed...
    __syncthreads();           // ...and so have everyone else's
    for (int k = 0; k < TILE; ++k) acc += As[cur][ty][k] * Bs[cur][k][tx];
    __syncthreads();  // the stage is refilled on the next trip
  }
  C[row * N + col] = acc;
}

// ---- 2. a block-scope cuda::pipeline: the stages' barriers order the copies and their reuse ----
__global__ void matmul_cuda_pipeline_kernel(const float* A, const float* B, float* C, int M, int N, int K) {
  constexpr int STAGES = 2;
  __shared__ alignas(16) float As[STAGES][TILE][TILE];
  __shared__ alignas(16) float Bs[STAGES][TILE][TILE];
  __shared__ cuda::pipeline_shared_state<cuda::thread_scope_block, STAGES> state;
  const auto block = cg::this_thread_block();
  auto pipe = cuda::make_pipeline(block, &state);
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
  const int tiles = K / TILE;
  float acc = 0.0f;
  int fetch = 0;
  for (int t = 0; t < tiles; ++t) {
    for (; fetch < tiles && fetch < t + STAGES; ++fetch) {
      const int s = fetch % STAGES;
      pipe.producer_acquire();
      cuda::memcpy_async(&As[s][ty][tx], &A[row * K + fetch * TILE + tx], sizeof(float), pipe);
      cuda::memcpy_async(&Bs[s][ty][tx], &B[(fetch * TILE + ty) * N + col], sizeof(float), pipe);
      pipe.producer_commit();
    }
    pipe.consumer_wait();  // every thread's copies of this stage have landed
    const int s = t % STAGES;
    for (int k = 0; k < TILE; ++k) acc += As[s][ty][k] * Bs[s][k][tx];
    pipe.consumer_release();
  }
  C[row * N + col] = acc;
}

// ---- 3. a block-scope cuda::barrier: a tile reversed, then scaled in a second phase ----
__global__ void barrier_reverse_kernel(const float* in, float* out, int n) {
  __shared__ alignas(16) float tile[256];
  __shared__ cuda::barrier<cuda::thread_scope_block> bar;
  const auto block = cg::this_thread_block();
  const int t = threadIdx.x, base = blockIdx.x * blockDim.x;
  if (block.thread_rank() == 0) init(&bar, block.size());
  block.sync();
  cuda::memcpy_async(block, tile, in + base, sizeof(float) * blockDim.x, bar);
  bar.arrive_and_wait();
  const float mirrored = tile[blockDim.x - 1 - t];
  block.sync();  // everyone has read the tile before the second copy refills it
  cuda::memcpy_async(block, tile, in + base, cuda::aligned_size_t<16>(sizeof(float) * blockDim.x), bar);
  auto token = bar.arrive();
  const float own = 2.0f * mirrored;  // work that overlaps the copy
  bar.wait(std::move(token));
  if (base + t < n) out[base + t] = own + tile[t];
}

// ---- 4. cooperative_groups::memcpy_async: a row summed in chunks, the next chunk in flight ----
constexpr int CHUNK = 128;
__global__ void row_sum_cg_kernel(const float* in, float* sums, int cols, int mode) {
  __shared__ alignas(16) float chunk[2][CHUNK];
  const auto block = cg::this_thread_block();
  const float* row = in + static_cast<size_t>(blockIdx.x) * cols;
  const int chunks = cols / CHUNK;
  cg::memcpy_async(block, chunk[0], row, sizeof(float) * CHUNK);
  float acc = 0.0f;
  for (int c = 0; c < chunks; ++c) {
    if (c + 1 < chunks) {
      cg::memcpy_async(block, chunk[(c + 1) % 2], row + (c + 1) * CHUNK, sizeof(float) * CHUNK);
      if (mode == 1) acc += chunk[(c + 1) % 2][threadIdx.x];  // known-bad: reads the chunk still in flight
      if (mode == 2) chunk[(c + 1) % 2][threadIdx.x] = 0.0f;  // known-bad: writes it
      cg::wait_prior<1>(block);
    } else {
      cg::wait(block);
    }
    acc += chunk[c % 2][threadIdx.x];
    block.sync();  // the chunk is refilled on the next trip
  }
  // A block reduction of the per-thread sums, in the same shared chunk.
  chunk[0][threadIdx.x] = acc;
  block.sync();
  for (int s = CHUNK / 2; s > 0; s /= 2) {
    if (static_cast<int>(threadIdx.x) < s) chunk[0][threadIdx.x] += chunk[0][threadIdx.x + s];
    block.sync();
  }
  if (threadIdx.x == 0) sums[blockIdx.x] = chunk[0][0];
}

// ---- 5. a thread-scope cuda::pipeline: each thread streams its own float4s ----
__global__ void stream_thread_pipeline_kernel(const float4* in, float* out, int per_thread) {
  __shared__ alignas(16) float4 buf[2][64];
  auto pipe = cuda::make_pipeline();
  const int t = threadIdx.x;
  const float4* mine = in + (static_cast<size_t>(blockIdx.x) * blockDim.x + t) * per_thread;
  float acc = 0.0f;
  pipe.producer_acquire();
  cuda::memcpy_async(&buf[0][t], mine, cuda::aligned_size_t<16>(sizeof(float4)), pipe);
  pipe.producer_commit();
  for (int i = 0; i < per_thread; ++i) {
    if (i + 1 < per_thread) {
      pipe.producer_acquire();
      cuda::memcpy_async(&buf[(i + 1) % 2][t], mine + i + 1, cuda::aligned_size_t<16>(sizeof(float4)), pipe);
      pipe.producer_commit();
      cuda::pipeline_consumer_wait_prior<1>(pipe);  // element i has landed, i + 1 may still fly
    } else {
      pipe.consumer_wait();
    }
    const float4 v = buf[i % 2][t];  // only this thread's own copy: no block barrier needed
    acc += v.x + v.y + v.z + v.w;
    pipe.consumer_release();
  }
  out[blockIdx.x * blockDim.x + t] = acc;
}

// ---- 6. cuda::std in a kernel ----
template <typename T>
__device__ T clamp_to_int8(T x) {
  static_assert(cuda::std::is_arithmetic_v<T>, "numbers only");
  return cuda::std::min(cuda::std::max(x, T(cuda::std::numeric_limits<signed char>::min())),
                        T(cuda::std::numeric_limits<signed char>::max()));
}

__global__ void cuda_std_kernel(const int* in, int* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  cuda::std::array<int, 3> window{in[i], i + 1 < n ? in[i + 1] : 0, i + 2 < n ? in[i + 2] : 0};
  const cuda::std::span<const int> view(window.data(), window.size());
  int sum = 0;
  for (int v : view) sum = cuda::std::plus<int>{}(sum, v);
  out[i] = clamp_to_int8(sum);
}

// ---- 7. one producer warp feeds two consumer warps through a two-stage pipeline ----
constexpr int WIDTH = 64;
__global__ void producer_consumer_kernel(const float* in, float* out, int chunks) {
  constexpr int STAGES = 2;
  __shared__ alignas(16) float staged[STAGES][WIDTH];
  __shared__ cuda::pipeline_shared_state<cuda::thread_scope_block, STAGES> state;
  const auto block = cg::this_thread_block();
  const bool producer = block.thread_rank() < 32;
  auto pipe = cuda::make_pipeline(block, &state, producer ? cuda::pipeline_role::producer : cuda::pipeline_role::consumer);
  const float* src = in + static_cast<size_t>(blockIdx.x) * chunks * WIDTH;
  const int lane = block.thread_rank() % 32, slot = block.thread_rank() - 32;
  float acc = 0.0f;
  for (int c = 0; c < chunks; ++c) {
    const int s = c % STAGES;
    if (producer) {
      pipe.producer_acquire();  // the consumers have released this stage
      cuda::memcpy_async(&staged[s][2 * lane], &src[c * WIDTH + 2 * lane], cuda::aligned_size_t<8>(2 * sizeof(float)), pipe);
      pipe.producer_commit();
    } else {
      pipe.consumer_wait();
      acc += staged[s][slot] * static_cast<float>(c + 1);
      pipe.consumer_release();
    }
  }
  if (!producer) out[blockIdx.x * WIDTH + slot] = acc;
}

// ---- 8. barrier phases counted by a completion function; half the threads leave after one phase ----
struct CountPhases {
  int* phases;
  __device__ void operator()() noexcept { ++*phases; }
};

__global__ void barrier_drop_kernel(const float* in, float* out, int* phases_out) {
  __shared__ int phases;
  __shared__ alignas(16) float tile[128];
  __shared__ cuda::barrier<cuda::thread_scope_block, CountPhases> bar;
  __shared__ cuda::barrier<cuda::thread_scope_block> copied;
  auto pipe = cuda::make_pipeline();
  const int t = threadIdx.x;
  if (t == 0) {
    phases = 0;
    init(&bar, blockDim.x, CountPhases{&phases});
    init(&copied, blockDim.x);
  }
  __syncthreads();
  cuda::memcpy_async(&tile[t], &in[blockIdx.x * blockDim.x + t], sizeof(float), pipe);
  cuda::pipeline_producer_commit(pipe, copied);  // the copy completes with the barrier's phase
  copied.arrive_and_wait();
  if (t % 2 == 1) {
    bar.arrive_and_drop();  // leaves: the next phase waits for the even threads only
    return;
  }
  bar.arrive_and_wait();
  out[blockIdx.x * blockDim.x + t] = tile[blockDim.x - 1 - t];
  bar.arrive_and_wait();
  if (t == 0) phases_out[blockIdx.x] = phases;
}

// Known-bad: the barrier expects one arrival more than the block has threads, so no phase ever completes
// (a GPU hangs; the backend names the wait).
__global__ void barrier_count_too_high_kernel(float* out) {
  __shared__ cuda::barrier<cuda::thread_scope_block> bar;
  if (threadIdx.x == 0) init(&bar, blockDim.x + 1);
  __syncthreads();
  bar.arrive_and_wait();
  out[threadIdx.x] = 1.0f;
}

// ---- host side ----

static int count_mismatches(const char* what, const std::vector<float>& got, const std::vector<float>& want) {
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::fabs(got[i] - want[i]) <= 1e-3f + 1e-4f * std::fabs(want[i])) continue;
    if (bad++ < 3) std::printf("%s: [%zu] = %g, want %g\n", what, i, got[i], want[i]);
  }
  return bad;
}

static std::vector<float> pattern(size_t n, int salt) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>((i * 7 + salt * 13) % 17) * 0.25f - 2.0f;
  return v;
}

template <typename T>
static T* to_device(const std::vector<T>& h) {
  T* d = nullptr;
  cudaMalloc(&d, h.size() * sizeof(T));
  cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice);
  return d;
}

template <typename T>
static std::vector<T> to_host(const T* d, size_t n) {
  std::vector<T> h(n);
  cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost);
  return h;
}

static int check_matmuls() {
  const int M = 16, N = 32, K = 48;  // three tiles along K: the two-stage pipeline wraps around
  const std::vector<float> a = pattern(size_t(M) * K, 1), b = pattern(size_t(K) * N, 2);
  std::vector<float> want(size_t(M) * N, 0.0f);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j)
      for (int k = 0; k < K; ++k) want[i * N + j] += a[i * K + k] * b[k * N + j];
  float *dA = to_device(a), *dB = to_device(b), *dC = nullptr;
  cudaMalloc(&dC, want.size() * sizeof(float));
  const dim3 grid(N / TILE, M / TILE), block(TILE, TILE);
  matmul_primitives_kernel<<<grid, block>>>(dA, dB, dC, M, N, K);
  int bad = count_mismatches("pipeline primitives", to_host(dC, want.size()), want);
  matmul_cuda_pipeline_kernel<<<grid, block>>>(dA, dB, dC, M, N, K);
  bad += count_mismatches("cuda::pipeline", to_host(dC, want.size()), want);
  cudaFree(dA);
  cudaFree(dB);
  cudaFree(dC);
  return bad;
}

static int check_barrier_and_groups(int mode) {
  const int threads = 128, blocks = 3, n = threads * blocks;
  const std::vector<float> in = pattern(n, 3);
  std::vector<float> want(n);
  for (int i = 0; i < n; ++i) want[i] = 2.0f * in[(i / threads) * threads + threads - 1 - i % threads] + in[i];
  float *d_in = to_device(in), *d_out = nullptr;
  cudaMalloc(&d_out, n * sizeof(float));
  barrier_reverse_kernel<<<blocks, threads>>>(d_in, d_out, n);
  int bad = count_mismatches("cuda::barrier", to_host(d_out, n), want);

  const int rows = 3, cols = 3 * CHUNK;
  const std::vector<float> m = pattern(size_t(rows) * cols, 4);
  std::vector<float> sums(rows, 0.0f);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) sums[r] += m[size_t(r) * cols + c];
  float *d_m = to_device(m), *d_sums = nullptr;
  cudaMalloc(&d_sums, rows * sizeof(float));
  row_sum_cg_kernel<<<rows, CHUNK>>>(d_m, d_sums, cols, mode);
  if (cudaGetLastError() != cudaSuccess) ++bad;
  bad += count_mismatches("cooperative_groups::memcpy_async", to_host(d_sums, rows), sums);
  cudaFree(d_in);
  cudaFree(d_out);
  cudaFree(d_m);
  cudaFree(d_sums);
  return bad;
}

static int check_thread_pipeline_and_std() {
  const int threads = 64, blocks = 2, per_thread = 3;
  const std::vector<float> flat = pattern(size_t(blocks) * threads * per_thread * 4, 5);
  std::vector<float4> in(flat.size() / 4);
  std::memcpy(in.data(), flat.data(), flat.size() * sizeof(float));
  std::vector<float> want(size_t(blocks) * threads, 0.0f);
  for (size_t i = 0; i < want.size(); ++i)
    for (int e = 0; e < per_thread * 4; ++e) want[i] += flat[i * per_thread * 4 + e];
  float4* d_in = to_device(in);
  float* d_out = nullptr;
  cudaMalloc(&d_out, want.size() * sizeof(float));
  stream_thread_pipeline_kernel<<<blocks, threads>>>(d_in, d_out, per_thread);
  int bad = count_mismatches("thread-scope cuda::pipeline", to_host(d_out, want.size()), want);

  const int n = 100;
  std::vector<int> xs(n);
  for (int i = 0; i < n; ++i) xs[i] = (i * 29) % 97 - 40;
  std::vector<int> expect(n);
  for (int i = 0; i < n; ++i) {
    const int s = xs[i] + (i + 1 < n ? xs[i + 1] : 0) + (i + 2 < n ? xs[i + 2] : 0);
    expect[i] = s < -128 ? -128 : s > 127 ? 127 : s;
  }
  int *d_xs = to_device(xs), *d_ys = nullptr;
  cudaMalloc(&d_ys, n * sizeof(int));
  cuda_std_kernel<<<(n + 63) / 64, 64>>>(d_xs, d_ys, n);
  const std::vector<int> ys = to_host(d_ys, n);
  for (int i = 0; i < n; ++i) {
    if (ys[i] != expect[i] && bad++ < 3) std::printf("cuda::std: [%d] = %d, want %d\n", i, ys[i], expect[i]);
  }
  cudaFree(d_in);
  cudaFree(d_out);
  cudaFree(d_xs);
  cudaFree(d_ys);
  return bad;
}

static int check_roles_and_drops() {
  const int blocks = 2, chunks = 5;
  const std::vector<float> in = pattern(size_t(blocks) * chunks * WIDTH, 6);
  std::vector<float> want(size_t(blocks) * WIDTH, 0.0f);
  for (int b = 0; b < blocks; ++b)
    for (int c = 0; c < chunks; ++c)
      for (int i = 0; i < WIDTH; ++i) want[b * WIDTH + i] += in[(size_t(b) * chunks + c) * WIDTH + i] * float(c + 1);
  float *d_in = to_device(in), *d_out = nullptr;
  cudaMalloc(&d_out, want.size() * sizeof(float));
  producer_consumer_kernel<<<blocks, 32 + WIDTH>>>(d_in, d_out, chunks);
  int bad = count_mismatches("pipeline roles", to_host(d_out, want.size()), want);

  const int threads = 128;
  std::vector<float> mirrored(size_t(blocks) * threads, 0.0f);
  for (int b = 0; b < blocks; ++b)
    for (int t = 0; t < threads; t += 2) mirrored[b * threads + t] = in[b * threads + threads - 1 - t];
  int* d_phases = nullptr;
  float* d_mirrored = nullptr;
  cudaMalloc(&d_phases, blocks * sizeof(int));
  cudaMalloc(&d_mirrored, mirrored.size() * sizeof(float));
  cudaMemset(d_mirrored, 0, mirrored.size() * sizeof(float));  // the odd threads leave without writing
  barrier_drop_kernel<<<blocks, threads>>>(d_in, d_mirrored, d_phases);
  bad += count_mismatches("pipeline_producer_commit", to_host(d_mirrored, mirrored.size()), mirrored);
  for (int phases : to_host(d_phases, blocks)) {
    if (phases != 2 && bad++ < 3) std::printf("barrier completion: %d phases, want 2\n", phases);
  }
  cudaFree(d_in);
  cudaFree(d_out);
  cudaFree(d_phases);
  cudaFree(d_mirrored);
  return bad;
}

int main(int argc, char** argv) {
  int mode = 0;
  if (argc > 1 && std::strcmp(argv[1], "--read-before-wait") == 0) mode = 1;
  if (argc > 1 && std::strcmp(argv[1], "--write-before-wait") == 0) mode = 2;
  if (argc > 1 && std::strcmp(argv[1], "--barrier-count-too-high") == 0) {
    float* d_out = nullptr;
    cudaMalloc(&d_out, 32 * sizeof(float));
    barrier_count_too_high_kernel<<<1, 32>>>(d_out);
    return cudaGetLastError() == cudaSuccess ? 0 : 1;
  }
  int bad = 0;
  if (mode == 0) bad += check_matmuls() + check_thread_pipeline_and_std() + check_roles_and_drops();
  bad += check_barrier_and_groups(mode);
  if (cudaGetLastError() != cudaSuccess) ++bad;
  std::printf("%s\n", bad == 0 ? "asynchronous copies: all match" : "asynchronous copies: MISMATCH");
  return bad == 0 ? 0 : 1;
}
