// What a grade produces: a terminal table per lab and kind, results.json in Gradescope's format, and a
// Markdown report.
#pragma once

#include "manifest.hpp"
#include "runner.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace rooflab::grader {

struct LabResults {
  const Lab* lab = nullptr;
  std::string student_dir;
  std::vector<TestResult> tests;
  std::string note;  // e.g. "graded on the CPU backend: no GPU"
};

struct KindTotals {
  std::string kind;
  int tests = 0;
  int passed = 0;
  int needs_gpu = 0;    // skipped for want of a GPU, or of the CUDA toolkit (then `unavailable` too)
  int unavailable = 0;
  double score = 0;
  double max_score = 0;
};
std::vector<KindTotals> totals_by_kind(const std::vector<TestResult>& tests);

std::string terminal_table(const LabResults& lab, bool color);
// One failure as the terminal's "what to fix" shows it: one line that starts with the kernel and shape (a
// context the test appended at the end, "(gemv, n = 7, k = 1)", is moved to the front) and says what was
// wrong, without GoogleTest's wrapper ("Value of: check(s, 0)", "Actual: false", "Which is: 0": a value is kept
// as "(f.bits is 0, want 128)"), with source paths cut to the file name (kernels.cu:47). report.md keeps
// the failure whole.
std::string what_to_fix(const std::string& failure);
std::string gradescope_json(const std::vector<LabResults>& labs, const std::string& header);
// A test's output as results.json shows it: what went wrong first (crashed, timed out, needs a GPU, ...).
std::string results_output(const TestResult& r);
std::string markdown_report(const std::vector<LabResults>& labs, const std::string& header);

// results.json as Gradescope reads it (score, output, tests[] with name, score, max_score, status, output,
// tags, visibility; nothing else). The tests this machine could not grade (perf, and anything that needs a
// GPU or the CUDA toolkit) and the perf tests of the graded labs that this run left out are listed at 0 of 0
// points, their output saying that the GPU cluster grades them; the other backend's twin of a correctness
// test (0 points) is left out. The top-level output starts with how many perf points are left to the cluster.
std::string gradescope_autograder_json(const std::vector<LabResults>& labs, const std::string& header);

}  // namespace rooflab::grader
