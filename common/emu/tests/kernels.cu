// Kernels for the CPU backend's self-tests: correct ones that must run clean under every schedule, and
// planted bugs the backend must catch. Also compiled by nvcc (they are ordinary CUDA).
#include "kernels.hpp"

#include <rooflab/check.hpp>

#include <mma.h>

namespace emutest {

// ---- correct kernels ----

// Tree reduction in shared memory: a barrier after every step.
__global__ void reduce_kernel(const float* in, float* out, int n) {
  __shared__ float s[256];
  const int t = static_cast<int>(threadIdx.x);
  const int i = static_cast<int>(blockIdx.x * blockDim.x) + t;
  s[t] = i < n ? in[i] : 0.0f;
  __syncthreads();
  for (int half = 128; half > 0; half /= 2) {
    if (t < half) s[t] += s[t + half];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = s[0];
}

// The same with the barrier inside the loop missing: a thread may read a partial sum before it is final.
__global__ void reduce_missing_sync_kernel(const float* in, float* out, int n) {
  __shared__ float s[256];
  const int t = static_cast<int>(threadIdx.x);
  const int i = static_cast<int>(blockIdx.x * blockDim.x) + t;
  s[t] = i < n ? in[i] : 0.0f;
  __syncthreads();
  for (int half = 128; half > 0; half /= 2) {
    if (t < half) s[t] += s[t + half];
    // (bug: no __syncthreads here)
  }
  if (t == 0) out[blockIdx.x] = s[0];
}

// Each thread stores its element, then reads its right neighbour's without a barrier in between.
__global__ void tile_read_before_barrier_kernel(const float* in, float* out) {
  __shared__ float tile[64];
  const unsigned t = threadIdx.x;
  tile[t] = in[t];
  out[t] = tile[(t + 1) % 64];  // (bug: needs __syncthreads before this read)
}

__global__ void shuffle_reduce_kernel(const float* in, float* out) {
  float v = in[blockIdx.x * blockDim.x + threadIdx.x];
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  if (threadIdx.x % 32 == 0) out[(blockIdx.x * blockDim.x + threadIdx.x) / 32] = v;
}

// Lanes 16..31 leave before a full-mask shuffle that reads lane 16: undefined on a GPU. (Naming the exited
// lanes in the mask is allowed; reading one is not: conformance/exited_lanes.cu has both sides.)
__global__ void shuffle_exited_lane_kernel(const float* in, float* out) {
  if (threadIdx.x >= 16) return;
  out[threadIdx.x] = __shfl_sync(0xffffffffu, in[threadIdx.x], 16);
}

__global__ void divergent_barrier_kernel(float* out) {
  if (threadIdx.x < 16) {
    __syncthreads();
  } else {
    __syncthreads();
  }
  out[threadIdx.x] = 1.0f;
}

// One thread too many writes: out[n] is past the end.
__global__ void off_by_one_kernel(float* out, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i <= n) out[i] = 1.0f;  // (bug: should be i < n)
}

// The same bug on an FP16 array: reports must count 2-byte elements. (Declared first without parameter
// names, as a header would: the report still names `values`, from the definition.)
__global__ void half_overrun_kernel(__half*, int);
__global__ void half_overrun_kernel(__half* values, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i <= n) values[i] = __float2half(1.0f);  // (bug: should be i < n)
}

__global__ void copy_kernel(const float* in, float* out, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) out[i] = in[i];
}

// Declared for blocks of at most 64 threads: a constant (a prototype first, the definition's bound over two lines
// with a comment), and a template's warps through a template whose argument list has a comma.
constexpr int kBoundedThreads = 64;
template <int A, int B>
struct ThreadsOf {
  static constexpr int value = A * B;
};
__global__ void __launch_bounds__(kBoundedThreads, 2) bounded_copy_kernel(const float* in, float* out, int n);
__global__ void __launch_bounds__(kBoundedThreads,  // threads
                                  2) bounded_copy_kernel(const float* in, float* out, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) out[i] = in[i];
}
template <int Warps>
__global__ void __launch_bounds__(ThreadsOf<Warps, 32>::value) bounded_warps_copy_kernel(const float* in, float* out,
                                                                                      int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) out[i] = in[i];
}

// 16x16 shared-memory tiles; C = A (m x k) * B (k x n), row-major, any sizes.
__global__ void tiled_sgemm_kernel(const float* a, const float* b, float* c, int m, int n, int k) {
  __shared__ float as[16][16];
  __shared__ float bs[16][16];
  const int row = static_cast<int>(blockIdx.y * 16 + threadIdx.y);
  const int col = static_cast<int>(blockIdx.x * 16 + threadIdx.x);
  float acc = 0.0f;
  for (int k0 = 0; k0 < k; k0 += 16) {
    const int ak = k0 + static_cast<int>(threadIdx.x);
    const int bk = k0 + static_cast<int>(threadIdx.y);
    as[threadIdx.y][threadIdx.x] = row < m && ak < k ? a[row * k + ak] : 0.0f;
    bs[threadIdx.y][threadIdx.x] = bk < k && col < n ? b[bk * n + col] : 0.0f;
    __syncthreads();
    for (int kk = 0; kk < 16; ++kk) acc += as[threadIdx.y][kk] * bs[kk][threadIdx.x];
    __syncthreads();
  }
  if (row < m && col < n) c[row * n + col] = acc;
}

