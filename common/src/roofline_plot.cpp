#include <rooflab/testing/roofline_plot.hpp>

#include <utility>

namespace rooflab {

Plot roofline_plot(std::string title, double xmin, double xmax, std::string note, std::string ylabel,
                   std::string xlabel) {
  return Plot{.title = std::move(title),
              .xlabel = std::move(xlabel),
              .ylabel = std::move(ylabel),
              .logx = true,
              .logy = true,
              .xmin = xmin,
              .xmax = xmax,
              .note = std::move(note)};
}

void add_datasheet_roofs(Plot& p, const GpuSpec& g) {
  const double bandwidth_tb_s = g.bandwidth_gbps / 1e3;
  p.roofs.push_back({bandwidth_tb_s, g.fp32_tflops, "FP32 roof (datasheet)", false});
  if (g.fp16_tflops) p.roofs.push_back({bandwidth_tb_s, *g.fp16_tflops, "FP16 tensor roof (datasheet)", true});
}

}  // namespace rooflab
