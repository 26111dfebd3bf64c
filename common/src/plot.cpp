#include <rooflab/testing/plot.hpp>

#include <fmt/format.h>
#include <gnuplot-iostream.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string_view>
#include <utility>
#include <vector>

namespace rooflab {
namespace {

bool gnuplot_available() { return std::system("command -v gnuplot >/dev/null 2>&1") == 0; }

// A gnuplot double-quoted string: escapes what would end it; a newline becomes gnuplot's "\n". (Not named
// quoted: std::quoted, found by argument-dependent lookup, is the better match for a non-const string.)
std::string gp_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// Text shown as it is under the enhanced terminal, where _ ^ @ & ~ { } are markup ("strided_read" would
// print its r as a subscript). Each is escaped with a backslash, which gp_string() doubles.
std::string plain(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '_' || c == '^' || c == '@' || c == '&' || c == '~' || c == '{' || c == '}') out += '\\';
    out += c;
  }
  return out;
}

// Breaks a title into lines of at most `width` characters at spaces, so that it fits the picture.
std::string wrapped(const std::string& text, std::size_t width) {
  std::string out, line;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(start, end - start);
    if (!line.empty() && line.size() + 1 + word.size() > width) {
      out += line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
    start = end + 1;
  }
  return out + line;
}

// The middle of a segment as the axes see it (geometric on a log axis).
double middle(double a, double b, bool log) { return log ? std::sqrt(a * b) : (a + b) / 2; }

// Tick labels a reader takes in at a glance. gnuplot's default prints a log axis of seconds as 0.0000001;
// an axis in seconds gets SI prefixes (100 ns, 1 ms), one in bytes too (1 GB), and any other log axis that
// reaches past a thousandth or a million gets powers of ten (10^-4, 10^9). "" keeps gnuplot's default.
std::string tick_format(const std::string& label, bool log, double lo, double hi) {
  if (!log || !(lo > 0) || !(hi > 0)) return "";
  const auto ends_with = [&](std::string_view tail) {
    return label.size() >= tail.size() && label.compare(label.size() - tail.size(), tail.size(), tail) == 0;
  };
  if (ends_with("(s)")) return "%.0s %cs";
  if (label.rfind("bytes", 0) == 0 || ends_with("(bytes)")) return "%.0s %cB";
  if (lo < 1e-3 || hi > 1e6) return "10^{%T}";
  return "";
}

// The y extent of the series and horizontal lines (positive values only on a log axis).
std::pair<double, double> y_extent(const Plot& plot) {
  double lo = 1e300, hi = -1e300;
  const auto take = [&](double y) {
    if (std::isfinite(y) && (!plot.logy || y > 0)) lo = std::min(lo, y), hi = std::max(hi, y);
  };
  for (const auto& s : plot.series) {
    for (const auto& p : s.points) take(p.second);
  }
  for (const auto& h : plot.hlines) take(h.y);
  for (const auto& r : plot.roofs) take(r.peak);
  return {lo, hi};
}

// Where the label of a vertical line at x goes, as a span of the picture's height (graph coordinates 0 to 1):
// the longest stretch that no series or horizontal line crosses at x, so that the rotated text beside the
// line lies under no curve. The y range is estimated as gnuplot's autoscale draws it: whole decades on a log
// axis, the data plus the top offset on a linear one.
// The y range as gnuplot's autoscale draws it, near enough to place labels: whole decades on a log axis, the
// data plus the top offset on a linear one. {0, 0} when there is no data.
std::pair<double, double> y_drawn(const Plot& plot) {
  auto [lo, hi] = y_extent(plot);
  if (!(lo < hi)) return {0.0, 0.0};
  if (plot.logy) return {std::pow(10.0, std::floor(std::log10(lo))), std::pow(10.0, std::ceil(std::log10(hi)))};
  if (plot.y_from_zero) lo = std::min(lo, 0.0);
  return {lo, hi + 0.06 * (hi - lo)};
}

// A y value's height in the picture, 0 at the bottom axis and 1 at the top.
double y_to_graph(const Plot& plot, std::pair<double, double> range, double y) {
  const auto [lo, hi] = range;
  return plot.logy ? std::log(y / lo) / std::log(hi / lo) : (y - lo) / (hi - lo);
}

