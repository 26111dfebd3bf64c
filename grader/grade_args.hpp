// The options of `grade` and `grade-class`, as data, and the one way to write them back as a command line.
// Class grading runs `grade` per student, the Slurm script runs `grade-class` per task and the Gradescope
// scripts run `grade` per upload: each builds the arguments here and writes them with to_argv, so a new option
// is spelled once (cli.cpp parses what to_argv writes; test_grade_args.cpp checks the round trip).
#pragma once

#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace rooflab::grader {

struct GradeArgs {
  std::vector<std::string> labs;  // empty: all
  bool solutions = false;
  std::optional<std::filesystem::path> submission;
  std::optional<std::filesystem::path> json;
  std::optional<std::filesystem::path> report_dir;
  std::optional<std::filesystem::path> build_dir;  // where to build (parallel graders each need their own)
  std::optional<std::string> seed;
  double timeout_s = 300;
  bool verbose = false;
  bool no_color = false;
  // Check each passing test's values against a run of the reference solutions' binaries (built in
  // build/solutions). Default: on for --submission, off otherwise.
  std::optional<bool> verify;
  bool no_sandbox = false;  // run student processes unconfined (debugging the grader only)
  // The student's loop: only these binary kinds (analytic, emu, gpu, static, race), only tests whose id
  // contains `test`, re-grade on every save. A focused run is not a grade (the summary says so).
  std::vector<std::string> kinds;
  std::string test;
  bool watch = false;
  bool all_kinds = false;  // also build the kinds this machine cannot run (GPU binaries without a GPU)
  // The hint of lines no correctness test ran (runner.hpp, untested_lines_check): a coverage build of the
  // student's kernels and one more run of the lab's correctness tests. --no-coverage leaves it out.
  bool coverage = true;
  // The perf tests' dry run (the lab's dryrun binary: the GPU code path on the CPU backend, worth no points),
  // beside the graded kinds: on in a student's grade, off with --no-dry-run, under --gradescope and in a class
  // grade unless it asks (ClassArgs::dry_run). A cheat the dry run sees shows there as a failed 0-point test.
  bool dry_run = true;
  // Instructors' hidden tests: DIR/<NN>/rubric.json and DIR/<NN>/<kind>*.cpp, built into lab NN's binaries
  // (and the reference solutions' ones they are verified against) and graded like the public tests.
  std::optional<std::filesystem::path> hidden_tests;
  bool gradescope = false;  // write results.json for Gradescope's autograder (gradescope.hpp)
  // Verify against the reference values gradescope-package recorded (DIR/<lab>/<kind>.json) instead of
  // building and running the reference solutions: what a package without solutions/ verifies with.
  std::optional<std::filesystem::path> reference_values;

  bool operator==(const GradeArgs&) const = default;
};

struct ClassArgs {
  std::filesystem::path submissions;
  std::vector<std::string> labs;  // empty: all
  std::filesystem::path out;
  std::optional<std::string> seed;
  double timeout_s = 300;
  std::vector<std::string> kinds;  // passed to each grade (--kind); empty: every kind
  bool force = false;              // regrade students whose inputs are unchanged
  bool verify = true;              // --verify / --no-verify of each grade
  bool coverage = false;           // each grade's hint of lines no test ran (--coverage; costs a build and a run)
  bool dry_run = false;            // each grade's perf dry run (--dry-run; costs a build and a run per lab)
  std::optional<std::filesystem::path> build_dir;  // default OUT/build
  // A Slurm task grades only its chunk: students whose index i (sorted by name) has i / chunk == task.
  std::optional<int> task;
  int chunk = 1;
  bool collect_only = false;  // grade nothing: merge the students' results into the class files
  bool require_gpu = false;   // a task on a node without a GPU grades nothing and fails (perf was asked)
  std::optional<std::filesystem::path> hidden_tests;  // grade --hidden-tests of each student

  bool operator==(const ClassArgs&) const = default;
};

// The command line that parses back into `args`: "grade", the labs, then every option that differs from its
// default (a given --verify or --no-verify always), paths as given (callers make them absolute where the
// command runs elsewhere). A script may add options after it that it does not set (--timeout, say).
std::vector<std::string> to_argv(const GradeArgs& args);
// The same for grade-class ("grade-class", the submissions folder, the labs, the options).
std::vector<std::string> to_argv(const ClassArgs& args);

// `argv` as one line of bash: each word single-quoted when it holds anything but letters, digits and
// -_./:=,+@%; a word listed in `expansions` (a "$build" the script sets) is written in double quotes, so that
// the shell expands it.
std::string shell_line(const std::vector<std::string>& argv, const std::set<std::string>& expansions = {});

}  // namespace rooflab::grader
