#include "cli.hpp"

#include <rooflab/detail/rubric.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace rooflab::grader {

// structure: declarations (a list of options, read as one)
void add_grade_options(CLI::App& g, GradeArgs& grade) {
  g.add_option("labs", grade.labs, "Labs to grade: 01, 1 or memory-bandwidth (default: all)");
  auto* sol = g.add_flag("--solutions", grade.solutions, "Grade the reference solutions");
  g.add_option("--submission", grade.submission, "Grade a submission directory laid out like labs/")
      ->check(CLI::ExistingDirectory)
      ->excludes(sol);
  g.add_option("--json", grade.json, "Write Gradescope results.json here");
  g.add_option("--report-dir", grade.report_dir, "Where the Markdown report and plots go (default ./rooflab-report)");
  g.add_option("--build-dir", grade.build_dir,
               "Build tree to use (default build/default, build/solutions or build/submission); give each grader "
               "running in parallel its own");
  g.add_option("--seed", grade.seed, "Seed of the random test data (instructors: a secret one; an unsigned integer)");
  g.add_option("--timeout", grade.timeout_s, "Seconds one test may run before it counts as hung")->capture_default_str();
  g.add_flag("-v,--verbose", grade.verbose, "Show builds and test output as they run");
  g.add_flag("--no-color", grade.no_color, "Plain text");
  // Two plain flags: CLI11 gives an optional<bool> flag a value even when it is not on the command line.
  auto* verify_flag = g.add_flag_callback("--verify", [&grade] { grade.verify = true; },
                                          "Check every passing test's values in a process without student code (a run "
                                          "of the reference solutions' binaries; default: on with --submission)");
  auto* no_verify = g.add_flag_callback("--no-verify", [&grade] { grade.verify = false; }, "Do not (see --verify)")
                        ->excludes(verify_flag);
  g.add_option("--reference-values", grade.reference_values,
               "Verify against the reference values gradescope-package recorded in DIR (DIR/NN/<kind>.json) instead "
               "of running the reference solutions; a test with no recorded value for this seed earns nothing")
      ->check(CLI::ExistingDirectory)
      ->excludes(no_verify)
      ->excludes(sol);
  g.add_option("--kind", grade.kinds,
               fmt::format("Only these kinds of test binary: {} (data/test_kinds.json; dryrun: the perf tests on "
                           "the CPU backend, worth no points) (repeatable)",
                           fmt::join(rooflab::rubric::binary_kinds(), ", ")))
      ->check(CLI::IsMember(rooflab::rubric::binary_kinds()));
  g.add_option("--test", grade.test, "Only the tests whose Suite.Name contains this text");
  g.add_flag("--watch", grade.watch, "Grade again every time a student file of the graded labs (or of the "
                                     "--submission folder) is saved");
  g.add_flag("!--no-coverage", grade.coverage,
             "Leave out the hint of which lines of the student's .cu files no correctness test ran (it costs a "
             "coverage build of the kernels and one more run of the lab's correctness tests)");
  g.add_flag("!--no-dry-run", grade.dry_run,
             "Leave out the perf tests' dry run (the GPU code path on the CPU backend at scaled-down sizes, worth no "
             "points; it costs a build and a run per lab, and shows a cheat it sees as a failed 0-point test)");
  g.add_flag("--all-kinds", grade.all_kinds,
             "Also build the test binaries this machine cannot run (the GPU ones without a GPU)");
  g.add_option("--hidden-tests", grade.hidden_tests,
               "Instructors' hidden tests, built and graded with the public ones: DIR/NN/rubric.json lists lab NN's "
               "(kind, points), DIR/NN/<kind>*.cpp hold them (docs/instructor-guide.md)")
      ->check(CLI::ExistingDirectory);
  g.add_flag("--gradescope", grade.gradescope,
             "Write results.json for Gradescope's autograder: tests that need a GPU count 0 of 0 here, and the "
             "output says the GPU cluster grades them (what run_autograder passes)");
  g.add_flag("--no-sandbox", grade.no_sandbox,
             "Run the build of student files and the tests without the sandbox (debugging the grader only; "
             "see docs/instructor-guide.md)");
}

namespace {

// What a class grade may be asked to run: every binary kind except those that run only when asked.
std::vector<std::string> class_kinds() {
  std::vector<std::string> out;
  for (const auto& binary : rooflab::rubric::binary_kinds()) {
    const auto& rows = rooflab::rubric::test_kinds();
    if (std::any_of(rows.begin(), rows.end(), [&](const auto& r) { return r.binary == binary && !r.opt_in; })) {
      out.push_back(binary);
    }
  }
  return out;
}

}  // namespace

void add_class_options(CLI::App& gc, ClassArgs& k) {
  gc.add_option("submissions", k.submissions, "The folder of submissions (not needed with --collect)");
  gc.add_option("labs", k.labs, "Labs to grade (default: all)");
  gc.add_option("--out", k.out, "Where the class files go (grades.csv, junit/, students/, summary.txt)")->required();
  gc.add_option("--seed", k.seed, "Seed of the random test data (a secret one)");
  gc.add_option("--timeout", k.timeout_s, "Seconds one test may run")->capture_default_str();
  gc.add_option("--kind", k.kinds, "Only these kinds of test (see grade --kind)")
      ->check(CLI::IsMember(class_kinds()));
  gc.add_flag("--force", k.force, "Regrade every student, even those whose inputs and grader are unchanged");
  gc.add_flag("!--no-verify", k.verify, "Do not check passing tests against a run of the reference solutions");
  gc.add_flag("--coverage", k.coverage,
              "Give each student the hint of which of their lines no correctness test ran (a coverage build and "
              "one more run of the correctness tests per student and lab)");
  gc.add_flag("--dry-run", k.dry_run,
              "Run each student's perf dry run too (the GPU code path on the CPU backend, worth no points; a build "
              "and a run per student and lab)");
  gc.add_option("--build-dir", k.build_dir, "The build tree shared by the class (default OUT/build)");
  gc.add_option("--task", k.task, "(Slurm) grade only chunk TASK of the sorted submissions");
  gc.add_option("--chunk", k.chunk, "(Slurm) students per task")->capture_default_str();
  gc.add_flag("--collect", k.collect_only, "Grade nothing: merge the students' results into the class files");
  gc.add_flag("--require-gpu", k.require_gpu, "Grade nothing on a node without a GPU (perf is graded)");
  gc.add_option("--hidden-tests", k.hidden_tests, "Instructors' hidden tests (see grade --hidden-tests)")
      ->check(CLI::ExistingDirectory);
}

namespace {

// CLI11 parses a vector of arguments in reverse order, without the program's name.
template <typename Args, typename Declare>
Args parse_as(const std::vector<std::string>& argv, Declare declare) {
  CLI::App app;
  Args args;
  auto* sub = app.add_subcommand(argv.empty() ? "" : argv.front());
  declare(*sub, args);
  std::vector<std::string> reversed(argv.rbegin(), argv.rend());
  app.parse(reversed);
  return args;
}

}  // namespace

GradeArgs parse_grade_argv(const std::vector<std::string>& argv) {
  return parse_as<GradeArgs>(argv, [](CLI::App& a, GradeArgs& g) { add_grade_options(a, g); });
}

ClassArgs parse_class_argv(const std::vector<std::string>& argv) {
  return parse_as<ClassArgs>(argv, [](CLI::App& a, ClassArgs& k) { add_class_options(a, k); });
}

}  // namespace rooflab::grader
