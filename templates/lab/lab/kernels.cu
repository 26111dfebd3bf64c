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
  // TODO(@LAB_NS@.scale): y[i] = a * x[i] in a grid-stride loop: thread global_thread() of the grid handles
  //   elements t, t + G, t + 2G, ... (G = grid_threads()) while i < n. About 3 lines. Handout: "The kernel".
  rooflab::unused(x, y, a, n);  // delete this line when the kernel is written
  // STUDENT END
}

// ---- launchers ----

void scale(const float* x, float* y, float a, std::size_t n, cudaStream_t stream) {
  // STUDENT BEGIN (@LAB_NS@.scale.launch)
  // TODO(@LAB_NS@.scale.launch): launch scale_kernel on rooflab::grid_for(n, kBlock, 8 * sm_count()) blocks of
  //   kBlock threads on `stream`, then ROOFLAB_LAUNCH_CHECK(). Two lines.
  ROOFLAB_TODO("@LAB_NS@.scale.launch", x, y, a, n, stream);
  // STUDENT END
}

}  // namespace @LAB_NS@
