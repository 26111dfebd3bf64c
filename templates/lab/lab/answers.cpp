// Lab @LAB_ID@: @LAB_TITLE@ - the analytic questions. Handout: README.md, section "Counting bytes".
// The tests call these with random sizes and every GPU in data/gpus.json: compute, don't look up.
#include "lab.hpp"

#include <rooflab/stub.hpp>

namespace @LAB_NS@ {

double scale_bytes(std::size_t n) {
  // STUDENT BEGIN (@LAB_NS@.q1)
  // TODO(@LAB_NS@.q1): how many arrays of n floats does the kernel read, and how many does it write? (1 line)
  ROOFLAB_TODO("@LAB_NS@.q1", n);
  // STUDENT END
}

double time_floor_s(std::size_t n, const rooflab::GpuSpec& gpu) {
  // STUDENT BEGIN (@LAB_NS@.q2)
  // TODO(@LAB_NS@.q2): scale_bytes(n) at gpu.bandwidth_gbps (decimal: 10^9 bytes per second). (1 line)
  ROOFLAB_TODO("@LAB_NS@.q2", n, gpu);
  // STUDENT END
}

}  // namespace @LAB_NS@
