// Lab 03: the shapes and the work the perf tests time, in one place, so that tests/dryrun.cpp can check
// them against the reference answers for a real GPU's shape. PROVIDED: do not modify.
#pragma once

#include "lab.hpp"

#include <rooflab/testing/timing.hpp>

#include <algorithm>
#include <cstddef>
#include <utility>

namespace lab03::perf {

// rows x cols (FP32, 4096-column rows) with at least 4x the L2 per array (the harness's rule).
inline std::pair<std::size_t, std::size_t> shape(std::size_t l2_bytes, double scale = rooflab::perf_scale()) {
  const std::size_t n = rooflab::streaming_bytes(l2_bytes, scale) / 4;
  return {std::max<std::size_t>(n / 4096, 1), 4096};
}

// The kernels' work as timed (lab.hpp's lab03::work, which the registry reads too), for the timing harness.
inline rooflab::Work timed(const KernelWork& w) {
  return {.bytes_read = w.bytes_read, .bytes_written = w.bytes_written, .flops = w.flops};
}
inline rooflab::Work bias_add_work(std::size_t rows, std::size_t cols) {
  return timed(work::bias_add(static_cast<double>(rows * cols), static_cast<double>(cols)));
}
inline rooflab::Work gelu_work(std::size_t n) { return timed(work::gelu(static_cast<double>(n))); }
inline rooflab::Work residual_add_work(std::size_t n) { return timed(work::residual_add(static_cast<double>(n))); }
// The unfused chain: its three kernels' work added up.
inline rooflab::Work unfused_work(std::size_t rows, std::size_t cols) {
  const std::size_t n = rows * cols;
  const KernelWork parts[] = {work::bias_add(static_cast<double>(n), static_cast<double>(cols)),
                              work::gelu(static_cast<double>(n)), work::residual_add(static_cast<double>(n))};
  KernelWork sum;
  for (const auto& p : parts) {
    sum.bytes_read += p.bytes_read;
    sum.bytes_written += p.bytes_written;
    sum.flops += p.flops;
  }
  return timed(sum);
}
inline rooflab::Work fused_work(std::size_t rows, std::size_t cols) {
  return timed(work::fused_chain(static_cast<double>(rows * cols), static_cast<double>(cols)));
}
inline rooflab::Work sweep_work(std::size_t n, int k) { return timed(work::sweep(static_cast<double>(n), k)); }

}  // namespace lab03::perf
