// Lab 08: the shape the perf tests time and the bytes they count, in one place, so that tests/dryrun.cpp can
// check them against the reference answers (Q1's bits per weight) and the kernel registry. PROVIDED: do not
// modify.
#pragma once

#include "lab.hpp"

#include <rooflab/testing/timing.hpp>

#include <cmath>

namespace lab08::perf {

// The GEMV's square side: 8192 on a GPU (the N = K = 8192: 128 MB of FP16 weights, past every L2 in
// data/gpus.json even after int4 shrinks them, and the L2 is flushed before every sample anyway); on a dry run
// the power of two, at least 128, whose weights are perf_scale() times as many.
inline int gemv_side(double scale = rooflab::perf_scale()) {
  if (scale >= 1) return 8192;
  int side = 128;
  while (2.0 * side * 2.0 * side <= 8192.0 * 8192.0 * scale) side *= 2;
  return side;
}

// The group the int4 perf test times: one FP16 scale per 128 weights, 4.125 bits per weight.
inline constexpr int kInt4PerfGroup = 128;

// What a GEMV over `weight_bytes` of packed weights (and scales) reads and writes: the weights once, x (k
// halves) and y (n halves). award() grades by the weight bytes alone, so that a speedup over the FP16 GEMV
// is exactly weight_bytes_ratio x the fraction of the FP16 GEMV's bytes per second.
inline rooflab::Work gemv_work(int n, int k, double weight_bytes) {
  return {.bytes_read = weight_bytes + 2.0 * k, .bytes_written = 2.0 * n, .flops = 2.0 * n * static_cast<double>(k)};
}
inline double fp16_weight_bytes(int n, int k) { return fp16_bytes(n, k); }
inline double int8_weight_bytes(int n, int k) { return int8_bytes(n, k); }
inline double int4_weight_bytes(int n, int k) { return int4_bytes(n, k, kInt4PerfGroup); }

}  // namespace lab08::perf
