// What `rooflab release` leaves out of a student copy, and what a student copy refuses (release.hpp). The copy
// itself, built and graded, is grader.release's (release_e2e.sh).
#include "release.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

namespace fs = std::filesystem;
using namespace rooflab::grader;

namespace {

const std::vector<std::string> kShipped = {"03-elementwise-intensity"};

TEST(Release, LeavesOutWhatAnswersALab) {
  EXPECT_TRUE(withheld("solutions/03-elementwise-intensity/kernels.cu", kShipped));
  EXPECT_TRUE(withheld("solutions/03-elementwise-intensity/selftest/skip/expect.json", kShipped));
  EXPECT_TRUE(withheld("labs/03-elementwise-intensity/selftest/skip/expect.json", kShipped));  // left where it was
  EXPECT_TRUE(withheld("templates/lab/solution/kernels.cu", kShipped));
  EXPECT_TRUE(withheld("grader/tests/hidden/01/analytic.cpp", kShipped));
  EXPECT_TRUE(withheld("grader/tests/hidden_e2e.sh", kShipped));
  EXPECT_TRUE(withheld("labs/04-gemm/README.md", kShipped));  // a lab not named
  EXPECT_TRUE(withheld("common/src/calibration_kernels.cu", kShipped));  // shipped compiled instead
  // The CPU backend's own tests, conformance files and benchmarks (a tiled SGEMM, WMMA GEMMs among them).
  EXPECT_TRUE(withheld("common/emu/tests/kernels.cu", kShipped));
  EXPECT_TRUE(withheld("common/emu/conformance/kernels/sgemm_shared.cuh", kShipped));
  EXPECT_TRUE(withheld("common/emu/bench/bench_kernels.cu", kShipped));
  // The performance model's validation fixtures: the reference solutions of a recorded GPU run.
  EXPECT_TRUE(withheld("common/tests/perf_validation/h100-sxm5-2026-11-24/lab04/kernels.cu", kShipped));
  EXPECT_TRUE(withheld("common/tests/perf_validation/validate.py", kShipped));
}

TEST(Release, ShipsTheRest) {
  for (const char* rel : {"labs/03-elementwise-intensity/kernels.cu", "labs/03-elementwise-intensity/tests/perf.cpp",
                          "labs/CMakeLists.txt", "common/src/specs.cpp", "grader/tests/release_e2e.sh", "rooflab",
                          "data/gpus.json", "docs/student-guide.md", "common/src/calibration_kernels.hpp",
                          "common/src/calibration_loader.cpp", "common/src/calibration_standins.cu",
                          "common/emu/src/scheduler.cpp", "common/emu/CMakeLists.txt", "common/emu/traffic.cmake",
                          "common/src/perf_model.cpp", "common/tests/test_perf_model.cpp", "data/perf_model.json"}) {
    EXPECT_EQ(withheld(rel, kShipped), std::nullopt) << rel;
  }
}

TEST(Release, RegistersOnlyTheLabsShipped) {
  const std::string cmake = "# Every lab registers itself here.\nadd_subdirectory(01-memory-bandwidth)\n"
                            "add_subdirectory(03-elementwise-intensity)\nadd_subdirectory(04-gemm)\n";
  EXPECT_EQ(registered_labs_only(cmake, kShipped),
            "# Every lab registers itself here.\nadd_subdirectory(03-elementwise-intensity)\n");
}

TEST(Release, AStudentCopyIsACourseWithoutSolutions) {
  char pattern[] = "/tmp/rooflab-release-test-XXXXXX";
  ASSERT_NE(mkdtemp(pattern), nullptr);
  const fs::path course = pattern;
  fs::create_directories(course / "labs");
  EXPECT_TRUE(is_student_copy(course));
  fs::create_directories(course / "solutions");
  EXPECT_FALSE(is_student_copy(course));
  fs::remove_all(course);
  EXPECT_FALSE(is_student_copy(course));  // no course at all
}

TEST(Release, TheFullCourseGradesAsAlways) {
  // This test runs in the full course (it has solutions/): nothing is refused or changed.
  GradeArgs grade;
  grade.verify = true;
  grade.solutions = true;
  EXPECT_NO_THROW(student_copy_check("grade", grade, false));
  EXPECT_NO_THROW(student_copy_check("grade-class", grade, false));
  EXPECT_EQ(grade.verify, std::optional<bool>(true));
}

}  // namespace
