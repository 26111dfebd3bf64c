// rooflab/detail/coverage.hpp: gcov's JSON to the gaps a student or CI is shown. The run of real gcov on a
// lab's coverage binary is tested by labNN.emu.coverage and the selftest cases with "coverage": "incomplete".
#include <rooflab/detail/coverage.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace {

namespace cov = rooflab::coverage;

// A .cu file on disk (gaps quote its lines) and gcov's JSON for it.
class CoverageJson : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("rooflab-coverage-test-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
    cu_ = (dir_ / "kernels.cu").string();
    std::ofstream(cu_) << "void f(int n) {\n"                 // 1
                          "  if (n % 4 == 0) {\n"             // 2
                          "    fast(n);\n"                    // 3
                          "    more(n);\n"                    // 4
                          "  }\n"                             // 5
                          "  for (int i = 0; i < n; ++i) {}\n"  // 6
                          "  static Handle handle;\n"          // 7
                          "  static int m = n > 0 ? n : 1;\n"  // 8
                          "}\n";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  static nlohmann::json line(int number, long long count, std::vector<std::pair<long long, bool>> branches = {}) {
    nlohmann::json b = nlohmann::json::array();
    for (const auto& [c, thrown] : branches) b.push_back({{"count", c}, {"throw", thrown}, {"fallthrough", false}});
    return {{"line_number", number}, {"count", count}, {"branches", b}};
  }

  nlohmann::json gcov(std::vector<nlohmann::json> lines) const {
    return {{"files", {{{"file", cu_}, {"lines", lines}},
                       {{"file", "/usr/include/c++/12/bits/vector.hpp"}, {"lines", {line(10, 0)}}}}}};
  }

  std::filesystem::path dir_;
  std::string cu_;
};

TEST_F(CoverageJson, NeverRunLinesAreOneStretchAndUntakenOutcomesAreCounted) {
  std::map<std::string, cov::FileCounts> files;
  cov::merge_gcov_json(gcov({line(1, 5), line(2, 5, {{0, false}, {5, false}, {0, true}}), line(3, 0), line(4, 0),
                             line(6, 5, {{20, false}, {5, false}})}),
                       files);
  ASSERT_EQ(files.size(), 1u) << "only .cu and .cuh files are the student's";
  const auto gaps = cov::gaps_of(files);
  ASSERT_EQ(gaps.size(), 2u);
  EXPECT_EQ(gaps[0].first, 2);
  EXPECT_EQ(gaps[0].untaken, 1) << "the exception edge is not one of the source's outcomes";
  EXPECT_EQ(gaps[0].outcomes, 2);
  EXPECT_EQ(gaps[1].first, 3);
  EXPECT_EQ(gaps[1].last, 4);
  EXPECT_EQ(gaps[1].untaken, 0);
  const std::string text = cov::describe(gaps);
  EXPECT_NE(text.find("kernels.cu:2: 1 of 2 branch outcomes never taken: `if (n % 4 == 0) {`"), std::string::npos)
      << text;
  EXPECT_NE(text.find("kernels.cu:3-4 never run: `fast(n);`"), std::string::npos) << text;
}

TEST_F(CoverageJson, AStaticLocalsGuardIsNotTheSourcesBranchButItsInitializersConditionalIs) {
  std::map<std::string, cov::FileCounts> files;
  cov::merge_gcov_json(gcov({line(7, 3, {{1, false}, {0, false}, {0, false}}), line(8, 3, {{3, false}, {0, false}})}),
                       files);
  const auto gaps = cov::gaps_of(files);
  ASSERT_EQ(gaps.size(), 1u) << cov::describe(gaps);
  EXPECT_EQ(gaps[0].first, 8);
}

TEST_F(CoverageJson, AnOutcomeTakenByAnyInstanceOrObjectIsCovered) {
  std::map<std::string, cov::FileCounts> files;
  // Two instances of a template on line 2: each takes one side; line 3 runs in the second object only.
  cov::merge_gcov_json(gcov({line(2, 3, {{3, false}, {0, false}}), line(2, 4, {{0, false}, {4, false}}), line(3, 0)}),
                       files);
  cov::merge_gcov_json(gcov({line(3, 1)}), files);
  EXPECT_TRUE(cov::gaps_of(files).empty()) << cov::describe(cov::gaps_of(files));
}

TEST_F(CoverageJson, TheAllowListExcusesByLineTextAndNamesStaleEntries) {
  std::map<std::string, cov::FileCounts> files;
  cov::merge_gcov_json(gcov({line(2, 5, {{0, false}, {5, false}}), line(3, 0)}), files);
  auto gaps = cov::gaps_of(files);
  const auto stale = cov::apply_allow_list(
      gaps, nlohmann::json::parse(R"j({"allow": [{"line": "fast(n)", "why": "no size reaches it"},
                                                 {"line": "gone(n)", "why": "an old line"}]})j"));
  ASSERT_EQ(gaps.size(), 2u);
  EXPECT_TRUE(gaps[0].allowed_by.empty());
  EXPECT_EQ(gaps[1].allowed_by, "no size reaches it");
  ASSERT_EQ(stale.size(), 1u);
  EXPECT_EQ(stale[0], "gone(n)");
  EXPECT_THROW(cov::apply_allow_list(gaps, nlohmann::json::parse(R"({"allow": [{"line": "f", "why": ""}]})")),
               std::invalid_argument);
  EXPECT_THROW(cov::apply_allow_list(gaps, nlohmann::json::parse(R"([])")), std::invalid_argument);
}

TEST_F(CoverageJson, GapsTravelAsJson) {
  std::map<std::string, cov::FileCounts> files;
  cov::merge_gcov_json(gcov({line(2, 5, {{0, false}, {5, false}}), line(3, 0), line(4, 0)}), files);
  const auto gaps = cov::gaps_of(files);
  const auto back = cov::from_json(cov::to_json(gaps));
  EXPECT_EQ(cov::describe(back), cov::describe(gaps));
}

TEST(Coverage, ABinaryWithoutCountersHasNothingToCollect) {
  EXPECT_FALSE(cov::instrumented());
  EXPECT_FALSE(cov::begin().has_value());
}

}  // namespace
