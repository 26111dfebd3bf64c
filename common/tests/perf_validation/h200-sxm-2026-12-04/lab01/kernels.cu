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
  // A grid-stride loop: thread t handles t, t + G, t + 2G, ... with G the threads in the grid. Neighbouring
  // threads of a warp touch neighbouring floats, so each warp's 32 loads fall in four 32-byte sectors:
  // every byte fetched is used (coalesced). The loop lets any grid size cover any n.
  //
  // Each trip issues four loads before its first store, so four loads per thread are in flight at once
  // (handout: "Choosing the grid", Little's law). A copy has nothing else to overlap: with one load per trip
  // an H100 reached 80% of its copy ceiling, while add and triad, two loads per trip, reached 92%
  // (docs/measurements.md).
  const std::size_t grid = grid_threads();
  std::size_t i = global_thread();
  for (; i + 3 * grid < n; i += 4 * grid) {
    const float v0 = a[i], v1 = a[i + grid], v2 = a[i + 2 * grid], v3 = a[i + 3 * grid];
    c[i] = v0;
    c[i + grid] = v1;
    c[i + 2 * grid] = v2;
    c[i + 3 * grid] = v3;
  }
  for (; i < n; i += grid) c[i] = a[i];  // the last, partial round
  // STUDENT END
}

__global__ void scale_kernel(const float* __restrict__ c, float* __restrict__ b, float scalar, std::size_t n) {
  // STUDENT BEGIN (lab01.scale)
  // As copy: four loads in flight per thread, then the multiplies and stores.
  const std::size_t grid = grid_threads();
  std::size_t i = global_thread();
  for (; i + 3 * grid < n; i += 4 * grid) {
    const float v0 = c[i], v1 = c[i + grid], v2 = c[i + 2 * grid], v3 = c[i + 3 * grid];
    b[i] = scalar * v0;
    b[i + grid] = scalar * v1;
    b[i + 2 * grid] = scalar * v2;
    b[i + 3 * grid] = scalar * v3;
  }
  for (; i < n; i += grid) b[i] = scalar * c[i];
  // STUDENT END
}

__global__ void add_kernel(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
                           std::size_t n) {
  // STUDENT BEGIN (lab01.add)
  for (std::size_t i = global_thread(); i < n; i += grid_threads()) {
    c[i] = a[i] + b[i];
  }
  // STUDENT END
}

__global__ void triad_kernel(const float* __restrict__ b, const float* __restrict__ c, float* __restrict__ a,
                             float scalar, std::size_t n) {
  // STUDENT BEGIN (lab01.triad)
  for (std::size_t i = global_thread(); i < n; i += grid_threads()) {
    a[i] = b[i] + scalar * c[i];
  }
  // STUDENT END
}

// ---- vectorized triad ----

// `head` elements come before the first 16-byte-aligned address (the same for all three arrays; the
// launcher checks), then whole float4s, then fewer than four elements of tail.
__global__ void triad_vec4_kernel(const float* __restrict__ b, const float* __restrict__ c, float* __restrict__ a,
                                  float scalar, std::size_t n, std::size_t head) {
  // STUDENT BEGIN (lab01.triad_vec4)
  // One float4 is one 128-bit load (ld.global.v4.f32): a quarter of the load instructions of the scalar
  // triad for the same bytes, so fewer instructions have to be in flight to keep DRAM busy.
  // The float4 views start at the first aligned element and are made inside the loop, where they are used:
  // when n is smaller than `head`, b + head is not 16-byte aligned, and a float4 pointer there is one a GPU
  // faults on when it is dereferenced (the CPU backend reports such a pointer where it is made).
  const std::size_t n4 = (n - head) / 4;
  for (std::size_t i = global_thread(); i < n4; i += grid_threads()) {
    const float4 bv = reinterpret_cast<const float4*>(b + head)[i];
    const float4 cv = reinterpret_cast<const float4*>(c + head)[i];
    reinterpret_cast<float4*>(a + head)[i] =
        make_float4(bv.x + scalar * cv.x, bv.y + scalar * cv.y, bv.z + scalar * cv.z, bv.w + scalar * cv.w);
  }
  // The leftovers (at most 3 before, 3 after) go one element per thread to the first threads of the grid.
  const std::size_t tail_begin = head + 4 * n4;
  const std::size_t leftovers = head + (n - tail_begin);
  const std::size_t t = global_thread();
  if (t < leftovers) {
    const std::size_t i = t < head ? t : tail_begin + (t - head);
    a[i] = b[i] + scalar * c[i];
  }
  // STUDENT END
}

