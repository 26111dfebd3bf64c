// Lab @LAB_ID@: @LAB_TITLE@ - the analytic questions. Handout: README.md, section "Counting bytes".
// The tests call these with random sizes and every GPU in data/gpus.json: compute, don't look up.
#include "lab.hpp"

#include <rooflab/stub.hpp>

namespace @LAB_NS@ {

double scale_bytes(std::size_t n) {
  // STUDENT BEGIN (@LAB_NS@.q1)
  // x is read once and y written once: two arrays of n 4-byte floats.
  return 2.0 * 4.0 * static_cast<double>(n);
  // STUDENT END
}

double time_floor_s(std::size_t n, const rooflab::GpuSpec& gpu) {
  // STUDENT BEGIN (@LAB_NS@.q2)
  return scale_bytes(n) / (gpu.bandwidth_gbps * 1e9);
  // STUDENT END
}

}  // namespace @LAB_NS@
