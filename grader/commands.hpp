// The rooflab CLI's subcommands that grade, inspect, list and calibrate (grade-class, slurm-script and
// gradescope-package have their own headers). Exit codes: util.hpp. A command sits above the pipeline and
// the helpers (pipeline.hpp, util.hpp): they never include this header.
#pragma once

#include "grade_args.hpp"
#include "selftest.hpp"
#include "util.hpp"

#include <filesystem>
#include <string>

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

int cmd_grade(const GradeArgs& args);
int cmd_inspect(const InspectArgs& args);
int cmd_list(bool json);
int cmd_calibrate(bool remeasure);

}  // namespace rooflab::grader
