// Plots: the data file is always written; with gnuplot (installed by the launcher) the PNG too.
#include <rooflab/testing/plot.hpp>
#include <rooflab/testing/roofline_plot.hpp>

#include <gtest/gtest.h>

#include <fstream>
#include <unistd.h>

TEST(Plot, WritesDataAndPng) {
  const auto dir = std::filesystem::temp_directory_path() / ("rooflab-plot-" + std::to_string(getpid()));
  rooflab::Plot p{.title = "Triad bandwidth vs array size", .xlabel = "bytes per array", .ylabel = "GB/s",
                  .logx = true};
  rooflab::Series s{"triad \"quoted\"", {}};
  for (double x = 1 << 20; x <= 1 << 30; x *= 2) s.points.emplace_back(x, x < 4e7 ? 3000.0 : 1800.0);
  p.series.push_back(s);
  p.hlines.push_back({1900.0, "measured copy ceiling"});
  p.roofs.push_back({2039.0, 19500.0, "FP32 roof", false});
  p.vlines.emplace_back(4e7, "L2 size");
  const auto files = rooflab::write_plot(p, dir / "sub" / "plot");
  ASSERT_TRUE(std::filesystem::exists(files.data));
  std::ifstream in(files.data);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("# series: triad"), std::string::npos);
  EXPECT_NE(text.find("1.07374e+09 1800"), std::string::npos) << text;
  if (files.png.empty()) {
    GTEST_SKIP() << files.message;
  }
  ASSERT_TRUE(std::filesystem::exists(files.png)) << files.png;
  char magic[8] = {};
  std::ifstream(files.png, std::ios::binary).read(magic, 8);
  EXPECT_EQ(std::string(magic + 1, 3), "PNG");
  std::filesystem::remove_all(dir);
}

// What the picture says, from the commands gnuplot gets: the title fits (a real line break, no literal `n`,
// long titles wrapped), names print as written, the legend is outside the data, every ridge is marked and
// labelled, every kernel point named, marks off the picture dropped.
TEST(Plot, ScriptLabelsRidgesPointsAndTitles) {
  rooflab::Plot p{.title = "Elementwise kernels on the NVIDIA A100 80GB SXM4 roofline, with the unfused and fused "
                           "chains of bias add, GELU and residual add",
                  .xlabel = "arithmetic intensity (FLOP/byte)",
                  .ylabel = "TFLOP/s",
                  .logx = true,
                  .logy = true,
                  .xmin = 0.05,
                  .xmax = 2000,
                  .note = "datasheet roofs and predicted points"};
  p.roofs.push_back({2.039, 19.5, "FP32 roof", false});
  p.roofs.push_back({2.039, 312, "FP16 tensor roof", true});
  p.series.push_back({"unfused_chain", {{0.39, 0.8}}, "points pt 7 ps 2"});
  p.series.push_back({"fused chain", {{0.92, 1.87}}, "points pt 9 ps 2"});
  p.arrows.push_back({0.39, 0.8, 0.92, 1.87, "2.33x less time"});
  p.vlines.emplace_back(0.001, "off the picture");
  const std::string gp = rooflab::gnuplot_script(p, "/tmp/x.png");
  const auto title = gp.substr(gp.find("set title"), gp.find('\n', gp.find("set title")) - gp.find("set title"));
  EXPECT_NE(title.find("chains of bias\\nadd, GELU"), std::string::npos) << title;  // wrapped at 100
  EXPECT_NE(title.find("\\n{/*0.85 datasheet roofs"), std::string::npos) << title;    // the note, smaller
  EXPECT_EQ(title.find("\\\\n"), std::string::npos) << title;                           // no literal backslash-n
  EXPECT_NE(gp.find("set key outside below"), std::string::npos);
  EXPECT_NE(gp.find("\"ridge 9.56 FLOP/byte\" at 9.56351,19.5"), std::string::npos) << gp;
  EXPECT_NE(gp.find("\"ridge 153 FLOP/byte\" at 153.016,312 right offset -0.6,0.9"), std::string::npos) << gp;
  // A peak just under the top decade (the H100's 989 TFLOP/s FP16) has its ridge's label under the roof instead.
  p.roofs.push_back({3.35, 989, "H100 FP16 tensor roof", true});
  const std::string top = rooflab::gnuplot_script(p, "/tmp/x.png");
  EXPECT_NE(top.find("\"ridge 295 FLOP/byte\" at 295.224,989 left offset 0.6,-0.9"), std::string::npos) << top;
  EXPECT_NE(top.find("\"ridge 153 FLOP/byte\" at 153.016,312 right offset -0.6,0.9"), std::string::npos) << top;
  EXPECT_NE(gp.find("\"unfused\\\\_chain\" at 0.39,0.8"), std::string::npos) << gp;  // printed as written
  EXPECT_NE(gp.find("\"fused chain\" at 0.92,1.87"), std::string::npos) << gp;
  EXPECT_NE(gp.find("set arrow from 0.483332,0.989186 to 0.742347,1.51235"), std::string::npos) << gp;
  EXPECT_NE(gp.find("\"2.33x less time\""), std::string::npos) << gp;
  EXPECT_EQ(gp.find("off the picture"), std::string::npos) << gp;
}

