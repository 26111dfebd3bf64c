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

#include <cstddef>
#include <initializer_list>
#include <string>
#include <string_view>

namespace rooflab {

// Intensity from xmin to xmax (FLOP/byte) against `ylabel`, both axes logarithmic; `note` under the title.
Plot roofline_plot(std::string title, double xmin, double xmax, std::string note = {},
                   std::string ylabel = "attainable TFLOP/s", std::string xlabel = "arithmetic intensity (FLOP/byte)");

// The GPU's datasheet roofs in TB/s and TFLOP/s: FP32 on the CUDA cores (solid) and, where the GPU has tensor
// cores, FP16 on them (dashed). Each roof marks its own ridge point.
void add_datasheet_roofs(Plot& p, const GpuSpec& g);

// The performance model beside a measured roofline (rooflab/perf_model.hpp): where the grader handed this test the
// model's predictions (ROOFLAB_MODEL_PREDICTIONS: the lab's static binary's `--rooflab-inspect --json`) and they are
// for the GPU the plot measured (`gpu_name`, as CUDA names it: a dry run's pretend GPU is not the one a grade
// without a GPU predicts for), the predicted point of the kernels registered as `variants` (registry ids; several
// make one point, their declared FLOPs and predicted times added: an unfused chain), hollow, at intensity `x` and in
// the colour of series `colour_of` (the measured point it belongs beside, filled), with no label of its own; the
// first adds a line under the title saying what hollow points are. The y value is in TFLOP/s. False, and nothing
// drawn, where some variant has no prediction or the predictions are for another GPU (a test binary run by hand, a
// dry run, a GPU data/gpus.json does not know).
//
//   p.series.push_back({"4 2D blocktile", {{x, tflops}}, "points pt 7 ps 2"});
//   rooflab::add_model_point(p, info.name, {"4 2D blocktile"}, x, p.series.size() - 1);
bool add_model_point(Plot& p, std::string_view gpu_name, std::initializer_list<std::string_view> variants, double x,
                     std::size_t colour_of);

}  // namespace rooflab
