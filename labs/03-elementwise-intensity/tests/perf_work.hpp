// Lab 03: the shapes and the work the perf tests time, in one place, so that tests/dryrun.cpp can check
// them against the reference answers for a real GPU's shape. PROVIDED: do not modify.
#pragma once

#include "lab.hpp"

#include <rooflab/timing.hpp>

#include <algorithm>
#include <cstddef>
#include <utility>

namespace lab03::perf {

// rows x cols (FP32, 4096-column rows) with at least 4x the L2 per array (the harness's rule).
inline std::pair<std::size_t, std::size_t> shape(std::size_t l2_bytes, double scale = rooflab::perf_scale()) {
  const std::size_t n = rooflab::streaming_bytes(l2_bytes, scale) / 4;
  return {std::max<std::size_t>(n / 4096, 1), 4096};
}

// The chain's kernels as timed, FP32: bias add reads x and the bias row, GELU reads t, the residual add reads u
// and r; each writes one array. GELU is 9 FLOPs an element, each add 1.
inline rooflab::Work bias_add_work(std::size_t rows, std::size_t cols) {
  const double n = static_cast<double>(rows * cols);
  return {.bytes_read = 4.0 * (n + static_cast<double>(cols)), .bytes_written = 4.0 * n, .flops = n};
}
inline rooflab::Work gelu_work(std::size_t n) {
  return {.bytes_read = 4.0 * static_cast<double>(n), .bytes_written = 4.0 * static_cast<double>(n),
          .flops = 9.0 * static_cast<double>(n)};
}
inline rooflab::Work residual_add_work(std::size_t n) {
  return {.bytes_read = 8.0 * static_cast<double>(n), .bytes_written = 4.0 * static_cast<double>(n),
          .flops = static_cast<double>(n)};
}
inline rooflab::Work unfused_work(std::size_t rows, std::size_t cols) {
  const double n = static_cast<double>(rows * cols);
  return {.bytes_read = 4.0 * (4 * n + static_cast<double>(cols)), .bytes_written = 4.0 * 3 * n, .flops = 11.0 * n};
}
inline rooflab::Work fused_work(std::size_t rows, std::size_t cols) {
  const double n = static_cast<double>(rows * cols);
  return {.bytes_read = 4.0 * (2 * n + static_cast<double>(cols)), .bytes_written = 4.0 * n, .flops = 11.0 * n};
}
// The intensity sweep: k FMAs (2k FLOPs) per element, one float in and one out.
inline rooflab::Work sweep_work(std::size_t n, int k) {
  return {.bytes_read = 4.0 * static_cast<double>(n), .bytes_written = 4.0 * static_cast<double>(n),
          .flops = 2.0 * k * static_cast<double>(n)};
}

}  // namespace lab03::perf