// Atomics from every thread of every block: an int counter, a float sum, a CAS-loop double maximum.
__global__ void atomics_kernel(int* count, float* sum, double* max_value) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  atomicAdd(count, 1);
  atomicAdd(sum, 1.0f);
  const double mine = static_cast<double>(i);
  unsigned long long* addr = reinterpret_cast<unsigned long long*>(max_value);
  // The first read is atomic too: a plain read racing with other threads' CAS is a data race in C++ terms,
  // and race mode reports it (on a GPU the plain read is the common idiom and works).
  unsigned long long old = atomicAdd(addr, 0ull);
  while (__longlong_as_double(static_cast<long long>(old)) < mine) {
    const unsigned long long assumed = old;
    old = atomicCAS(addr, assumed, static_cast<unsigned long long>(__double_as_longlong(mine)));
    if (old == assumed) break;
  }
}

// Reverses each block's slice through dynamic shared memory.
__global__ void dynamic_reverse_kernel(const float* in, float* out) {
  extern __shared__ float s[];
  const unsigned t = threadIdx.x;
  const unsigned base = blockIdx.x * blockDim.x;
  s[t] = in[base + t];
  __syncthreads();
  out[base + t] = s[blockDim.x - 1 - t];
}

// One element past the end of the block's dynamic shared memory.
__global__ void dynamic_overrun_kernel(float* out) {
  extern __shared__ float s[];
  s[threadIdx.x] = 1.0f;
  __syncthreads();
  if (threadIdx.x == 0) s[blockDim.x] = 2.0f;  // (bug: the buffer holds blockDim.x floats)
  out[threadIdx.x] = s[threadIdx.x];
}

// Writes each thread's linear id in a 3D grid of 3D blocks.
__global__ void index3d_kernel(unsigned* out) {
  const unsigned block = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
  const unsigned thread = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
  out[block * blockDim.x * blockDim.y * blockDim.z + thread] = block * 1000 + thread;
}

__global__ void ballot_count_kernel(const int* flags, int* out) {
  const unsigned bits = __ballot_sync(0xffffffffu, flags[threadIdx.x]);
  const int counted = __syncthreads_count(flags[threadIdx.x]);
  if (threadIdx.x == 0) {
    out[0] = __popc(bits);
    out[1] = counted;
  }
}

// One warp per 16x16 tile of C = A x B (half in, float accumulate), m, n, k multiples of 16, row-major.
__global__ void wmma_gemm_kernel(const __half* a, const __half* b, float* c, int m, int n, int k) {
  using namespace nvcuda;
  (void)m;
  const int row = static_cast<int>(blockIdx.y) * 16;
  const int col = static_cast<int>(blockIdx.x) * 16;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
  wmma::fill_fragment(fc, 0.0f);
  for (int k0 = 0; k0 < k; k0 += 16) {
    wmma::load_matrix_sync(fa, a + row * k + k0, static_cast<unsigned>(k));
    wmma::load_matrix_sync(fb, b + k0 * n + col, static_cast<unsigned>(n));
    wmma::mma_sync(fc, fa, fb, fc);
  }
  // An elementwise epilogue on the fragment (scale by 2): correct whatever the lane-to-element mapping.
  for (int i = 0; i < fc.num_elements; ++i) fc.x[i] *= 2.0f;
  wmma::store_matrix_sync(c + row * n + col, fc, static_cast<unsigned>(n), wmma::mem_row_major);
}

// ---- launchers ----

