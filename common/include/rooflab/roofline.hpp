// Roofline arithmetic shared by the analytic answers' tests, the thresholds and the plots.
// SI units throughout: FLOP, bytes, FLOP/s, bytes/s, seconds.
#pragma once

#include <algorithm>

namespace rooflab::roofline {

constexpr double gbps(double gb_per_s) { return gb_per_s * 1e9; }     // GB/s -> bytes/s
constexpr double tflops(double tflop_per_s) { return tflop_per_s * 1e12; }  // TFLOP/s -> FLOP/s

// Arithmetic intensity: FLOPs per byte moved to and from DRAM.
constexpr double intensity(double flops, double bytes) { return flops / bytes; }

// The intensity where the memory roof meets the compute roof: below it a kernel is memory-bound.
constexpr double ridge_point(double peak_flops, double bandwidth) { return peak_flops / bandwidth; }

// The roof: the best FLOP/s a kernel of this intensity can reach.
constexpr double attainable(double intensity_flop_per_byte, double peak_flops, double bandwidth) {
  return std::min(peak_flops, intensity_flop_per_byte * bandwidth);
}

constexpr bool memory_bound(double intensity_flop_per_byte, double peak_flops, double bandwidth) {
  return intensity_flop_per_byte < ridge_point(peak_flops, bandwidth);
}

// The fraction of the compute peak a kernel of this intensity can reach at best.
constexpr double fraction_of_peak(double intensity_flop_per_byte, double peak_flops, double bandwidth) {
  return attainable(intensity_flop_per_byte, peak_flops, bandwidth) / peak_flops;
}

// The least time the work can take: whichever of moving the bytes or doing the FLOPs takes longer.
constexpr double time_floor_s(double flops, double bytes, double peak_flops, double bandwidth) {
  return std::max(bytes / bandwidth, flops / peak_flops);
}

}  // namespace rooflab::roofline
