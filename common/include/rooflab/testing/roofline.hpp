// Roofline arithmetic shared by the analytic answers' tests, the thresholds and the plots.
//
// SI units throughout: FLOP, bytes, FLOP/s, bytes/s, seconds. Datasheets speak GB/s and TFLOP/s, so convert
// at the boundary with from_gbps() / from_tflops() (decimal: 1 GB/s = 1e9 bytes/s), never inside a formula.
//
//   using namespace rooflab::roofline;
//   const double peak = from_tflops(312), bw = from_gbps(2000);   // A100 FP16 tensor, ~2 TB/s
//   ridge_point(peak, bw);                                        // 156 FLOP/byte
//   memory_bound(intensity(2.0 * n * n * n, 3.0 * n * n * 2), peak, bw);
//
// Everything is constexpr, so a handout's worked example can be checked with static_assert.
#pragma once

#include <algorithm>

namespace rooflab::roofline {

// ---- unit conversions (decimal, as datasheets count) ----

constexpr double from_gbps(double gb_per_s) { return gb_per_s * 1e9; }           // GB/s -> bytes/s
constexpr double from_tflops(double tflop_per_s) { return tflop_per_s * 1e12; }  // TFLOP/s -> FLOP/s
constexpr double to_gbps(double bytes_per_s) { return bytes_per_s / 1e9; }       // bytes/s -> GB/s
constexpr double to_tflops(double flop_per_s) { return flop_per_s / 1e12; }      // FLOP/s -> TFLOP/s

// ---- the model ----

// Arithmetic intensity: FLOPs per byte moved to and from DRAM (not per byte touched: cache hits are free).
constexpr double intensity(double flops, double bytes) { return flops / bytes; }

// The intensity where the memory slope meets the compute roof. Below it a kernel is memory-bound.
constexpr double ridge_point(double peak_flops, double bandwidth) { return peak_flops / bandwidth; }

// The roof: the most FLOP/s a kernel of this intensity can reach, min(peak, I x B). An upper bound, not a
// prediction.
constexpr double attainable(double intensity_flop_per_byte, double peak_flops, double bandwidth) {
  return std::min(peak_flops, intensity_flop_per_byte * bandwidth);
}

// Strictly below the ridge point; a kernel exactly at the ridge is limited by both and counted compute-bound.
constexpr bool memory_bound(double intensity_flop_per_byte, double peak_flops, double bandwidth) {
  return intensity_flop_per_byte < ridge_point(peak_flops, bandwidth);
}

// The fraction of the compute peak a kernel of this intensity can reach at best (1 at and past the ridge).
constexpr double fraction_of_peak(double intensity_flop_per_byte, double peak_flops, double bandwidth) {
  return attainable(intensity_flop_per_byte, peak_flops, bandwidth) / peak_flops;
}

// The least time the work can take: whichever of moving the bytes or doing the FLOPs takes longer
// (the two overlap perfectly in the model). Equals flops / attainable(flops / bytes, ...).
constexpr double time_floor_s(double flops, double bytes, double peak_flops, double bandwidth) {
  return std::max(bytes / bandwidth, flops / peak_flops);
}

}  // namespace rooflab::roofline
