// Lab 01: memory bandwidth - the kernels.
//
// Every kernel here does almost no arithmetic: its speed is set by how fast bytes move between DRAM and
// the SMs. The lab's question is how close each one gets to the copy ceiling measured on your GPU.
//
//   copy_kernel, scale_kernel, add_kernel, triad_kernel   the four STREAM kernels, grid-stride loops
//   triad_vec4_kernel                                      the triad with 128-bit loads and stores
//   strided_read_kernel                                    the coalescing experiment
//
// Handout: README.md, sections "Grid-stride loops", "Coalescing and sectors" and "Vectorized access".
#include "kernels.hpp"

#include <rooflab/grid.hpp>
#include <rooflab/launch.hpp>
#include <rooflab/stub.hpp>

#include <algorithm>
#include <cstdint>

namespace lab01 {

// ---- PROVIDED: do not modify ----

using rooflab::global_thread;  // this thread's index in the grid (rooflab/grid.hpp)
using rooflab::grid_threads;   // threads in the grid
using rooflab::sm_count;       // SMs of the current device


// ---- STREAM kernels ----

__global__ void copy_kernel(const float* __restrict__ a, float* __restrict__ c, std::size_t n) {
  // STUDENT BEGIN (lab01.copy)
  // TODO(lab01.copy.1): write a grid-stride loop: thread t of the grid handles elements t, t + G, t + 2G, ...
  //   where G = gridDim.x * blockDim.x is the number of threads in the grid (the helpers global_thread() and
  //   grid_threads() above give both). Use std::size_t indices: 32-bit ints overflow past 2^31 elements.
  // TODO(lab01.copy.2): in the loop, c[i] = a[i]. About 3 lines. Handout: "Grid-stride loops".
  rooflab::unused(a, c, n);  // delete this line when the kernel is written
  // STUDENT END
}

__global__ void scale_kernel(const float* __restrict__ c, float* __restrict__ b, float scalar, std::size_t n) {
  // STUDENT BEGIN (lab01.scale)
  // TODO(lab01.scale): b[i] = scalar * c[i] in the same grid-stride loop over i as copy_kernel (from
  //   global_thread(), step grid_threads(), while i < n). About 3 lines.
  rooflab::unused(c, b, scalar, n);  // delete this line when the kernel is written
  // STUDENT END
}

__global__ void add_kernel(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
                           std::size_t n) {
  // STUDENT BEGIN (lab01.add)
  // TODO(lab01.add): c[i] = a[i] + b[i] in a grid-stride loop over i (global_thread(), grid_threads()). About
  //   3 lines.
  rooflab::unused(a, b, c, n);  // delete this line when the kernel is written
  // STUDENT END
}

__global__ void triad_kernel(const float* __restrict__ b, const float* __restrict__ c, float* __restrict__ a,
                             float scalar, std::size_t n) {
  // STUDENT BEGIN (lab01.triad)
  // TODO(lab01.triad): a[i] = b[i] + scalar * c[i] in a grid-stride loop over i (global_thread(),
  //   grid_threads()). About 3 lines.
  rooflab::unused(b, c, a, scalar, n);  // delete this line when the kernel is written
  // STUDENT END
}

// ---- vectorized triad ----

// `head` elements come before the first 16-byte-aligned address (the same for all three arrays; the
// launcher checks), then whole float4s, then fewer than four elements of tail.
__global__ void triad_vec4_kernel(const float* __restrict__ b, const float* __restrict__ c, float* __restrict__ a,
                                  float scalar, std::size_t n, std::size_t head) {
  // STUDENT BEGIN (lab01.triad_vec4)
  // TODO(lab01.triad_vec4.1): view the arrays from element `head` on as float4 (reinterpret_cast of b + head,
  //   c + head, a + head) and run a grid-stride loop over the float4 index v < n4 = (n - head) / 4
  //   (global_thread(), grid_threads()): load one float4 of b and one of c, store one float4 of a
  //   (make_float4).
  // TODO(lab01.triad_vec4.2): the elements left over - the `head` ones before the first float4 and the fewer
  //   than four after the last - no loop: thread t = global_thread() of the grid takes leftover t, if there
  //   is one.
  //   About 15 lines. Handout: "Vectorized access".
  rooflab::unused(b, c, a, scalar, n, head);  // delete this line when the kernel is written
  // STUDENT END
}

// ---- coalescing experiment ----

__global__ void strided_read_kernel(const float* __restrict__ in, float* __restrict__ out, std::size_t n_out,
                                    std::size_t stride) {
  // STUDENT BEGIN (lab01.strided)
  // TODO(lab01.strided): out[i] = in[i * stride] in a grid-stride loop over the output index i < n_out
  //   (global_thread(), grid_threads()). About 3 lines.
  //   Handout: "Coalescing and sectors" says what to expect at stride 1, 2, 4, 8 and 32.
  rooflab::unused(in, out, n_out, stride);  // delete this line when the kernel is written
  // STUDENT END
}

// ---- launchers ----

// How many blocks of kBlock threads to launch for n elements with a grid-stride loop (handout: "Choosing
// the grid").
unsigned blocks_for(std::size_t n) {
  // STUDENT BEGIN (lab01.grid)
  // TODO(lab01.grid): how many blocks of kBlock threads for n elements? Enough for one thread per element,
  //   but at most a few blocks per SM (sm_count() gives the SMs): the grid-stride loop covers the rest.
  //   rooflab::grid_for(n, block, max_blocks) does the arithmetic. One line. Handout: "Choosing the grid".
  ROOFLAB_TODO("lab01.grid", n);
  // STUDENT END
}

void copy(const float* a, float* c, std::size_t n, cudaStream_t stream) {
  // STUDENT BEGIN (lab01.copy.launch)
  // TODO(lab01.copy.launch): launch copy_kernel on blocks_for(n) blocks of kBlock threads:
  //   kernel<<<blocks, threads_per_block, shared_bytes, stream>>>(args...), then ROOFLAB_LAUNCH_CHECK() to
  //   pick up a bad launch (a launch returns no error itself). Two lines.
  ROOFLAB_TODO("lab01.copy.launch", a, c, n, stream);
  // STUDENT END
}

void scale(const float* c, float* b, float scalar, std::size_t n, cudaStream_t stream) {
  // STUDENT BEGIN (lab01.scale.launch)
  // TODO(lab01.scale.launch): scale_kernel<<<blocks_for(n), kBlock, 0, stream>>>(...) as for copy_kernel,
  //   then ROOFLAB_LAUNCH_CHECK(). Two lines.
  ROOFLAB_TODO("lab01.scale.launch", c, b, scalar, n, stream);
  // STUDENT END
}

void add(const float* a, const float* b, float* c, std::size_t n, cudaStream_t stream) {
  // STUDENT BEGIN (lab01.add.launch)
  // TODO(lab01.add.launch): add_kernel<<<blocks_for(n), kBlock, 0, stream>>>(...), then ROOFLAB_LAUNCH_CHECK().
  //   Two lines.
  ROOFLAB_TODO("lab01.add.launch", a, b, c, n, stream);
  // STUDENT END
}

void triad(const float* b, const float* c, float* a, float scalar, std::size_t n, cudaStream_t stream) {
  // STUDENT BEGIN (lab01.triad.launch)
  // TODO(lab01.triad.launch): triad_kernel<<<blocks_for(n), kBlock, 0, stream>>>(...), then
  //   ROOFLAB_LAUNCH_CHECK(). Two lines.
  ROOFLAB_TODO("lab01.triad.launch", b, c, a, scalar, n, stream);
  // STUDENT END
}

void triad_vec4(const float* b, const float* c, float* a, float scalar, std::size_t n, cudaStream_t stream) {
  // STUDENT BEGIN (lab01.triad_vec4.launch)
  // TODO(lab01.triad_vec4.launch.1): float4 accesses need 16-byte-aligned addresses. Find how far a, b and c
  //   each are past a 16-byte boundary (reinterpret_cast<std::uintptr_t>(p) % 16). If they differ, no single
  //   head aligns all three: call the scalar triad instead and return.
  // TODO(lab01.triad_vec4.launch.2): head = elements before the first aligned address (at most n), then launch
  //   triad_vec4_kernel<<<blocks_for((n - head) / 4), kBlock, 0, stream>>>(...) and ROOFLAB_LAUNCH_CHECK().
  //   About 9 lines.
  ROOFLAB_TODO("lab01.triad_vec4.launch", b, c, a, scalar, n, stream);
  // STUDENT END
}

void strided_read(const float* in, float* out, std::size_t n_out, std::size_t stride, cudaStream_t stream) {
  // STUDENT BEGIN (lab01.strided.launch)
  // TODO(lab01.strided.launch): strided_read_kernel<<<blocks_for(n_out), kBlock, 0, stream>>>(...), then
  //   ROOFLAB_LAUNCH_CHECK(). Two lines.
  ROOFLAB_TODO("lab01.strided.launch", in, out, n_out, stride, stream);
  // STUDENT END
}

}  // namespace lab01
