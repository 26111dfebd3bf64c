// `rooflab release --out DIR [LAB...]`: the student copy of the course. It holds what a student grades with
// (the labs' handouts, stubs, tests and rubrics, common/, the grader, data/, docs/) and nothing that answers a
// lab: no solutions/ (so no reference solutions and no known-bad cases, which patch them), no instructors'
// hidden tests, no lab template with its scaffolded solution. `./rooflab grade` works in it from a fresh
// copy; what needs the solutions (verification against a reference run, grading the solutions, the class and
// Gradescope commands) is the full course's, and says so there (student_copy_check).
#pragma once

#include "grade_args.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace rooflab::grader {

struct ReleaseArgs {
  std::vector<std::string> labs;  // empty: every lab
  std::filesystem::path out;       // a new (or empty) folder outside the course's source files
};

// Why `rel` (a path relative to the course's top) stays out of a student copy that ships the lab folders
// `shipped` (labs/NN-name names), or nullopt when it goes in. Student files are not decided here: they are
// always the stubs (release_stub).
std::optional<std::string> withheld(const std::filesystem::path& rel, const std::vector<std::string>& shipped);

// The calibration kernels' source: withheld from a copy, which carries them compiled instead.
inline constexpr const char* kCalibrationSource = "common/src/calibration_kernels.cu";

// The calibration kernels compiled for a copy (common/calibration_fatbin.cmake): SASS for the architectures of
// the "release" preset that this nvcc supports, PTX of the newest, and where it came from (toolkit version,
// architectures, source commit). nvcc is ROOFLAB_NVCC, else this build's. Throws std::runtime_error, saying what
// to install, when there is no toolkit; made before a copy is written, so that nothing is half-written.
struct CalibrationBinary {
  std::string fatbin;
  nlohmann::json made;
};
CalibrationBinary make_calibration_binary(const std::filesystem::path& src);
// Writes it into the copy at `copy`: common/prebuilt/calibration_kernels.fatbin and .json (common/CMakeLists.txt).
void write_calibration_binary(const CalibrationBinary& binary, const std::filesystem::path& copy);

// labs/CMakeLists.txt with the add_subdirectory lines of labs not shipped taken out.
std::string registered_labs_only(const std::string& labs_cmake, const std::vector<std::string>& shipped);

// Whether this course is a student copy (no solutions/ beside labs/).
bool is_student_copy(const std::filesystem::path& course);

// In a student copy, refuses (std::invalid_argument: a usage error) what needs the solutions: `command` one
// of grade-class, slurm-script, gradescope-package, selftest, new-lab, release, and grade or inspect asked for
// the solutions or for --verify; a grade's verification is turned off (there is no reference to run).
// Does nothing in the full course.
void student_copy_check(const std::string& command, GradeArgs& grade, bool inspect_solutions);

// Writes the copy; prints what it shipped and what it left out.
int cmd_release(const ReleaseArgs& args);

}  // namespace rooflab::grader
