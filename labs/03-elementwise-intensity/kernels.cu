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
  // TODO(lab03.bias_add): a grid-stride loop over i < rows * cols (global_thread(), grid_threads()):
  //   t[i] = x[i] + bias[i % cols], read with load() and written with store() (FP32 arithmetic whatever T
  //   is). About 2 lines.
  rooflab::unused(x, bias, t, rows, cols);  // delete this line when the kernel is written
  // STUDENT END
}

template <typename T>
__global__ void gelu_kernel(const T* __restrict__ t, T* __restrict__ u, std::size_t n) {
  // STUDENT BEGIN (lab03.gelu)
  // TODO(lab03.gelu): a grid-stride loop over i < n: u[i] = GELU(t[i]), tanh form (lab.hpp: gelu_ref), in FP32
  //   with tanhf, through load()/store(). About 4 lines.
  rooflab::unused(t, u, n);  // delete this line when the kernel is written
  // STUDENT END
}

template <typename T>
__global__ void residual_add_kernel(const T* __restrict__ u, const T* __restrict__ residual, T* __restrict__ y,
                                    std::size_t n) {
  // STUDENT BEGIN (lab03.residual_add)
  // TODO(lab03.residual_add): a grid-stride loop over i < n: y[i] = u[i] + residual[i], through load()/store().
  //   About 2 lines.
  rooflab::unused(u, residual, y, n);  // delete this line when the kernel is written
  // STUDENT END
}

// ---- the fused chain ----

template <typename T>
__global__ void __launch_bounds__(kBlock, kFusedBlocksPerSm)
    fused_chain_kernel(const T* __restrict__ x, const T* __restrict__ bias, const T* __restrict__ residual,
                       T* __restrict__ y, std::size_t rows, std::size_t cols) {
  // STUDENT BEGIN (lab03.fused)
  // TODO(lab03.fused): one grid-stride loop over i < rows * cols: y[i] = residual[i] + gelu(x[i] +
  //   bias[i % cols]), through load()/store(); the intermediates never leave registers. About 6 lines.
  //   Handout: "Fusion".
  rooflab::unused(x, bias, residual, y, rows, cols);  // delete this line when the kernel is written
  // STUDENT END
}

// ---- the intensity sweep ----

__global__ void sweep_kernel(const float* __restrict__ in, float* __restrict__ out, std::size_t n, float a, float b,
                             int k) {
  // STUDENT BEGIN (lab03.sweep)
  // TODO(lab03.sweep): a grid-stride loop over i < n, and inside it a loop of k steps: out[i] = in[i] put
  //   through k dependent FMAs y = fmaf(y, a, b) (lab.hpp: sweep_ref). About 5 lines. Handout: "Walking the
  //   roofline".
  rooflab::unused(in, out, n, a, b, k);  // delete this line when the kernel is written
  // STUDENT END
}

// ---- launchers ----

template <typename T>
void bias_add(const T* x, const T* bias, T* t, std::size_t rows, std::size_t cols, cudaStream_t stream) {
  // STUDENT BEGIN (lab03.bias_add.launch)
  // TODO(lab03.bias_add.launch): launch bias_add_kernel<T><<<blocks, kBlock, 0, stream>>>(...) on
  //   blocks_for(rows * cols) blocks, then ROOFLAB_LAUNCH_CHECK(). Two lines.
  ROOFLAB_TODO("lab03.bias_add.launch", x, bias, t, rows, cols, stream);
  // STUDENT END
}

template <typename T>
void gelu(const T* t, T* u, std::size_t n, cudaStream_t stream) {
  // STUDENT BEGIN (lab03.gelu.launch)
  // TODO(lab03.gelu.launch): gelu_kernel<T><<<blocks_for(n), kBlock, 0, stream>>>(...), then
  //   ROOFLAB_LAUNCH_CHECK(). Two lines.
  ROOFLAB_TODO("lab03.gelu.launch", t, u, n, stream);
  // STUDENT END
}

template <typename T>
void residual_add(const T* u, const T* residual, T* y, std::size_t n, cudaStream_t stream) {
  // STUDENT BEGIN (lab03.residual_add.launch)
  // TODO(lab03.residual_add.launch): residual_add_kernel<T><<<blocks_for(n), kBlock, 0, stream>>>(...), then
  //   ROOFLAB_LAUNCH_CHECK(). Two lines.
  ROOFLAB_TODO("lab03.residual_add.launch", u, residual, y, n, stream);
  // STUDENT END
}

template <typename T>
void unfused_chain(const T* x, const T* bias, const T* residual, T* t, T* u, T* y, std::size_t rows, std::size_t cols,
                   cudaStream_t stream) {
  // STUDENT BEGIN (lab03.unfused.launch)
  // TODO(lab03.unfused.launch): call the three launchers above (bias_add, gelu, residual_add) in order, on
  //   `stream`: x -> t -> u -> y through the scratch arrays t and u. Three lines.
  ROOFLAB_TODO("lab03.unfused.launch", x, bias, residual, t, u, y, rows, cols, stream);
  // STUDENT END
}

template <typename T>
void fused_chain(const T* x, const T* bias, const T* residual, T* y, std::size_t rows, std::size_t cols,
                 cudaStream_t stream) {
  // STUDENT BEGIN (lab03.fused.launch)
  // TODO(lab03.fused.launch): fused_chain_kernel<T><<<blocks_for(rows * cols, kFusedBlocksPerSm), kBlock, 0,
  //   stream>>>(...) (the blocks its __launch_bounds__ promise per SM), then ROOFLAB_LAUNCH_CHECK(). Two lines.
  ROOFLAB_TODO("lab03.fused.launch", x, bias, residual, y, rows, cols, stream);
  // STUDENT END
}

void sweep(const float* in, float* out, std::size_t n, float a, float b, int k, cudaStream_t stream) {
  // STUDENT BEGIN (lab03.sweep.launch)
  // TODO(lab03.sweep.launch): sweep_kernel<<<blocks_for(n), kBlock, 0, stream>>>(...), then
  //   ROOFLAB_LAUNCH_CHECK(). Two lines.
  ROOFLAB_TODO("lab03.sweep.launch", in, out, n, a, b, k, stream);
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
