// Lab 07: the shapes the perf tests time and the bytes and FLOPs they count, in one place, so that
// tests/dryrun.cpp can check them against the reference answers. PROVIDED: do not modify.
#pragma once

#include "lab.hpp"

#include <rooflab/testing/timing.hpp>

#include <algorithm>
#include <cstddef>

namespace lab07::perf {

// The GEMV's square side: a power of two whose FP16 weights fill at least the harness's streaming size for
// this L2 (4x the L2, at least 256 MB), and on a GPU at least 8192.
inline int gemv_side(std::size_t l2_bytes, double scale = rooflab::perf_scale()) {
  const double need = static_cast<double>(rooflab::streaming_bytes(l2_bytes, scale)) / 2;
  int side = 64;
  while (static_cast<double>(side) * side < need) side *= 2;
  return scale < 1 ? side : std::max(side, 8192);
}

// A linear layer n x k (FP16 weights) applied to `batch` tokens: weights once, inputs and outputs.
inline rooflab::Work linear_work(int n, int k, int batch) {
  const double dn = n, dk = k, db = batch;
  return {.bytes_read = 2.0 * (dn * dk + db * dk), .bytes_written = 2.0 * db * dn, .flops = 2.0 * db * dn * dk};
}

// One transformer block of Llama-3-8B (hidden 4096, 8 KV heads of 128, FFN 14336), its linear layers as
// (n, k): the fused QKV projection, the output projection, gate, up and down.
struct Layer {
  int n, k;
};
inline constexpr Layer kBlockLayers[] = {{4096 + 2 * 1024, 4096}, {4096, 4096}, {14336, 4096}, {14336, 4096}, {4096, 14336}};

}  // namespace lab07::perf
