// A roofline as every lab draws one: the axes (arithmetic intensity in FLOP/byte against TFLOP/s, both
// logarithmic) and a GPU's datasheet roofs. The labs add their kernels' points; the perf tests add the roofs
// measured on the grading GPU.
//
//   auto p = rooflab::roofline_plot("GEMM ladder on the " + g.name, 0.1, 4000, "datasheet roofs only");
//   rooflab::add_datasheet_roofs(p, g);
//   p.series.push_back({"tiled", {{intensity, tflops}}, "points"});
#pragma once

#include <rooflab/specs.hpp>
#include <rooflab/testing/plot.hpp>

#include <string>

namespace rooflab {

// Intensity from xmin to xmax (FLOP/byte) against `ylabel`, both axes logarithmic; `note` under the title.
Plot roofline_plot(std::string title, double xmin, double xmax, std::string note = {},
                   std::string ylabel = "attainable TFLOP/s", std::string xlabel = "arithmetic intensity (FLOP/byte)");

// The GPU's datasheet roofs in TB/s and TFLOP/s: FP32 on the CUDA cores (solid) and, where the GPU has tensor
// cores, FP16 on them (dashed). Each roof marks its own ridge point.
void add_datasheet_roofs(Plot& p, const GpuSpec& g);

}  // namespace rooflab
