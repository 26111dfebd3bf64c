// `grade --watch`: after the first grade, grade again every time a student file of the graded labs is saved.
#pragma once

#include "grade_args.hpp"
#include "pipeline.hpp"

#include <functional>

namespace rooflab::grader {

// Watches the plan's student files (a --submission where it is: the grade copies it; labs/ in place) with
// inotify; on a save, takes the student files again (retake_student_files) and calls `grade_once`. Returns
// when the watch ends (kExitOk), or kExitUsage when inotify is missing.
int watch_and_regrade(const GradeArgs& args, GradePlan& plan, const std::function<void()>& grade_once);

}  // namespace rooflab::grader