// Where a series' polyline crosses x, interpolated as the axes draw it (straight in log-log on log axes);
// the values of every segment that spans x.
std::vector<double> series_y_at(const Plot& plot, const Series& s, double x) {
  std::vector<double> ys;
  for (std::size_t k = 0; k + 1 < s.points.size(); ++k) {
    const auto [x0, y0] = s.points[k];
    const auto [x1, y1] = s.points[k + 1];
    if (!(std::min(x0, x1) <= x && x <= std::max(x0, x1)) || x0 == x1) continue;
    if (plot.logy && !(y0 > 0 && y1 > 0)) continue;
    const double t = plot.logx ? std::log(x / x0) / std::log(x1 / x0) : (x - x0) / (x1 - x0);
    ys.push_back(plot.logy ? y0 * std::pow(y1 / y0, t) : y0 + (y1 - y0) * t);
  }
  return ys;
}

std::pair<double, double> free_span_at(const Plot& plot, double x) {
  const auto range = y_drawn(plot);
  if (!(range.first < range.second)) return {0.04, 1.0};
  const auto to_graph = [&](double y) { return y_to_graph(plot, range, y); };
  std::vector<double> crossings = {0.0, 1.0};
  for (const auto& s : plot.series) {
    for (const double y : series_y_at(plot, s, x)) crossings.push_back(std::clamp(to_graph(y), 0.0, 1.0));
  }
  for (const auto& h : plot.hlines) crossings.push_back(std::clamp(to_graph(h.y), 0.0, 1.0));
  std::sort(crossings.begin(), crossings.end());
  std::pair<double, double> best{0.0, 0.0};
  for (std::size_t k = 0; k + 1 < crossings.size(); ++k) {
    if (crossings[k + 1] - crossings[k] > best.second - best.first) best = {crossings[k], crossings[k + 1]};
  }
  // Clear of the curve below (or of the axis) by a little, as the text starts there.
  return {best.first + (best.first > 0 ? 0.05 : 0.03), best.second};
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

std::string gnuplot_script(const Plot& plot, const std::filesystem::path& png) {
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
  double lo = xmin, hi = xmax;
  if (plot.xmin < plot.xmax) {
    lo = plot.xmin;
    hi = plot.xmax;
  } else if (xmin < xmax) {
    const double pad = plot.logx ? 1.3 : 0.05 * (xmax - xmin);
    lo = plot.logx ? xmin / pad : xmin - pad;
    hi = plot.logx ? xmax * pad : xmax + pad;
  }
  const bool ranged = lo < hi;
  const auto inside = [&](double x) { return !ranged || (x >= lo && x <= hi); };

  std::ostringstream gp;
  // Titles are wrapped to the picture's width (about 100 characters at this font), the dry-run banner on a
  // line of its own; the note goes under them in a smaller font.
  std::string title = plain(wrapped(plot.title, 100));
  if (!plot_banner().empty()) title = plain(plot_banner()) + "\n" + title;
  if (!plot.note.empty()) title += "\n{/*0.85 " + plain(wrapped(plot.note, 110)) + "}";
  gp << "set terminal pngcairo size 1100,760 enhanced font 'Sans,11'\n";
  gp << "set output " << gp_string(png.string()) << "\n";
  gp << "set title " << gp_string(title) << "\n";
  gp << "set xlabel " << gp_string(plain(plot.xlabel)) << "\nset ylabel " << gp_string(plain(plot.ylabel)) << "\n";
  gp << "set grid xtics ytics mxtics mytics lc rgb '#dddddd'\n";
  // The legend goes under the axes: outside the data, and it takes no width from them.
  gp << "set key outside below center horizontal box maxcols 3 width 1\n";
  // Room under the axes for the x label and the legend's rows: gnuplot fits as many columns (at most 3) as
  // the longest entry allows; 120 characters per row, each entry's sample line taking another 10, matches
  // what it chooses at this size and font (checked by eye on the labs' plots).
  std::vector<std::string> entries;
  for (const auto& s : plot.series) entries.push_back(s.title);
  for (const auto& h : plot.hlines) entries.push_back(h.label);
  for (const auto& r : plot.roofs) entries.push_back(r.label);
  std::size_t longest = 1;
  for (const auto& e : entries) longest = std::max(longest, plain(e).size());
  const std::size_t columns = std::clamp<std::size_t>(120 / (longest + 10), 1, 3);
  const std::size_t rows = (entries.size() + columns - 1) / columns;
  gp << "set bmargin " << 4 + rows + (rows + 1) / 2 << "\n";
  if (plot.logx) gp << "set logscale x\n";
  if (plot.logy) gp << "set logscale y\n";
  if (plot.y_from_zero && !plot.logy) gp << "set yrange [0:*]\n";
  if (!plot.logy) gp << "set offsets 0, 0, graph 0.06, 0\n";  // a ceiling at the top of the data stays off the frame
  gp << "set linetype 5 lc rgb '#c9a400'\n";  // gnuplot's default yellow is unreadable as label text
  const std::string xformat = !plot.xformat.empty() ? plot.xformat : tick_format(plot.xlabel, plot.logx, xmin, xmax);
  if (!xformat.empty()) gp << "set format x " << gp_string(xformat) << "\n";
  const auto [ymin, ymax] = y_extent(plot);
  if (const std::string yformat = tick_format(plot.ylabel, plot.logy, ymin, ymax); !yformat.empty())
    gp << "set format y " << gp_string(yformat) << "\n";
  if (ranged) gp << fmt::format("set xrange [{:g}:{:g}]\n", lo, hi);
  int label = 1;
  for (const auto& [x, text] : plot.vlines) {
    if (!inside(x)) continue;  // a mark off the picture would print its label over the axis
    gp << fmt::format("set arrow from {:g}, graph 0 to {:g}, graph 1 nohead dt 3 lc rgb '#888888'\n", x, x);
    gp << fmt::format("set label {} {} at {:g}, graph {:.3f} rotate by 90 offset -0.8,0 font ',9'\n", label++,
                      gp_string(plain(text)), x, free_span_at(plot, x).first);
  }
  // Labels are placed where they cover no other label, estimated in the picture's fractions: a character
  // at these fonts is about 1/130 of the width and a line about 1/40 of the height.
  const auto yrange = y_drawn(plot);
  const auto x_to_graph = [&](double x) { return plot.logx ? std::log(x / lo) / std::log(hi / lo) : (x - lo) / (hi - lo); };
  struct Box { double x0, x1, y; };
  std::vector<Box> placed;
  const auto known = [&](double y) { return ranged && yrange.first < yrange.second && (!plot.logy || y > 0); };
  // A label's box beside (x, y): to the right of the point (dx > 0) or ending at it, dy above or below.
  const auto box = [&](double x, double y, std::size_t chars, bool right, double dy) {
    const double gx = x_to_graph(x), width = 0.015 + static_cast<double>(chars) / 130.0;
    const double gy = y_to_graph(plot, yrange, y) + dy;
    return right ? Box{gx, gx + width, gy} : Box{gx - width, gx, gy};
  };
  // A box clashes with a label already placed, or with a drawn line that passes through it (checked at its
  // ends and middle: the lines here are straight or gently bent at that scale).
  const auto x_from_graph = [&](double g) { return plot.logx ? lo * std::pow(hi / lo, g) : lo + (hi - lo) * g; };
  const auto clashes = [&](const Box& b) {
    const bool on_label = std::any_of(placed.begin(), placed.end(), [&](const Box& o) {
      return b.x0 < o.x1 && o.x0 < b.x1 && std::fabs(b.y - o.y) < 1.0 / 40;
    });
    if (on_label) return true;
    for (const auto& s : plot.series) {
      if (s.style.rfind("points", 0) == 0) continue;
      std::vector<double> rel;  // the line's height relative to the box's middle, at three places
      for (const double g : {b.x0, (b.x0 + b.x1) / 2, b.x1}) {
        for (const double y : series_y_at(plot, s, x_from_graph(g))) rel.push_back(y_to_graph(plot, yrange, y) - b.y);
      }
      const bool through = std::any_of(rel.begin(), rel.end(), [](double d) { return std::fabs(d) < 1.0 / 60; }) ||
                           (std::any_of(rel.begin(), rel.end(), [](double d) { return d > 0; }) &&
                            std::any_of(rel.begin(), rel.end(), [](double d) { return d < 0; }));
      if (through) return true;
    }
    return false;
  };
  // Every roof's ridge point: a dot where the slope meets the flat part, in the roof's colour, with its
  // intensity written up and to the left of it, above the slope.
  // (gnuplot numbers the plot's elements in order: series, horizontal lines, roofs.)
  for (std::size_t i = 0; i < plot.roofs.size(); ++i) {
    const Roof& r = plot.roofs[i];
    if (!(r.bandwidth > 0) || !(r.peak > 0)) continue;
    const double ridge = r.peak / r.bandwidth;
    if (!inside(ridge)) continue;
    const std::size_t lt = plot.series.size() + plot.hlines.size() + i + 1;
    const std::string text = fmt::format("ridge {:.3g} FLOP/byte", ridge);
    // A ridge at the top of the picture (a peak just under a decade, the H100's 989 FP16 TFLOP/s) has no room
    // above it: its label goes under the flat roof, to the right, clear of the title.
    const bool at_top = known(r.peak) && y_to_graph(plot, yrange, r.peak) > 0.93;
    if (known(r.peak)) placed.push_back(box(ridge, r.peak, text.size(), at_top, at_top ? -0.03 : 0.03));
    gp << fmt::format("set label {} {} at {:g},{:g} {} font ',9' tc lt {} point lt {} pt 7 ps 1.3\n", label++,
                      gp_string(text), ridge, r.peak, at_top ? "left offset 0.6,-0.9" : "right offset -0.6,0.9", lt, lt);
  }
  // Points labelled with what they are: to the right of the point and a little below (under the roof the
  // point sits on); where that would cover a label already placed (points close together, a ridge's label),
  // the first free place of: above right, above left (on a rising curve, its other side), further below.
  struct Place { bool right; double dy; const char* gnuplot; };
  static constexpr Place kPlaces[] = {{true, -0.025, "left offset 1.4,-0.7"},
                                      {true, 0.03, "left offset 1.4,0.9"},
                                      {false, 0.03, "right offset -1.4,0.9"},
                                      {true, -0.06, "left offset 1.4,-2.0"}};
  for (const auto& s : plot.series) {
    if (s.style.rfind("points", 0) != 0 && s.labels.empty()) continue;
    for (std::size_t k = 0; k < s.points.size(); ++k) {
      const std::string text = k < s.labels.size() ? s.labels[k] : s.title;
      const auto [x, y] = s.points[k];
      if (text.empty() || !inside(x)) continue;
      const Place* at = &kPlaces[0];
      if (known(y)) {
        const auto free = std::find_if(std::begin(kPlaces), std::end(kPlaces), [&](const Place& p) {
          return !clashes(box(x, y, plain(text).size(), p.right, p.dy));
        });
        if (free != std::end(kPlaces)) at = free;
        placed.push_back(box(x, y, plain(text).size(), at->right, at->dy));
      }
      gp << fmt::format("set label {} {} at {:g},{:g} {} font ',10'\n", label++, gp_string(plain(text)), x, y,
                        at->gnuplot);
    }
  }
  // An arrow runs over the middle half of the way from one point to the other, clear of both markers.
  const auto along = [](double a, double b, double t, bool log) {
    return log ? a * std::pow(b / a, t) : a + (b - a) * t;
  };
  for (const auto& a : plot.arrows) {
    gp << fmt::format("set arrow from {:g},{:g} to {:g},{:g} head filled size screen 0.012,20 lw 1.5 lc rgb '#444444'\n",
                      along(a.x1, a.x2, 0.25, plot.logx), along(a.y1, a.y2, 0.25, plot.logy),
                      along(a.x1, a.x2, 0.75, plot.logx), along(a.y1, a.y2, 0.75, plot.logy));
    gp << fmt::format("set label {} {} at {:g},{:g} right offset -1.2,0.6 font ',10' tc rgb '#222222'\n", label++,
                      gp_string(plain(a.label)), middle(a.x1, a.x2, plot.logx), middle(a.y1, a.y2, plot.logy));
  }
  std::vector<std::string> parts;
  for (const auto& s : plot.series) {
    parts.push_back(fmt::format("'-' with {} lw 2 title {}", s.style, gp_string(plain(s.title))));
  }
  for (const auto& h : plot.hlines) {
    parts.push_back(fmt::format("{:g} with lines dt 2 lw 2 title {}", h.y, gp_string(plain(h.label))));
  }
  for (const auto& r : plot.roofs) {
    parts.push_back(fmt::format("(x * {:g} < {:g} ? x * {:g} : {:g}) with lines lw 2 {} title {}", r.bandwidth, r.peak,
                                r.bandwidth, r.peak, r.dashed ? "dt 2" : "dt 1", gp_string(plain(r.label))));
  }
  if (parts.empty()) return "";
  gp << "plot ";
  for (std::size_t i = 0; i < parts.size(); ++i) gp << (i ? ", " : "") << parts[i];
  gp << "\n";
  return gp.str();
}

PlotFiles write_plot(const Plot& plot, const std::filesystem::path& stem) {
  PlotFiles files;
  std::filesystem::create_directories(stem.parent_path());
  files.data = stem;
  files.data += ".dat";
  {
    std::ofstream out(files.data);
    const std::string title = plot_banner().empty() ? plot.title : plot_banner() + ": " + plot.title;
    out << "# " << title << "\n# x: " << plot.xlabel << "\n# y: " << plot.ylabel << "\n";
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
  const std::string script = gnuplot_script(plot, files.png);
  if (script.empty()) return files;
  Gnuplot gp("gnuplot");
  gp << script;
  for (const auto& s : plot.series) gp.send1d(s.points);  // the '-' series' data, in order
  gp << "unset output\n";
  return files;
}

}  // namespace rooflab
