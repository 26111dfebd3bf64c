// `grade` configures its build tree only when what a configure reads has changed (the stamp), and says what a
// first build costs on this machine's cores.
#include "build.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <vector>
#include <cstdlib>
#include <unistd.h>

namespace rooflab::grader {
namespace {

namespace fs = std::filesystem;

// A build tree that looks configured (the files configure_needed looks for), in a folder of its own.
struct FakeTree {
  fs::path root = fs::temp_directory_path() / ("rooflab-stamp-" + std::to_string(getpid()));
  BuildTree tree{"/src", root / "build", "default", {{"ROOFLAB_STUDENT_DIR", "/labs"}, {"ROOFLAB_HIDDEN_TESTS", ""}}};
  FakeTree() {
    fs::remove_all(root);
    fs::create_directories(tree.build_dir);
    for (const char* f : {"CMakeCache.txt", "build.ninja"}) std::ofstream(tree.build_dir / f) << "\n";
  }
  ~FakeTree() { fs::remove_all(root); }
};

TEST(ConfigureStamp, AGradeWithTheSameInputsDoesNotConfigureAgain) {
  FakeTree t;
  EXPECT_TRUE(configure_needed(t.tree).has_value()) << "never configured by the grader";
  write_configure_stamp(t.tree);
  EXPECT_FALSE(configure_needed(t.tree).has_value()) << "the same inputs: nothing to configure";
}

TEST(ConfigureStamp, ChangedOptionsConfigureAgain) {
  FakeTree t;
  write_configure_stamp(t.tree);
  BuildTree other = t.tree;
  other.defs["ROOFLAB_STUDENT_DIR"] = "/elsewhere";
  EXPECT_TRUE(configure_needed(other).has_value()) << "another student folder";
  other = t.tree;
  other.defs["CMAKE_CUDA_ARCHITECTURES"] = "90";
  EXPECT_TRUE(configure_needed(other).has_value()) << "an option added";
  other = t.tree;
  other.preset = "solutions";
  EXPECT_TRUE(configure_needed(other).has_value()) << "another preset";
  fs::remove(t.tree.build_dir / "build.ninja");
  EXPECT_TRUE(configure_needed(t.tree).has_value()) << "a tree whose build files are gone";
}

TEST(ConfigureStamp, AHiddenTestAddedConfiguresAgain) {
  FakeTree t;
  const fs::path hidden = t.root / "hidden";
  fs::create_directories(hidden / "01");
  std::ofstream(hidden / "01" / "rubric.json") << "{}\n";
  t.tree.defs["ROOFLAB_HIDDEN_TESTS"] = hidden.string();
  write_configure_stamp(t.tree);
  EXPECT_FALSE(configure_needed(t.tree).has_value());
  std::ofstream(hidden / "01" / "emu_extra.cpp") << "// a hidden test\n";  // globbed at configure time
  EXPECT_TRUE(configure_needed(t.tree).has_value());
}

// A configure builds a lab whose files the student folder lacks from its fallback (the stub): a grade of one
// lab's submission, then one of another lab's in the same tree, must configure again (CI graded Lab 02, then
// Lab 01's solution as the stub).
TEST(ConfigureStamp, StudentFilesAddedOrRemovedConfigureAgain) {
  FakeTree t;
  const fs::path students = t.root / "student-files";
  fs::create_directories(students / "02-ridge-point");
  std::ofstream(students / "02-ridge-point" / "kernels.cu") << "// lab 02\n";
  t.tree.defs["ROOFLAB_STUDENT_DIR"] = students.string();
  write_configure_stamp(t.tree);
  EXPECT_FALSE(configure_needed(t.tree).has_value());
  std::ofstream(students / "02-ridge-point" / "kernels.cu") << "// edited: the build sees it, no configure\n";
  EXPECT_FALSE(configure_needed(t.tree).has_value());
  fs::remove_all(students / "02-ridge-point");
  fs::create_directories(students / "01-memory-bandwidth");
  std::ofstream(students / "01-memory-bandwidth" / "kernels.cu") << "// lab 01\n";
  EXPECT_TRUE(configure_needed(t.tree).has_value()) << "another lab's files";
}

// ROOFLAB_HARNESS (CI's end-to-end trees import a full build's harness): a tree switched either way configures
// again, and a value that names no build is refused rather than compiling against nothing.
TEST(SharedHarness, NamesABuildOrIsRefusedAndSwitchingConfiguresAgain) {
  FakeTree t;
  unsetenv("ROOFLAB_HARNESS");
  EXPECT_FALSE(shared_harness().has_value());
  EXPECT_TRUE(harness_dirs().empty()) << "no harness imported: the build sandbox reads nothing more";
  write_configure_stamp(t.tree);

  const fs::path build = t.root / "full-build";
  setenv("ROOFLAB_HARNESS", build.c_str(), 1);
  EXPECT_THROW(shared_harness(), std::invalid_argument) << "no harness/targets.cmake there yet";
  fs::create_directories(build / "harness");
  std::ofstream(build / "harness" / "targets.cmake") << "# exported targets\n";
  ASSERT_TRUE(shared_harness().has_value());
  EXPECT_EQ(*shared_harness(), build);
  const auto dirs = harness_dirs();
  EXPECT_EQ(dirs, (std::vector<fs::path>{build / "common", build / "harness"}))
      << "the libraries and the rewriter, never the whole build (it holds the solutions' binaries)";
  EXPECT_TRUE(configure_needed(t.tree).has_value()) << "a tree that compiled its harness now imports one";
  write_configure_stamp(t.tree);
  EXPECT_FALSE(configure_needed(t.tree).has_value());
  unsetenv("ROOFLAB_HARNESS");
  EXPECT_TRUE(configure_needed(t.tree).has_value()) << "and back: it compiles its own again";
}

TEST(FirstBuild, TheEstimateSaysMinutesForTheCoresThereAre) {
  // Measured: 14 minutes on 2 loaded cores for the default preset's first build.
  EXPECT_EQ(first_build_estimate(2), "10-20 minutes on 2 cores");
  const std::string sixteen = first_build_estimate(16);
  EXPECT_EQ(sixteen.rfind("1-", 0), 0u) << sixteen;
  EXPECT_NE(sixteen.find("on 16 cores"), std::string::npos) << sixteen;
  EXPECT_NE(first_build_estimate(1).find("on 1 core"), std::string::npos);
  EXPECT_NE(first_build_estimate(0).find("on 1 core"), std::string::npos) << "hardware_concurrency() may say 0";
}

}  // namespace
}  // namespace rooflab::grader
