#include <rooflab/plot.hpp>

#include <fmt/format.h>
#include <gnuplot-iostream.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>

namespace rooflab {
namespace {

bool gnuplot_available() { return std::system("command -v gnuplot >/dev/null 2>&1") == 0; }

// gnuplot strings are double-quoted: escape what would end them.
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

std::filesystem::path report_dir() {
  if (const char* d = std::getenv("ROOFLAB_REPORT_DIR"); d != nullptr && *d != '\0') return d;
  return std::filesystem::current_path() / "rooflab-report";
}

namespace {
std::string& plot_banner() {
  static std::string banner;
  return banner;
}
}  // namespace

void set_plot_banner(std::string banner) { plot_banner() = std::move(banner); }

PlotFiles write_plot(const Plot& unlabelled, const std::filesystem::path& stem) {
  Plot plot = unlabelled;
  if (!plot_banner().empty()) plot.title = plot_banner() + ": " + plot.title;
  PlotFiles files;
  std::filesystem::create_directories(stem.parent_path());
  files.data = stem;
  files.data += ".dat";
  {
    std::ofstream out(files.data);
    out << "# " << plot.title << "\n# x: " << plot.xlabel << "\n# y: " << plot.ylabel << "\n";
    for (const auto& s : plot.series) {
      out << "\n\n# series: " << s.title << "\n";
      for (const auto& [x, y] : s.points) out << fmt::format("{:.6g} {:.6g}\n", x, y);
    }
  }
  if (!gnuplot_available()) {
    files.message = "gnuplot not found: wrote the data file only";
    return files;
  }
  files.png = stem;
  files.png += ".png";

  // The x range covers every point; roofs are drawn over it.
  double xmin = 1e300, xmax = -1e300;
  for (const auto& s : plot.series) {
    for (const auto& p : s.points) {
      xmin = std::min(xmin, p.first);
      xmax = std::max(xmax, p.first);
    }
  }
  for (const auto& [x, label] : plot.vlines) {
    xmin = std::min(xmin, x);
    xmax = std::max(xmax, x);
  }
  if (plot.xmin < plot.xmax) {
    xmin = plot.xmin;
    xmax = plot.xmax;
  }
  Gnuplot gp("gnuplot");
  gp << "set terminal pngcairo size 1100,700 enhanced font 'Sans,11'\n";
  gp << "set output " << quoted(files.png.string()) << "\n";
  gp << "set title " << quoted(plot.note.empty() ? plot.title : plot.title + "\\n{/*0.8 " + plot.note + "}") << "\n";
  gp << "set xlabel " << quoted(plot.xlabel) << "\nset ylabel " << quoted(plot.ylabel) << "\n";
  gp << "set grid xtics ytics mxtics mytics lc rgb '#dddddd'\n";
  gp << "set key outside right top box\n";
  if (plot.logx) gp << "set logscale x\n";
  if (plot.logy) gp << "set logscale y\n";
  if (plot.y_from_zero && !plot.logy) gp << "set yrange [0:*]\n";
  if (!plot.xformat.empty()) gp << "set format x " << quoted(plot.xformat) << "\n";
  if (plot.xmin < plot.xmax) {
    gp << fmt::format("set xrange [{:g}:{:g}]\n", plot.xmin, plot.xmax);
  } else if (xmin < xmax) {
    const double pad = plot.logx ? 1.3 : 0.05 * (xmax - xmin);
    gp << fmt::format("set xrange [{:g}:{:g}]\n", plot.logx ? xmin / pad : xmin - pad,
                      plot.logx ? xmax * pad : xmax + pad);
  }
  int label = 1;
  for (const auto& [x, text] : plot.vlines) {
    gp << fmt::format("set arrow from {:g}, graph 0 to {:g}, graph 1 nohead dt 3 lc rgb '#888888'\n", x, x);
    gp << fmt::format("set label {} {} at {:g}, graph 0.04 rotate by 90 offset -0.8,0 font ',9'\n", label++,
                      quoted(text), x);
  }
  std::vector<std::string> parts;
  for (const auto& s : plot.series) parts.push_back(fmt::format("'-' with {} lw 2 title {}", s.style, quoted(s.title)));
  for (const auto& h : plot.hlines) parts.push_back(fmt::format("{:g} with lines dt 2 lw 2 title {}", h.y, quoted(h.label)));
  for (const auto& r : plot.roofs) {
    parts.push_back(fmt::format("(x * {:g} < {:g} ? x * {:g} : {:g}) with lines lw 2 {} title {}", r.bandwidth, r.peak,
                                r.bandwidth, r.peak, r.dashed ? "dt 2" : "dt 1", quoted(r.label)));
  }
  if (parts.empty()) return files;
  gp << "plot ";
  for (std::size_t i = 0; i < parts.size(); ++i) gp << (i ? ", " : "") << parts[i];
  gp << "\n";
  for (const auto& s : plot.series) gp.send1d(s.points);
  gp << "unset output\n";
  return files;
}

}  // namespace rooflab
