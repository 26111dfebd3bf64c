// Lab 04: the shapes and the work the perf tests time, in one place, so that tests/dryrun.cpp can check
// them against the reference answers at the GPU's shapes. PROVIDED: do not modify.
#pragma once

#include "lab.hpp"

#include <rooflab/testing/timing.hpp>

#include <array>
#include <cstddef>

namespace lab04::perf {

// 4096^3, where every tile divides evenly, and 4000^3, where none of the ladder's does (128 x 128 tiles leave a
// 32-row tail; 4000 is a multiple of 16, so the WMMA kernel's fast path still applies). A dry run scales the
// work by perf_scale(): 4096 becomes rooflab::scaled_gemm_n(4096) and 4000 its 125/128.
inline std::array<Shape, 2> shapes(bool gpu_sizes = !rooflab::kDryRun) {
  const std::size_t n = gpu_sizes ? 4096 : static_cast<std::size_t>(rooflab::scaled_gemm_n(4096));
  const std::size_t odd = n * 125 / 128;
  return {Shape{n, n, n}, Shape{odd, odd, odd}};
}

// What one timed GEMM does with beta = 0: reads A and B once, writes C once, 2MNK FLOPs (Q1 and Q2's
// ideal counts: the ladder is scored by FLOP/s, the bytes only place it on the roofline).
inline rooflab::Work gemm_work(const Shape& s, std::size_t in_bytes) {
  const double m = static_cast<double>(s.m), n = static_cast<double>(s.n), k = static_cast<double>(s.k);
  return {.bytes_read = static_cast<double>(in_bytes) * (m * k + k * n), .bytes_written = 4.0 * m * n,
          .flops = 2.0 * m * n * k};
}

}  // namespace lab04::perf
