// Lab 01: memory bandwidth - the analytic questions. Handout: README.md, section "Counting bytes".
// The tests call these with random sizes and every GPU in data/gpus.json: compute, don't look up.
#include "lab.hpp"

#include <rooflab/stub.hpp>

#include <algorithm>

namespace lab01 {

double stream_bytes(StreamOp op, std::size_t n, std::size_t elem_bytes) {
  // STUDENT BEGIN (lab01.q1)
  // TODO(lab01.q1): how many arrays does each STREAM kernel read, and how many does it write (a switch on op,
  //   or a table)? Each array is n elements of elem_bytes. Handout: "Counting bytes". (2 lines)
  ROOFLAB_TODO("lab01.q1", op, n, elem_bytes);
  // STUDENT END
}

double achieved_gbps(double bytes, double seconds) {
  // STUDENT BEGIN (lab01.q2)
  // TODO(lab01.q2): bytes per second, in decimal GB. (1 line)
  ROOFLAB_TODO("lab01.q2", bytes, seconds);
  // STUDENT END
}

double time_floor_s(StreamOp op, std::size_t n, const rooflab::GpuSpec& gpu) {
  // STUDENT BEGIN (lab01.q3)
  // TODO(lab01.q3): the kernel's bytes (stream_bytes above, FP32) at gpu.bandwidth_gbps (decimal GB/s). (1 line)
  ROOFLAB_TODO("lab01.q3", op, n, gpu);
  // STUDENT END
}

double strided_dram_bytes(std::size_t n, std::size_t elem_bytes, std::size_t stride, std::size_t sector_bytes) {
  // STUDENT BEGIN (lab01.q4)
  // TODO(lab01.q4): two cases. Elements at least a sector apart each cost a whole sector; closer ones share
  //   sectors, and then every sector from the first element's to the last element's is touched. (about 8 lines)
  ROOFLAB_TODO("lab01.q4", n, elem_bytes, stride, sector_bytes);
  // STUDENT END
}

double strided_efficiency(std::size_t elem_bytes, std::size_t stride, std::size_t sector_bytes) {
  // STUDENT BEGIN (lab01.q5)
  // TODO(lab01.q5): bytes used per element over bytes fetched per element (strided_dram_bytes above helps).
  //   (2 lines)
  ROOFLAB_TODO("lab01.q5", elem_bytes, stride, sector_bytes);
  // STUDENT END
}

double gb_to_gib(double gb) {
  // STUDENT BEGIN (lab01.q6)
  // TODO(lab01.q6): 1 GB = 1e9 bytes; 1 GiB = 2^30 bytes. (1 line)
  ROOFLAB_TODO("lab01.q6", gb);
  // STUDENT END
}

double gib_to_gb(double gib) {
  // STUDENT BEGIN (lab01.q6b)
  // TODO(lab01.q6b): the inverse of gb_to_gib. (1 line)
  ROOFLAB_TODO("lab01.q6b", gib);
  // STUDENT END
}

double min_array_bytes(const rooflab::GpuSpec& gpu) {
  // STUDENT BEGIN (lab01.q7)
  // TODO(lab01.q7): 4x the L2, in bytes: gpu.l2_mb (a std::optional, in decimal MB). (1 line)
  ROOFLAB_TODO("lab01.q7", gpu);
  // STUDENT END
}

double copy_fraction_of_datasheet(double bytes_copied, double seconds, const rooflab::GpuSpec& gpu) {
  // STUDENT BEGIN (lab01.q8)
  // TODO(lab01.q8): what does the datasheet's bandwidth (gpu.bandwidth_gbps) count for a copy of B bytes?
  //   achieved_gbps above does the unit. Handout: "Counting bytes". (2 lines)
  ROOFLAB_TODO("lab01.q8", bytes_copied, seconds, gpu);
  // STUDENT END
}

}  // namespace lab01
