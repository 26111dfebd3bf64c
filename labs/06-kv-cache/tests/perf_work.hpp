// Lab 06: the batch the perf tests time and the bytes they count, in one place, so that tests/dryrun.cpp can
// check them against the reference answers (Q11) for a real GPU's shape. PROVIDED: do not modify.
#pragma once

#include "lab.hpp"

#include <rooflab/testing/timing.hpp>

#include <algorithm>
#include <cstddef>
#include <vector>

namespace lab06::perf {

inline constexpr int kKvHeads = 8;  // a Llama-3-8B-like layer: 8 KV heads of 128
inline constexpr int kHeadDim = 128;

// A decode batch of 16 sequences whose K and V together are at least 4x the L2 (the harness's streaming
// rule), lengths spread over a factor of two (0.72x to 1.32x the mean) and not multiples of the block size.
inline std::vector<std::size_t> lengths(std::size_t l2_bytes, double scale = rooflab::perf_scale()) {
  const double per_token = 2.0 * kKvHeads * kHeadDim * 2;
  const double tokens = static_cast<double>(rooflab::streaming_bytes(l2_bytes, scale)) / per_token;
  std::vector<std::size_t> out;
  for (int b = 0; b < 16; ++b) {
    out.push_back(std::max<std::size_t>(17, static_cast<std::size_t>(tokens / 16 * (0.72 + 0.04 * b)) | 5));
  }
  return out;
}

// What a decode step must read: every cached K and V byte once per KV head.
inline rooflab::Work decode_work(const std::vector<std::size_t>& lens, int kv_heads = kKvHeads) {
  double tokens = 0;
  for (const std::size_t len : lens) tokens += static_cast<double>(len);
  return {.bytes_read = 2.0 * tokens * kv_heads * kHeadDim * 2, .bytes_written = 0, .flops = 0};
}

}  // namespace lab06::perf
