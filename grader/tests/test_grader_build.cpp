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

#include <chrono>
#include <cmath>
#include <cstdint>
#include <algorithm>
#include <filesystem>
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

// Assembling into a tree that holds a previous submission: a file with the same bytes keeps its time (the
// build does not compile it again), a changed one is rewritten, and what the new submission lacks goes.
TEST(Build, AssemblingAgainKeepsUnchangedFilesAndRemovesTheRest) {
  const fs::path tmp = fs::temp_directory_path() / ("rooflab-grader-reuse-" + std::to_string(getpid()));
  fs::remove_all(tmp);
  fs::create_directories(tmp / "labs" / "01-x");
  fs::create_directories(tmp / "a" / "01-x");
  fs::create_directories(tmp / "b" / "01-x");
  std::ofstream(tmp / "labs" / "01-x" / "answers.cpp") << "stub";
  std::ofstream(tmp / "a" / "01-x" / "kernels.cu") << "same";
  std::ofstream(tmp / "a" / "01-x" / "answers.cpp") << "a's answers";
  std::ofstream(tmp / "b" / "01-x" / "kernels.cu") << "same";
  Lab lab;
  lab.id = "01";
  lab.name = "x";
  lab.dir = tmp / "labs" / "01-x";
  lab.student_files = {"kernels.cu", "answers.cpp"};
  const fs::path out = tmp / "out";
  assemble_submission({&lab}, tmp / "a", out);
  fs::create_directories(out / "02-y");
  std::ofstream(out / "02-y" / "kernels.cu") << "another lab's file, from an earlier grade";
  std::ofstream(out / "01-x" / "notes.txt") << "not a student file";
  const auto old_time = fs::last_write_time(out / "01-x" / "kernels.cu") - std::chrono::hours(1);
  fs::last_write_time(out / "01-x" / "kernels.cu", old_time);
  fs::last_write_time(out / "01-x" / "answers.cpp", old_time);

  assemble_submission({&lab}, tmp / "b", out);
  EXPECT_EQ(read(out / "01-x" / "kernels.cu"), "same");
  EXPECT_EQ(fs::last_write_time(out / "01-x" / "kernels.cu"), old_time) << "the same bytes: not rewritten";
  EXPECT_EQ(read(out / "01-x" / "answers.cpp"), "stub") << "b has none: graded as the stub";
  EXPECT_NE(fs::last_write_time(out / "01-x" / "answers.cpp"), old_time) << "other bytes: rewritten";
  EXPECT_FALSE(fs::exists(out / "01-x" / "notes.txt"));
  EXPECT_FALSE(fs::exists(out / "02-y")) << "a lab this grade does not grade leaves the student folder";
  fs::remove_all(tmp);
}
