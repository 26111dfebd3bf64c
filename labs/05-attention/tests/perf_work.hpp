// Lab 05: the shape the perf tests time and the work they count, in one place, so that tests/dryrun.cpp
// can check them against the reference answers (Q1 to Q3) and the kernel registry. PROVIDED: do not modify.
#pragma once

#include "lab.hpp"

#include <rooflab/testing/timing.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace lab05::perf {

// 16 heads of 64 at L = 4096, not causal, FP16: the graded shape. A dry run keeps the heads and the
// head dim and scales L with the square root of perf_scale() (the work is quadratic in L), to a multiple of
// 64 and at least 128.
inline Shape shape(bool gpu_sizes = !rooflab::kDryRun, std::size_t len = 4096) {
  if (!gpu_sizes) {
    len = std::max<std::size_t>(128, static_cast<std::size_t>(static_cast<double>(len) * std::sqrt(rooflab::perf_scale())) / 64 * 64);
  }
  return {kPerfHeads, len, kPerfHeadDim, false};
}

// The naive path: Q and K read, S written; S read, P written; P and V read, O written (FP16), and the
// unmasked FLOPs of both GEMMs.
inline rooflab::Work naive_work(const Shape& s) {
  const double h = static_cast<double>(s.batch_heads), l = static_cast<double>(s.len), d = static_cast<double>(s.head_dim);
  return {.bytes_read = h * 2 * (2 * l * d + l * l + l * l + l * d), .bytes_written = h * 2 * (l * l + l * l + l * d),
          .flops = h * 4 * l * l * d};
}

// Flash: Q, K and V read once, O written once (FP16); the shape's FLOPs.
inline rooflab::Work flash_work(const Shape& s) {
  const double h = static_cast<double>(s.batch_heads), l = static_cast<double>(s.len), d = static_cast<double>(s.head_dim);
  const double pairs = s.causal ? l * (l + 1) / 2 : l * l;
  return {.bytes_read = h * 2 * 3 * l * d, .bytes_written = h * 2 * l * d, .flops = h * 4 * pairs * d};
}

// The softmax alone: S read, P written, FP16.
inline rooflab::Work softmax_work(const Shape& s) {
  const double elems = static_cast<double>(s.batch_heads) * static_cast<double>(s.len) * static_cast<double>(s.len);
  return {.bytes_read = 2 * elems, .bytes_written = 2 * elems, .flops = 0};
}

}  // namespace lab05::perf
