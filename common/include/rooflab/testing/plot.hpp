// Plots for reports: each plot is written as a data file (plain columns, for students who want to replot)
// and a PNG drawn by gnuplot through gnuplot-iostream. Without gnuplot the data file is still written and
// the PNG is reported as skipped.
//
//   rooflab::Plot p{.title = "Triad bandwidth vs array size", .xlabel = "bytes per array", .ylabel = "GB/s",
//                   .logx = true};
//   p.series.push_back({"triad", points});
//   p.hlines.push_back({ceiling_gbps, "copy ceiling"});
//   auto files = rooflab::write_plot(p, rooflab::report_dir() / "lab01-bandwidth-vs-size");
//
// A lab's tests call rooflab::grading::save_plot(p, "lab01-bandwidth-vs-size") instead (rooflab/testing/grading.hpp):
// the same files, the name checked against the lab, the files' existence asserted and their path noted.
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace rooflab {

struct Series {
  std::string title;
  std::vector<std::pair<double, double>> points{};
  std::string style = "linespoints";  // gnuplot style: lines, points, linespoints
  // Text beside each point. A "points" series without labels has each point labelled with its title (a
  // kernel on a roofline is read from the picture, not looked up in the legend).
  std::vector<std::string> labels{};
};

// An arrow from one point to another with a text beside its middle (the fused chain's time against the
// unfused one's).
struct Arrow {
  double x1, y1, x2, y2;
  std::string label;
};

struct HLine {
  double y;
  std::string label;
};

// A line y = slope * x up to x_end, then flat: one roof of a roofline (slope = bandwidth, flat = peak).
// Its ridge point (peak / bandwidth, where the two parts meet) is marked and labelled on the plot.
struct Roof {
  double bandwidth;  // y per x on the slanted part
  double peak;       // y on the flat part
  std::string label;
  bool dashed = false;
};

struct Plot {
  std::string title;
  std::string xlabel;
  std::string ylabel;
  bool logx = false;
  bool logy = false;
  bool y_from_zero = false;   // linear y axis starting at 0 (bandwidth against a ceiling)
  std::string xformat{};      // gnuplot format for x tick labels, e.g. "%.0s%cB" for 1MB, 1GB
  double xmin = 0;            // x range; 0, 0: from the data
  double xmax = 0;
  std::vector<Series> series{};
  std::vector<HLine> hlines{};
  std::vector<Roof> roofs{};
  std::vector<std::pair<double, std::string>> vlines{};  // marked x positions (drawn where inside the x range)
  std::string note{};  // a line under the title (e.g. "datasheet roofs only: no GPU measured")
  std::vector<Arrow> arrows{};
};

struct PlotFiles {
  std::filesystem::path data;
  std::filesystem::path png;  // empty if gnuplot was not available
  std::string message;        // why the PNG is missing, if it is
};

PlotFiles write_plot(const Plot& plot, const std::filesystem::path& stem);

// The gnuplot commands write_plot sends for `plot` (before the series' inline data), for tests: the title
// wrapped with the banner on a line of its own, every label shown as written (no enhanced-text markup), the
// legend under the axes, each roof's ridge marked and labelled, "points" series labelled point by point.
std::string gnuplot_script(const Plot& plot, const std::filesystem::path& png);

// A banner put before every plot's title from now on (the dry-run harness sets "DRY RUN ...", so that no
// plot of CPU timings can be taken for a GPU's).
void set_plot_banner(std::string banner);

// Where reports and plots go: ROOFLAB_REPORT_DIR if set, else ./rooflab-report.
std::filesystem::path report_dir();

}  // namespace rooflab