// Log axes read at a glance: seconds and bytes with SI prefixes, other axes past 10^-3 or 10^6 in powers of
// ten, ordinary ranges as gnuplot prints them; a vertical line's label starts above the curves it crosses.
TEST(Plot, LogAxesAndLineLabelsReadAtAGlance) {
  rooflab::Plot p{.title = "t", .xlabel = "sequence length L", .ylabel = "time floor (s)", .logx = true, .logy = true};
  p.series.push_back({"rising", {{256, 3e-7}, {262144, 2.5}}, "lines"});
  p.vlines.emplace_back(1000, "here");
  std::string gp = rooflab::gnuplot_script(p, "/tmp/x.png");
  EXPECT_NE(gp.find("set format y \"%.0s %cs\""), std::string::npos) << gp;
  EXPECT_EQ(gp.find("set format x"), std::string::npos) << gp;
  // y range 1e-7 .. 10 (whole decades); the curve crosses x = 1000 at about 1.4e-6, graph 0.10: the label
  // starts above it.
  const auto at = gp.find("\"here\" at 1000, graph ");
  ASSERT_NE(at, std::string::npos) << gp;
  EXPECT_GT(std::stod(gp.substr(at + 22)), 0.12) << gp;
  p.ylabel = "bytes beyond Q, K, V and O";
  EXPECT_NE(rooflab::gnuplot_script(p, "/tmp/x.png").find("set format y \"%.0s %cB\""), std::string::npos);
  p.ylabel = "ratio";
  EXPECT_NE(rooflab::gnuplot_script(p, "/tmp/x.png").find("set format y \"10^{%T}\""), std::string::npos);
  p.series[0].points = {{256, 3}, {262144, 2500}};
  EXPECT_EQ(rooflab::gnuplot_script(p, "/tmp/x.png").find("set format y"), std::string::npos);
}

// Labels of points close together do not cover each other, nor does a line cross them: the second goes above
// its point, to the left (to its right the rising roof would cross the text).
TEST(Plot, LabelsOfNearbyPointsDoNotOverlap) {
  rooflab::Plot p{.title = "t", .xlabel = "bits per weight", .ylabel = "time (us)", .y_from_zero = true};
  p.series.push_back({"roof", {{0, 0}, {17, 42.5}}, "lines"});
  p.series.push_back({"int4, group 128", {{4.125, 10.3}}, "points"});
  p.series.push_back({"Q4_0 (int4, group 32)", {{4.5, 11.25}}, "points"});
  p.series.push_back({"FP16", {{16, 40}}, "points"});
  const std::string gp = rooflab::gnuplot_script(p, "/tmp/x.png");
  EXPECT_NE(gp.find("\"int4, group 128\" at 4.125,10.3 left offset 1.4,-0.7"), std::string::npos) << gp;
  EXPECT_NE(gp.find("at 4.5,11.25 right offset -1.4,0.9"), std::string::npos) << gp;  // above right, the roof
  EXPECT_NE(gp.find("\"FP16\" at 16,40 left offset 1.4,-0.7"), std::string::npos) << gp;
}

