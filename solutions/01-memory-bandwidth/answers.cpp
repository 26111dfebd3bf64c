// Lab 01: memory bandwidth - the analytic questions. Handout: README.md, section "Counting bytes".
// The tests call these with random sizes and every GPU in data/gpus.json: compute, don't look up.
#include "lab.hpp"

#include <rooflab/stub.hpp>

#include <algorithm>

namespace lab01 {

double stream_bytes(StreamOp op, std::size_t n, std::size_t elem_bytes) {
  // STUDENT BEGIN (lab01.q1)
  // copy and scale read one array and write one; add and triad read two and write one.
  const double arrays = (op == StreamOp::copy || op == StreamOp::scale) ? 2.0 : 3.0;
  return arrays * static_cast<double>(n) * static_cast<double>(elem_bytes);
  // STUDENT END
}

double achieved_gbps(double bytes, double seconds) {
  // STUDENT BEGIN (lab01.q2)
  return bytes / seconds / 1e9;  // decimal GB, as every datasheet counts
  // STUDENT END
}

double time_floor_s(StreamOp op, std::size_t n, const rooflab::GpuSpec& gpu) {
  // STUDENT BEGIN (lab01.q3)
  return stream_bytes(op, n, sizeof(float)) / (gpu.bandwidth_gbps * 1e9);
  // STUDENT END
}

double strided_dram_bytes(std::size_t n, std::size_t elem_bytes, std::size_t stride, std::size_t sector_bytes) {
  // STUDENT BEGIN (lab01.q4)
  if (n == 0) return 0.0;
  const std::size_t step = stride * elem_bytes;  // bytes between consecutive elements
  if (step >= sector_bytes) {
    // Every element lands in a sector of its own (an aligned element never straddles two sectors).
    return static_cast<double>(n) * static_cast<double>(sector_bytes);
  }
  // Steps shorter than a sector leave no sector untouched between the first and the last element.
  const std::size_t last_byte = (n - 1) * step + elem_bytes - 1;
  return static_cast<double>(last_byte / sector_bytes + 1) * static_cast<double>(sector_bytes);
  // STUDENT END
}

double strided_efficiency(std::size_t elem_bytes, std::size_t stride, std::size_t sector_bytes) {
  // STUDENT BEGIN (lab01.q5)
  // Per element: elem_bytes used; fetched: stride * elem_bytes while that is under a sector, else a sector.
  const double fetched = std::min<double>(static_cast<double>(stride * elem_bytes), static_cast<double>(sector_bytes));
  return static_cast<double>(elem_bytes) / std::max<double>(fetched, static_cast<double>(elem_bytes));
  // STUDENT END
}

double gb_to_gib(double gb) {
  // STUDENT BEGIN (lab01.q6)
  return gb * 1e9 / (1024.0 * 1024.0 * 1024.0);
  // STUDENT END
}

double gib_to_gb(double gib) {
  // STUDENT BEGIN (lab01.q6b)
  return gib * (1024.0 * 1024.0 * 1024.0) / 1e9;
  // STUDENT END
}

double min_array_bytes(const rooflab::GpuSpec& gpu) {
  // STUDENT BEGIN (lab01.q7)
  return 4.0 * gpu.l2_mb.value() * 1e6;  // l2_mb is empty where NVIDIA does not publish it
  // STUDENT END
}

double copy_fraction_of_datasheet(double bytes_copied, double seconds, const rooflab::GpuSpec& gpu) {
  // STUDENT BEGIN (lab01.q8)
  // The datasheet counts every byte crossing the DRAM interface: a copy reads and writes each byte.
  return achieved_gbps(2.0 * bytes_copied, seconds) / gpu.bandwidth_gbps;
  // STUDENT END
}

}  // namespace lab01
