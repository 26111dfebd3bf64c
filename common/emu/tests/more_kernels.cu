// More kernels for the CPU backend's self-tests (kernels.cu keeps its line numbers: the race-mode tests
// match them). Correct kernels: shuffles of every value type the labs move, warp reductions, WMMA with half
// accumulators and a column-major B, bf16 WMMA, __constant__ memory. Planted bugs: lanes meeting at
// different collectives, a write one element before the start, a write into the alignment padding.
// Also compiled by nvcc (they are ordinary CUDA).
#include "kernels.hpp"

#include <rooflab/launch.hpp>

#include <cuda_bf16.h>
#include <mma.h>

namespace emutest {

// ---- correct kernels ----

// Every lane reads its right neighbour's values (mod 32) through one shuffle per type.
__global__ void shuffle_types_kernel(ShuffleOut* out) {
  const unsigned lane = threadIdx.x % 32;
  const unsigned src = (lane + 1) % 32;
  const float f = 1.5f * static_cast<float>(lane);
  const double d = 0.25 * lane;
  const long long ll = (1ll << 40) + lane;
  const __half h = __float2half(static_cast<float>(lane));
  const __half2 h2 = __floats2half2_rn(static_cast<float>(lane), -static_cast<float>(lane));
  const __nv_bfloat16 b = __float2bfloat16(static_cast<float>(lane));
  ShuffleOut& o = out[threadIdx.x];
  o.f = __shfl_sync(0xffffffffu, f, static_cast<int>(src));
  o.d = __shfl_down_sync(0xffffffffu, d, 1);   // lanes 31 keeps its own
  o.ll = __shfl_up_sync(0xffffffffu, ll, 1);   // lane 0 keeps its own
  o.h = __half2float(__shfl_xor_sync(0xffffffffu, h, 1));
  const __half2 got2 = __shfl_sync(0xffffffffu, h2, static_cast<int>(src));
  o.h2_lo = __low2float(got2);
  o.h2_hi = __high2float(got2);
  o.b = __bfloat162float(__shfl_sync(0xffffffffu, b, static_cast<int>(src)));
  o.sum = __reduce_add_sync(0xffffffffu, lane);
  o.max = __reduce_max_sync(0xffffffffu, static_cast<int>(lane) - 7);
  o.any = __any_sync(0xffffffffu, lane == 5);
  o.all = __all_sync(0xffffffffu, lane < 31);
  // A shuffle within 8-lane segments (width 8).
  o.seg = __shfl_sync(0xffffffffu, static_cast<int>(lane), 0, 8);
}

__constant__ float c_scale[4];

__global__ void constant_scale_kernel(const float* in, float* out, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) out[i] = in[i] * c_scale[i % 4];
}

// C = A x B with half accumulators; B is column-major (B[k][n] at b[n * k_total + k]). One warp per tile.
__global__ void wmma_half_acc_kernel(const __half* a, const __half* b, __half* c, int m, int n, int k) {
  using namespace nvcuda;
  (void)m;
  const int row = static_cast<int>(blockIdx.y) * 16;
  const int col = static_cast<int>(blockIdx.x) * 16;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, __half> fc;
  wmma::fill_fragment(fc, __float2half(0.0f));
  for (int k0 = 0; k0 < k; k0 += 16) {
    wmma::load_matrix_sync(fa, a + row * k + k0, static_cast<unsigned>(k));
    wmma::load_matrix_sync(fb, b + col * k + k0, static_cast<unsigned>(k));
    wmma::mma_sync(fc, fa, fb, fc);
  }
  wmma::store_matrix_sync(c + row * n + col, fc, static_cast<unsigned>(n), wmma::mem_row_major);
}

// bf16 in, float out, C stored column-major; two warps per block, each its own tile.
__global__ void wmma_bf16_kernel(const __nv_bfloat16* a, const __nv_bfloat16* b, float* c, int m, int n, int k) {
  using namespace nvcuda;
  const int warp = static_cast<int>(threadIdx.x / 32);
  const int row = static_cast<int>(blockIdx.y) * 16;
  const int col = (static_cast<int>(blockIdx.x) * 2 + warp) * 16;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
  wmma::fill_fragment(fc, 0.0f);
  for (int k0 = 0; k0 < k; k0 += 16) {
    wmma::load_matrix_sync(fa, a + row * k + k0, static_cast<unsigned>(k));
    wmma::load_matrix_sync(fb, b + k0 * n + col, static_cast<unsigned>(n));
    wmma::mma_sync(fc, fa, fb, fc);
  }
  wmma::store_matrix_sync(c + col * m + row, fc, static_cast<unsigned>(m), wmma::mem_col_major);
}

// ---- planted bugs ----

// Half the warp calls a ballot, the other half a shuffle, both with the full mask.
__global__ void mismatched_collectives_kernel(int* out) {
  const unsigned lane = threadIdx.x % 32;
  int v = 0;
  if (lane < 16) {
    v = static_cast<int>(__ballot_sync(0xffffffffu, 1));
  } else {
    v = __shfl_sync(0xffffffffu, static_cast<int>(lane), 0);
  }
  out[threadIdx.x] = v;
}

// Thread 0 writes one element before the start: out[i - 1] with i = 0.
__global__ void write_before_start_kernel(float* out, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) out[i - 1] = 1.0f;  // (bug: should be out[i])
}

// ---- launchers ----

void shuffle_types(ShuffleOut* out) { rooflab::launch(shuffle_types_kernel, dim3(1), dim3(64), 0, nullptr, out); }

void constant_scale(const float scale[4], const float* in, float* out, int n) {
  ROOFLAB_CUDA_CHECK(cudaMemcpyToSymbol(c_scale, scale, 4 * sizeof(float)));
  rooflab::launch(constant_scale_kernel, dim3(static_cast<unsigned>((n + 63) / 64)), dim3(64), 0, nullptr, in, out, n);
}

void constant_scale_back_async(float scale[4], cudaStream_t stream) {
  ROOFLAB_CUDA_CHECK(cudaMemcpyFromSymbolAsync(scale, c_scale, 4 * sizeof(float), 0, cudaMemcpyDeviceToHost, stream));
}

void wmma_half_acc(const __half* a, const __half* b_col_major, __half* c, int m, int n, int k) {
  rooflab::launch(wmma_half_acc_kernel, dim3(static_cast<unsigned>(n / 16), static_cast<unsigned>(m / 16)), dim3(32), 0,
                  nullptr, a, b_col_major, c, m, n, k);
}

void wmma_bf16(const __nv_bfloat16* a, const __nv_bfloat16* b, float* c_col_major, int m, int n, int k) {
  rooflab::launch(wmma_bf16_kernel, dim3(static_cast<unsigned>(n / 32), static_cast<unsigned>(m / 16)), dim3(64), 0,
                  nullptr, a, b, c_col_major, m, n, k);
}

void mismatched_collectives(int* out) {
  rooflab::launch(mismatched_collectives_kernel, dim3(1), dim3(32), 0, nullptr, out);
}

void write_before_start(float* out, int n) {
  rooflab::launch(write_before_start_kernel, dim3(static_cast<unsigned>((n + 127) / 128)), dim3(128), 0, nullptr, out, n);
}

}  // namespace emutest
