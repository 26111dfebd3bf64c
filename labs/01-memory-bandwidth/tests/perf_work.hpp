// Lab 01: the shapes and the work (bytes) the perf tests time, in one place, so that tests/dryrun.cpp can
// check them against the reference answers for a real GPU's shape. PROVIDED: do not modify.
#pragma once

#include "lab.hpp"

#include <rooflab/testing/timing.hpp>

#include <cstddef>

namespace lab01::perf {

// Elements per array: 4x the L2 and at least 256 MB (the harness's rule), so every kernel streams from DRAM.
inline std::size_t elements(std::size_t l2_bytes, double scale = rooflab::perf_scale()) {
  return rooflab::streaming_bytes(l2_bytes, scale) / sizeof(float);
}

// Arrays each STREAM kernel touches: copy and scale read one and write one; add and triad read two.
inline int arrays_moved(StreamOp op) { return (op == StreamOp::copy || op == StreamOp::scale) ? 2 : 3; }

// Every STREAM kernel writes one array and reads the others it uses, FP32.
inline rooflab::Work stream_work(StreamOp op, std::size_t n) {
  const double array_bytes = 4.0 * static_cast<double>(n);
  return {.bytes_read = (arrays_moved(op) - 1) * array_bytes, .bytes_written = array_bytes};
}

// The strided read: useful bytes only (one float in, one float out per output element).
inline rooflab::Work strided_work(std::size_t n_out) {
  return {.bytes_read = 4.0 * static_cast<double>(n_out), .bytes_written = 4.0 * static_cast<double>(n_out)};
}

}  // namespace lab01::perf
