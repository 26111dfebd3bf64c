// Plots: the data file is always written; with gnuplot (installed by the launcher) the PNG too.
#include <rooflab/plot.hpp>

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
