// grade-class's progress: its ETA counts only the students it will grade (a rerun skips those unchanged).
#include "class_grading.hpp"

#include <gtest/gtest.h>

namespace rooflab::grader {
namespace {

TEST(ClassEta, CountsOnlyTheStudentsLeftToGrade) {
  // Two students graded in 120 s in all, three left to grade: 3 minutes.
  EXPECT_EQ(class_eta(120, 2, 3), ", ETA 3m00s");
  // A rerun: forty students unchanged and skipped in no time, one graded in 30 s, one left: 30 s, not 40 x 30 s.
  EXPECT_EQ(class_eta(30, 1, 1), ", ETA 30s");
}

TEST(ClassEta, NoEstimateWithoutAGradeOrWithNothingLeft) {
  EXPECT_EQ(class_eta(0, 0, 40), "") << "every student so far unchanged: nothing to estimate from";
  EXPECT_EQ(class_eta(300, 5, 0), "") << "the rest are unchanged: nothing left";
}

}  // namespace
}  // namespace rooflab::grader