// The model beside a measurement (roofline_plot.hpp, add_model_point): with the grader's predictions named in
// ROOFLAB_MODEL_PREDICTIONS, a kernel's predicted point goes in hollow, in its measured point's colour, unlabelled,
// at its declared FLOPs over its predicted time (several registry ids: the sum of each); the plot says once what
// hollow points are. Without the file, or for a registry id it does not predict, nothing is drawn.
TEST(Plot, TheModelsPointIsHollowBesideTheMeasuredOne) {
  const auto file = std::filesystem::temp_directory_path() / ("rooflab-model-" + std::to_string(getpid()) + ".json");
  std::ofstream(file) << R"({"gpu": "h100-sxm", "gpu_name": "NVIDIA H100 SXM5", "kernels": [
    {"kernel": "lab04::a", "variant": "1 naive", "flops": 2e12, "prediction": {"time_s": 0.5}},
    {"kernel": "lab04::b", "variant": "2 tiled", "flops": 1e12, "prediction": {"time_s": 0.25}},
    {"kernel": "lab04::c", "variant": "3 none", "flops": 1e12, "prediction": null}]})";
  auto p = rooflab::roofline_plot("ladder", 0.1, 100);
  p.series.push_back({"1 naive", {{4, 3.5}}, "points pt 7 ps 2"});
  ::unsetenv("ROOFLAB_MODEL_PREDICTIONS");
  EXPECT_FALSE(rooflab::add_model_point(p, "NVIDIA H100 80GB HBM3", {"1 naive"}, 4, 0)) << "no predictions handed over";
  ::setenv("ROOFLAB_MODEL_PREDICTIONS", file.c_str(), 1);
  const char* h100 = "NVIDIA H100 80GB HBM3";
  EXPECT_FALSE(rooflab::add_model_point(p, h100, {"3 none"}, 4, 0)) << "a kernel without a prediction";
  EXPECT_FALSE(rooflab::add_model_point(p, h100, {"1 naive", "9 unknown"}, 4, 0)) << "every id must be predicted";
  EXPECT_FALSE(rooflab::add_model_point(p, "NVIDIA A10", {"1 naive"}, 4, 0)) << "predicted for another GPU";
  ASSERT_EQ(p.series.size(), 1u);
  ASSERT_TRUE(rooflab::add_model_point(p, "NVIDIA H100 80GB HBM3", {"1 naive"}, 4, 0));
  ASSERT_EQ(p.series.size(), 2u);
  EXPECT_EQ(p.series[1].points[0], (std::pair<double, double>{4, 4}));  // 2e12 FLOP in 0.5 s: 4 TFLOP/s
  EXPECT_NE(p.series[1].style.find("pt 6"), std::string::npos) << "hollow";
  EXPECT_NE(p.series[1].style.find("lc 1"), std::string::npos) << "the colour of series 0";
  EXPECT_NE(p.note.find("hollow: the performance model's prediction on the NVIDIA H100 SXM5"), std::string::npos);
  ASSERT_TRUE(rooflab::add_model_point(p, "NVIDIA H100 80GB HBM3", {"1 naive", "2 tiled"}, 8, 1));
  EXPECT_DOUBLE_EQ(p.series[2].points[0].second, 4.0);  // 3e12 FLOP in 0.75 s
  EXPECT_EQ(p.note.find("hollow", p.note.find("hollow") + 1), std::string::npos) << "said once: " << p.note;
  const std::string gp = rooflab::gnuplot_script(p, "/tmp/x.png");
  EXPECT_NE(gp.find("with points pt 6 ps 2.8 lc 1 lw 2 title \"\""), std::string::npos) << gp;
  EXPECT_EQ(gp.find("\"\" at 4,4"), std::string::npos) << "no label of its own: " << gp;
  ::unsetenv("ROOFLAB_MODEL_PREDICTIONS");
  std::filesystem::remove(file);
}