// ---- coalescing experiment ----

__global__ void strided_read_kernel(const float* __restrict__ in, float* __restrict__ out, std::size_t n_out,
                                    std::size_t stride) {
  // STUDENT BEGIN (lab01.strided)
  // Reads are `stride` floats apart: from stride 8 on, every 4-byte read pulls its own 32-byte sector, so
  // DRAM moves 8x the bytes the kernel uses. Writes stay coalesced so that only the reads change.
  for (std::size_t i = global_thread(); i < n_out; i += grid_threads()) {
    out[i] = in[i * stride];
  }
  // STUDENT END
}

// ---- launchers ----

// How many blocks of kBlock threads to launch for n elements with a grid-stride loop (handout: "Choosing
// the grid").
unsigned blocks_for(std::size_t n) {
  // STUDENT BEGIN (lab01.grid)
  // One thread per element, but at most 8 blocks per SM: enough resident warps to keep many loads in
  // flight on every SM; the grid-stride loop covers the rest.
  return rooflab::grid_for(n, kBlock, 8 * sm_count());
  // STUDENT END
}

void copy(const float* a, float* c, std::size_t n, cudaStream_t stream) {
  // STUDENT BEGIN (lab01.copy.launch)
  copy_kernel<<<blocks_for(n), kBlock, 0, stream>>>(a, c, n);
  ROOFLAB_LAUNCH_CHECK();
  // STUDENT END
}

void scale(const float* c, float* b, float scalar, std::size_t n, cudaStream_t stream) {
  // STUDENT BEGIN (lab01.scale.launch)
  scale_kernel<<<blocks_for(n), kBlock, 0, stream>>>(c, b, scalar, n);
  ROOFLAB_LAUNCH_CHECK();
  // STUDENT END
}

void add(const float* a, const float* b, float* c, std::size_t n, cudaStream_t stream) {
  // STUDENT BEGIN (lab01.add.launch)
  add_kernel<<<blocks_for(n), kBlock, 0, stream>>>(a, b, c, n);
  ROOFLAB_LAUNCH_CHECK();
  // STUDENT END
}

void triad(const float* b, const float* c, float* a, float scalar, std::size_t n, cudaStream_t stream) {
  // STUDENT BEGIN (lab01.triad.launch)
  triad_kernel<<<blocks_for(n), kBlock, 0, stream>>>(b, c, a, scalar, n);
  ROOFLAB_LAUNCH_CHECK();
  // STUDENT END
}

void triad_vec4(const float* b, const float* c, float* a, float scalar, std::size_t n, cudaStream_t stream) {
  // STUDENT BEGIN (lab01.triad_vec4.launch)
  // A float4 access must be 16-byte aligned. If the three arrays are misaligned by different amounts no
  // single head makes all of them aligned, so fall back to the scalar triad.
  const auto misalign = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16; };
  if (misalign(a) != misalign(b) || misalign(a) != misalign(c)) {
    triad(b, c, a, scalar, n, stream);
    return;
  }
  const std::size_t head = std::min<std::size_t>(n, (16 - misalign(a)) % 16 / sizeof(float));
  const std::size_t n4 = (n - head) / 4;
  triad_vec4_kernel<<<blocks_for(n4), kBlock, 0, stream>>>(b, c, a, scalar, n, head);
  ROOFLAB_LAUNCH_CHECK();
  // STUDENT END
}

void strided_read(const float* in, float* out, std::size_t n_out, std::size_t stride, cudaStream_t stream) {
  // STUDENT BEGIN (lab01.strided.launch)
  strided_read_kernel<<<blocks_for(n_out), kBlock, 0, stream>>>(in, out, n_out, stride);
  ROOFLAB_LAUNCH_CHECK();
  // STUDENT END
}

}  // namespace lab01
