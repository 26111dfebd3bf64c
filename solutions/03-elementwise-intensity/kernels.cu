// Lab 03: elementwise intensity - kernels that live on the memory roof, and one that walks off it.
//
//   bias_add_kernel, gelu_kernel, residual_add_kernel   the chain y = r + gelu(x + bias) as three kernels
//   fused_chain_kernel                                  the same chain in one pass over memory
//   sweep_kernel                                        k dependent FMAs per element: intensity k / 4
//
// Elementwise kernels do a handful of FLOPs per element, so they are memory-bound on every GPU: their
// time is the bytes they move. Fusion cannot raise their intensity much, but it removes the round trips of
// the intermediates through DRAM, and that is where the time goes. Handout: README.md, sections
// "Counting elementwise work", "Fusion" and "Walking the roofline".
#include "kernels.hpp"

#include <rooflab/grid.hpp>
#include <rooflab/launch.hpp>
#include <rooflab/stub.hpp>

#include <cmath>

namespace lab03 {

// ---- PROVIDED: do not modify ----

using rooflab::global_thread;  // this thread's index in the grid (rooflab/grid.hpp)
using rooflab::grid_threads;   // threads in the grid
using rooflab::sm_count;       // SMs of the current device

// A grid-stride loop's grid (Lab 01): one thread per element, at most `per_sm` blocks per SM (8: as many
// threads as an SM holds when each keeps to 32 registers).
unsigned blocks_for(std::size_t n, unsigned per_sm = 8) { return rooflab::grid_for(n, kBlock, per_sm * sm_count()); }

// The blocks of the fused kernel an SM holds at once, which its __launch_bounds__ promise ptxas: six of 256
// threads leave each thread 40 registers (65536 / 1536, rounded down to a multiple of 8), eight would leave it
// 32. README.md, "Fusion", says what ptxas does with them.
inline constexpr unsigned kFusedBlocksPerSm = 6;


// Loads and stores in the storage type, arithmetic in FP32 (FP16 halves the bytes, not the precision of
// the math).
template <typename T>
__device__ inline float load(const T* p, std::size_t i) {
  return static_cast<float>(p[i]);
}
template <typename T>
__device__ inline void store(T* p, std::size_t i, float v) {
  p[i] = static_cast<T>(v);
}

// ---- the unfused chain ----

template <typename T>
__global__ void bias_add_kernel(const T* __restrict__ x, const T* __restrict__ bias, T* __restrict__ t,
                                std::size_t rows, std::size_t cols) {
  // STUDENT BEGIN (lab03.bias_add)
  // Four elements per trip of the grid-stride loop, all loaded before the first store: four loads in flight
  // per thread instead of one (Lab 01, "Choosing the grid": with one, an H100 stayed near 78% of its copy
  // ceiling). The bias comes from L1/L2: every row re-reads the same cols elements.
  //
  // The bias index is a running column, not i % cols. GPUs have no integer divide: ptxas makes each 64-bit
  // remainder a branch between a call to a 64-bit routine and, when both operands fit in 32 bits, about 20
  // instructions (a reciprocal on the special-function unit, two conversions), and the branches keep the
  // four loads of a trip from going out together. With four of them per trip this kernel reached 80% of an
  // H200's copy ceiling where the residual add, the same loop without them, reached 93%
  // (docs/measurements.md). One remainder per thread at the start; after that each grid stride moves the
  // column by grid % cols, wrapping at most once.
  const std::size_t n = rows * cols, grid = grid_threads();
  if (n == 0) return;  // also keeps the remainders below from dividing by zero columns
  const std::size_t step = grid % cols;
  const auto advance = [&](std::size_t col) { return col + step >= cols ? col + step - cols : col + step; };
  std::size_t i = global_thread(), col = i % cols;
  for (; i + 3 * grid < n; i += 4 * grid) {
    float vx[4], vb[4];
#pragma unroll
    for (int u = 0; u < 4; ++u, col = advance(col)) {  // the loads first, then the adds and the stores
      vx[u] = load(x, i + u * grid);
      vb[u] = load(bias, col);
    }
#pragma unroll
    for (int u = 0; u < 4; ++u) store(t, i + u * grid, vx[u] + vb[u]);
  }
  for (; i < n; i += grid, col = advance(col)) store(t, i, load(x, i) + load(bias, col));  // the last, partial round
  // STUDENT END
}

template <typename T>
__global__ void gelu_kernel(const T* __restrict__ t, T* __restrict__ u, std::size_t n) {
  // STUDENT BEGIN (lab03.gelu)
  // 9 FLOPs per element by the handout's count (tanh as one): still far left of every ridge point.
  // One input, so eight loads in flight per thread (32 bytes in FP32), as Lab 01's copy: with four, an H200
  // reached 91% of its copy ceiling (docs/measurements.md).
  const auto gelu = [](float v) { return 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v))); };
  const std::size_t grid = grid_threads();
  std::size_t i = global_thread();
  for (; i + 7 * grid < n; i += 8 * grid) {
    float v[8];
#pragma unroll
    for (int k = 0; k < 8; ++k) v[k] = load(t, i + k * grid);
#pragma unroll
    for (int k = 0; k < 8; ++k) store(u, i + k * grid, gelu(v[k]));
  }
  for (; i < n; i += grid) store(u, i, gelu(load(t, i)));
  // STUDENT END
}

