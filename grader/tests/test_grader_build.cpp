// Build orchestration: compile errors, submissions assembled from whitelisted files (build.cpp).
// The grader is tested too: declarations, test reports and their verification, process isolation, scoring rules, the
// Gradescope output, submission whitelisting, and the stub/solution mirror of every lab.
#include "build.hpp"
#include "class_grading.hpp"
#include "commands.hpp"
#include "gradescope.hpp"
#include "manifest.hpp"
#include "process.hpp"
#include "report.hpp"
#include "slurm.hpp"
#include "runner.hpp"
#include "symbols.hpp"
#include "tests/test_support.hpp"

#include <rooflab/testing/random.hpp>
#include <rooflab/detail/rubric.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <regex>
#include <set>

#include <unistd.h>

namespace fs = std::filesystem;
using namespace rooflab::grader;
using rooflab::grader::testing::frame;
using rooflab::grader::testing::read;
using rooflab::grader::testing::running;

TEST(Build, CompileErrorsKeepTheErrorLines) {
  const std::string out = "[1/3] Building\nfoo.cu(12): error: identifier \"x\" is undefined\n   x = 1;\n   ^\n"
                          "noise\nmore noise\n";
  const std::string e = compile_errors(out);
  EXPECT_NE(e.find("foo.cu(12): error"), std::string::npos);
  EXPECT_EQ(e.find("more noise"), std::string::npos);
  // The build tool's echo of the failing command (it contains -Werror) is not the error.
  const std::string nvcc = "FAILED: x.o\n/usr/local/cuda/bin/nvcc -Werror all-warnings -c k.cu -o x.o\n"
                           "k.cu(7): error: expected a \";\"\n  int x\n  ^\n";
  const std::string e2 = compile_errors(nvcc);
  EXPECT_EQ(e2.rfind("k.cu(7): error", 0), 0u) << e2;
  EXPECT_EQ(e2.find("nvcc -Werror"), std::string::npos) << e2;
}

TEST(Build, SubmissionTakesOnlyWhitelistedFiles) {
  const fs::path tmp = fs::temp_directory_path() / ("rooflab-grader-test-" + std::to_string(getpid()));
  fs::remove_all(tmp);
  fs::create_directories(tmp / "labs" / "01-x");
  fs::create_directories(tmp / "sub" / "01-x" / "tests");
  std::ofstream(tmp / "labs" / "01-x" / "answers.cpp") << "stub";
  std::ofstream(tmp / "sub" / "01-x" / "kernels.cu") << "mine";
  std::ofstream(tmp / "sub" / "01-x" / "tests" / "analytic.cpp") << "a student's own 'tests'";
  Lab lab;
  lab.id = "01";
  lab.name = "x";
  lab.dir = tmp / "labs" / "01-x";
  lab.student_files = {"kernels.cu", "answers.cpp"};
  const auto notes = assemble_submission({&lab}, tmp / "sub", tmp / "out").notes;
  EXPECT_EQ(read(tmp / "out" / "01-x" / "kernels.cu"), "mine");
  EXPECT_EQ(read(tmp / "out" / "01-x" / "answers.cpp"), "stub");
  EXPECT_FALSE(fs::exists(tmp / "out" / "01-x" / "tests"));
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("answers.cpp"), std::string::npos);
  fs::remove_all(tmp);
}
