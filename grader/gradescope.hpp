// Gradescope: an assignment's autograder package, and the results.json its runs write.
//
// Gradescope unpacks the package into /autograder/source and runs its setup.sh once, as root, when it builds
// the assignment's image; then, in a fresh container per submission, run_autograder, with the upload in
// /autograder/submission, expecting /autograder/results/results.json. Its machines have no GPU, so the package
// grades what earns points without one (the analytic answers, correctness on the CPU backend). Perf points are
// the GPU cluster's (grade-class, --slurm): the results list the perf tests at 0 of 0 points and say so.
#pragma once

#include "report.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace rooflab::grader {

struct GradescopeArgs {
  std::vector<std::string> labs;  // empty: every lab
  std::filesystem::path out = "rooflab-autograder.zip";
  std::optional<std::filesystem::path> hidden_tests;  // packed as hidden-tests/, graded with
  std::optional<std::string> seed;                    // a secret seed, written into run_autograder
};

// Writes the zip: the project's source files (git's list when this is a checkout: tracked and untracked,
// never ignored; else every file outside build/ and .git), setup.sh and run_autograder at its top, and the
// hidden tests as hidden-tests/. Needs the zip program.
int cmd_gradescope_package(const GradescopeArgs& args);

// The package's two scripts, for the labs `lab_ids` (empty: all); exposed for the grader's tests.
std::string autograder_setup_script(const std::vector<std::string>& lab_ids, bool hidden_tests);
std::string run_autograder_script(const std::vector<std::string>& lab_ids, bool hidden_tests,
                                  const std::optional<std::string>& seed);

}  // namespace rooflab::grader
