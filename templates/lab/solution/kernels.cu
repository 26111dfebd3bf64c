// Lab @LAB_ID@: @LAB_TITLE@ - the kernels.
//
// fill in: what the kernels here teach and what bounds their speed. The template's one kernel streams: it
// does one multiply per 8 bytes moved, so its speed is set by DRAM bandwidth.
//
//   scale_kernel   y = a * x, a grid-stride loop
//
// Handout: README.md, section "The kernel".
#include "kernels.hpp"

#include <rooflab/grid.hpp>
#include <rooflab/launch.hpp>
#include <rooflab/stub.hpp>

namespace @LAB_NS@ {

// ---- PROVIDED: do not modify ----

using rooflab::global_thread;  // this thread's index in the grid (rooflab/grid.hpp)
using rooflab::grid_threads;   // threads in the grid
using rooflab::sm_count;       // SMs of the current device

// ---- kernels ----

__global__ void scale_kernel(const float* __restrict__ x, float* __restrict__ y, float a, std::size_t n) {
  // STUDENT BEGIN (@LAB_NS@.scale)
  // A grid-stride loop: neighbouring threads of a warp touch neighbouring floats (coalesced), and any grid
  // covers any n.
  for (std::size_t i = global_thread(); i < n; i += grid_threads()) {
    y[i] = a * x[i];
  }
  // STUDENT END
}

// ---- launchers ----

void scale(const float* x, float* y, float a, std::size_t n, cudaStream_t stream) {
  // STUDENT BEGIN (@LAB_NS@.scale.launch)
  // At most 8 blocks per SM: enough warps in flight to keep DRAM busy; the loop covers the rest.
  scale_kernel<<<rooflab::grid_for(n, kBlock, 8 * sm_count()), kBlock, 0, stream>>>(x, y, a, n);
  ROOFLAB_LAUNCH_CHECK();
  // STUDENT END
}

}  // namespace @LAB_NS@