void reduce(const float* in, float* out, int n, bool buggy) {
  const unsigned blocks = static_cast<unsigned>((n + 255) / 256);
  if (buggy) {
    reduce_missing_sync_kernel<<<dim3(blocks), dim3(256)>>>(in, out, n);
    ROOFLAB_LAUNCH_CHECK();
  } else {
    reduce_kernel<<<dim3(blocks), dim3(256)>>>(in, out, n);
    ROOFLAB_LAUNCH_CHECK();
  }
}
void tile_read_before_barrier(const float* in, float* out) {
  tile_read_before_barrier_kernel<<<1, 64>>>(in, out);
  ROOFLAB_LAUNCH_CHECK();
}
void shuffle_reduce(const float* in, float* out, int blocks) {
  shuffle_reduce_kernel<<<dim3(static_cast<unsigned>(blocks)), dim3(128)>>>(in, out);
  ROOFLAB_LAUNCH_CHECK();
}
void shuffle_exited_lane(const float* in, float* out) {
  shuffle_exited_lane_kernel<<<1, 32>>>(in, out);
  ROOFLAB_LAUNCH_CHECK();
}
void divergent_barrier(float* out) {
  divergent_barrier_kernel<<<1, 32>>>(out);
  ROOFLAB_LAUNCH_CHECK();
}
void off_by_one(float* out, int n) {
  off_by_one_kernel<<<dim3(static_cast<unsigned>((n + 1 + 127) / 128)), dim3(128)>>>(out, n);
  ROOFLAB_LAUNCH_CHECK();
}
void half_overrun(__half* values, int n) {
  half_overrun_kernel<<<dim3(static_cast<unsigned>((n + 1 + 127) / 128)), dim3(128)>>>(values, n);
  ROOFLAB_LAUNCH_CHECK();
}
void copy(const float* in, float* out, int n) {
  copy_kernel<<<dim3(static_cast<unsigned>((n + 127) / 128)), dim3(128)>>>(in, out, n);
  ROOFLAB_LAUNCH_CHECK();
}
void copy_with_block(const float* in, float* out, int n, unsigned block) {
  copy_kernel<<<dim3(1), dim3(block)>>>(in, out, n);
  ROOFLAB_LAUNCH_CHECK();
}
void bounded_copy(const float* in, float* out, int n, unsigned block) {
  bounded_copy_kernel<<<(n + block - 1) / block, block>>>(in, out, n);
  ROOFLAB_LAUNCH_CHECK();
}
void bounded_warps_copy(const float* in, float* out, int n, dim3 block) {
  bounded_warps_copy_kernel<2><<<1, block>>>(in, out, n);
  ROOFLAB_LAUNCH_CHECK();
}
template <typename Kernel>
BoundedAttributes attributes_of(Kernel* kernel, int block) {
  BoundedAttributes a{};
  cudaFuncAttributes attr{};
  ROOFLAB_CUDA_CHECK(cudaFuncGetAttributes(&attr, kernel));
  a.max_threads = attr.maxThreadsPerBlock;
  ROOFLAB_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&a.blocks_per_sm, kernel, block, 0));
  int min_grid = 0;
  ROOFLAB_CUDA_CHECK(cudaOccupancyMaxPotentialBlockSize(&min_grid, &a.potential_block, kernel, 0, 0));
  return a;
}
BoundedAttributes bounded_copy_attributes(int block) { return attributes_of(bounded_copy_kernel, block); }
BoundedAttributes bounded_warps_copy_attributes(int block) { return attributes_of(bounded_warps_copy_kernel<2>, block); }
int unbounded_max_threads() { return attributes_of(copy_kernel, 32).max_threads; }
void tiled_sgemm(const float* a, const float* b, float* c, int m, int n, int k) {
  const dim3 grid(static_cast<unsigned>((n + 15) / 16), static_cast<unsigned>((m + 15) / 16));
  tiled_sgemm_kernel<<<grid, dim3(16, 16)>>>(a, b, c, m, n, k);
  ROOFLAB_LAUNCH_CHECK();
}
void atomics(int* count, float* sum, double* max_value, int blocks) {
  atomics_kernel<<<dim3(static_cast<unsigned>(blocks)), dim3(64)>>>(count, sum, max_value);
  ROOFLAB_LAUNCH_CHECK();
}
void dynamic_reverse(const float* in, float* out, int blocks, unsigned block) {
  dynamic_reverse_kernel<<<dim3(static_cast<unsigned>(blocks)), dim3(block), block * sizeof(float)>>>(in, out);
  ROOFLAB_LAUNCH_CHECK();
}
void dynamic_overrun(float* out) {
  dynamic_overrun_kernel<<<dim3(1), dim3(64), 64 * sizeof(float)>>>(out);
  ROOFLAB_LAUNCH_CHECK();
}
void index3d(unsigned* out, dim3 grid, dim3 block) {
  index3d_kernel<<<grid, block>>>(out);
  ROOFLAB_LAUNCH_CHECK();
}
void ballot_count(const int* flags, int* out) {
  ballot_count_kernel<<<1, 32>>>(flags, out);
  ROOFLAB_LAUNCH_CHECK();
}

void wmma_gemm(const __half* a, const __half* b, float* c, int m, int n, int k) {
  wmma_gemm_kernel<<<dim3(static_cast<unsigned>(n / 16), static_cast<unsigned>(m / 16)), dim3(32)>>>(a, b, c, m, n, k);
  ROOFLAB_LAUNCH_CHECK();
}


__global__ void fill_kernel(float* out, float value, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = value;
}
void fill_on(float* out, float value, int n, cudaStream_t stream) {
  fill_kernel<<<(n + 127) / 128, 128, 0, stream>>>(out, value, n);
  ROOFLAB_LAUNCH_CHECK();
}

__global__ void copy_on_kernel(const float* in, float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i];
}
void copy_on(const float* in, float* out, int n, cudaStream_t stream) {
  copy_on_kernel<<<(n + 127) / 128, 128, 0, stream>>>(in, out, n);
  ROOFLAB_LAUNCH_CHECK();
}

// As copy_on_kernel, through a pointer to non-const input that it only reads (as much public code declares it).
__global__ void copy_mutable_kernel(float* in, float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i];
}
void copy_mutable_on(float* in, float* out, int n, cudaStream_t stream) {
  copy_mutable_kernel<<<(n + 127) / 128, 128, 0, stream>>>(in, out, n);
  ROOFLAB_LAUNCH_CHECK();
}
}  // namespace emutest