template <typename T>
__global__ void residual_add_kernel(const T* __restrict__ u, const T* __restrict__ residual, T* __restrict__ y,
                                    std::size_t n) {
  // STUDENT BEGIN (lab03.residual_add)
  // Two loads per element already; four elements per trip keep eight in flight.
  const std::size_t grid = grid_threads();
  std::size_t i = global_thread();
  for (; i + 3 * grid < n; i += 4 * grid) {
    float v[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) v[k] = load(u, i + k * grid) + load(residual, i + k * grid);
#pragma unroll
    for (int k = 0; k < 4; ++k) store(y, i + k * grid, v[k]);
  }
  for (; i < n; i += grid) store(y, i, load(u, i) + load(residual, i));
  // STUDENT END
}

// ---- the fused chain ----

template <typename T>
__global__ void __launch_bounds__(kBlock, kFusedBlocksPerSm)
    fused_chain_kernel(const T* __restrict__ x, const T* __restrict__ bias, const T* __restrict__ residual,
                       T* __restrict__ y, std::size_t rows, std::size_t cols) {
  // STUDENT BEGIN (lab03.fused)
  // One read of x and residual, one write of y: the intermediates stay in registers. The bias (cols
  // elements) is re-read by every row, but from the L2, not DRAM.
  // Four elements per trip, every load issued before the math and the stores, and the bias column kept
  // running rather than recomputed with a 64-bit remainder (both as in bias_add).
  // The twelve loads of a trip and their 64-bit addresses do not fit in 32 registers beside the GELU's
  // math. Held to 32 (eight blocks per SM: what ptxas keeps to when the kernel says nothing), ptxas issued
  // three loads, did element 0's math, then the next loads: 8 bytes from DRAM in flight per thread, about 87%
  // of an H200's copy ceiling by the performance model. With 40 (the six blocks of kFusedBlocksPerSm) it
  // issues all twelve first: 32 bytes per thread, 48 KB per SM.
  const auto gelu = [](float v) { return 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v))); };
  const std::size_t n = rows * cols, grid = grid_threads();
  if (n == 0) return;  // also keeps the remainders below from dividing by zero columns
  const std::size_t step = grid % cols;
  const auto advance = [&](std::size_t col) { return col + step >= cols ? col + step - cols : col + step; };
  std::size_t i = global_thread(), col = i % cols;
  for (; i + 3 * grid < n; i += 4 * grid) {
    float vx[4], vb[4], r[4];
#pragma unroll
    for (int k = 0; k < 4; ++k, col = advance(col)) {
      vx[k] = load(x, i + k * grid);
      vb[k] = load(bias, col);
      r[k] = load(residual, i + k * grid);
    }
#pragma unroll
    for (int k = 0; k < 4; ++k) store(y, i + k * grid, gelu(vx[k] + vb[k]) + r[k]);
  }
  for (; i < n; i += grid, col = advance(col)) store(y, i, gelu(load(x, i) + load(bias, col)) + load(residual, i));
  // STUDENT END
}

// ---- the intensity sweep ----

__global__ void sweep_kernel(const float* __restrict__ in, float* __restrict__ out, std::size_t n, float a, float b,
                             int k) {
  // STUDENT BEGIN (lab03.sweep)
  // 8 bytes and 2k FLOPs per element: k sets the intensity (k / 4 FLOP/byte) without changing the traffic.
  // Two things keep each side of the roofline reachable:
  //  - memory side: four elements per trip, loaded before any is used (four loads in flight per thread);
  //  - compute side: the four elements are four independent FMA chains, and the k loop is unrolled 8 times,
  //    so the loop's own counter, compare and branch are 3 instructions per 32 FMAs instead of one per FMA
  //    or two (on an H100, the loop kept to one chain and the compiler's default unroll reached 55% of the
  //    FMA ceiling).
  const std::size_t grid = grid_threads();
  std::size_t i = global_thread();
  for (; i + 3 * grid < n; i += 4 * grid) {
    float y[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) y[u] = in[i + u * grid];
#pragma unroll 8
    for (int j = 0; j < k; ++j) {
#pragma unroll
      for (int u = 0; u < 4; ++u) y[u] = fmaf(y[u], a, b);
    }
#pragma unroll
    for (int u = 0; u < 4; ++u) out[i + u * grid] = y[u];
  }
  for (; i < n; i += grid) {
    float y = in[i];
    for (int j = 0; j < k; ++j) y = fmaf(y, a, b);
    out[i] = y;
  }
  // STUDENT END
}

