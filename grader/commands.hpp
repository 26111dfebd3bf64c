// The rooflab CLI's subcommands that grade, inspect, list and calibrate (grade-class, slurm-script and
// gradescope-package have their own headers). Exit codes: util.hpp. A command sits above the pipeline and
// the helpers (pipeline.hpp, util.hpp): they never include this header.
#pragma once

#include "grade_args.hpp"
#include "selftest.hpp"
#include "util.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace rooflab::grader {

struct InspectArgs {
  std::string lab = "01";
  std::string gpu;    // empty: this machine's GPU when data/gpus.json knows it, else the H100 SXM
  std::string arch;   // empty: the GPU's own architecture when captured
  double n = 0;       // 0: the size the lab's perf tests time
  bool json = false;
  bool solutions = false;
  bool sass = false;     // the prediction reads SASS (nvdisasm) rather than PTX
  bool traffic = true;  // after the static section, the modelled memory traffic (labs with traffic hints)
};

// A test binary's output (GoogleTest's, --gtest_brief=1) with the failures that are a stub's (a launcher that still
// throws rooflab::NotImplemented) taken out: inspect's traffic section for a lab half written shows the kernels
// written and names the steps not written yet, instead of a failure trace for each. `other_failures` counts the
// failed tests that were something else (those stay in `text`).
struct WithoutStubs {
  std::string text;
  std::vector<std::string> stubs;  // "lab05.flash1.launch", once each, in order
  int other_failures = 0;
};
WithoutStubs without_stub_failures(const std::string& gtest_output);

int cmd_grade(const GradeArgs& args);
int cmd_inspect(const InspectArgs& args);
int cmd_list(bool json);
int cmd_calibrate(bool remeasure);

}  // namespace rooflab::grader