// ---- launchers ----

template <typename T>
void bias_add(const T* x, const T* bias, T* t, std::size_t rows, std::size_t cols, cudaStream_t stream) {
  // STUDENT BEGIN (lab03.bias_add.launch)
  bias_add_kernel<T><<<blocks_for(rows * cols), kBlock, 0, stream>>>(x, bias, t, rows, cols);
  ROOFLAB_LAUNCH_CHECK();
  // STUDENT END
}

template <typename T>
void gelu(const T* t, T* u, std::size_t n, cudaStream_t stream) {
  // STUDENT BEGIN (lab03.gelu.launch)
  gelu_kernel<T><<<blocks_for(n), kBlock, 0, stream>>>(t, u, n);
  ROOFLAB_LAUNCH_CHECK();
  // STUDENT END
}

template <typename T>
void residual_add(const T* u, const T* residual, T* y, std::size_t n, cudaStream_t stream) {
  // STUDENT BEGIN (lab03.residual_add.launch)
  residual_add_kernel<T><<<blocks_for(n), kBlock, 0, stream>>>(u, residual, y, n);
  ROOFLAB_LAUNCH_CHECK();
  // STUDENT END
}

template <typename T>
void unfused_chain(const T* x, const T* bias, const T* residual, T* t, T* u, T* y, std::size_t rows, std::size_t cols,
                   cudaStream_t stream) {
  // STUDENT BEGIN (lab03.unfused.launch)
  bias_add(x, bias, t, rows, cols, stream);
  gelu(t, u, rows * cols, stream);
  residual_add(u, residual, y, rows * cols, stream);
  // STUDENT END
}

template <typename T>
void fused_chain(const T* x, const T* bias, const T* residual, T* y, std::size_t rows, std::size_t cols,
                 cudaStream_t stream) {
  // STUDENT BEGIN (lab03.fused.launch)
  // A grid of the blocks the SMs hold at once (the kernel's __launch_bounds__): eight per SM would leave a
  // second, thinner round after the first six.
  const unsigned blocks = blocks_for(rows * cols, kFusedBlocksPerSm);
  fused_chain_kernel<T><<<blocks, kBlock, 0, stream>>>(x, bias, residual, y, rows, cols);
  ROOFLAB_LAUNCH_CHECK();
  // STUDENT END
}

void sweep(const float* in, float* out, std::size_t n, float a, float b, int k, cudaStream_t stream) {
  // STUDENT BEGIN (lab03.sweep.launch)
  sweep_kernel<<<blocks_for(n), kBlock, 0, stream>>>(in, out, n, a, b, k);
  ROOFLAB_LAUNCH_CHECK();
  // STUDENT END
}

// ---- PROVIDED: the two storage types the tests use ----
template void bias_add<float>(const float*, const float*, float*, std::size_t, std::size_t, cudaStream_t);
template void bias_add<__half>(const __half*, const __half*, __half*, std::size_t, std::size_t, cudaStream_t);
template void gelu<float>(const float*, float*, std::size_t, cudaStream_t);
template void gelu<__half>(const __half*, __half*, std::size_t, cudaStream_t);
template void residual_add<float>(const float*, const float*, float*, std::size_t, cudaStream_t);
template void residual_add<__half>(const __half*, const __half*, __half*, std::size_t, cudaStream_t);
template void unfused_chain<float>(const float*, const float*, const float*, float*, float*, float*, std::size_t,
                                   std::size_t, cudaStream_t);
template void unfused_chain<__half>(const __half*, const __half*, const __half*, __half*, __half*, __half*,
                                    std::size_t, std::size_t, cudaStream_t);
template void fused_chain<float>(const float*, const float*, const float*, float*, std::size_t, std::size_t,
                                 cudaStream_t);
template void fused_chain<__half>(const __half*, const __half*, const __half*, __half*, std::size_t, std::size_t,
                                  cudaStream_t);

}  // namespace lab03
