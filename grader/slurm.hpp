// Grading a class on a Slurm cluster: an sbatch job array (each task runs grade-class on its chunk of the
// sorted submissions) and a collection job, started when the array has ended (afterany), that merges the
// students' results into the class files. A failed task is named by the collection step with the exact
// command that resubmits it alone.
#pragma once

#include "class_grading.hpp"

#include <filesystem>
#include <optional>
#include <string>

namespace rooflab::grader {

struct SlurmArgs {
  ClassArgs grading;                 // submissions, labs, out, seed, kinds, ... of every task
  std::string partition;             // "" : the cluster's default
  std::string collect_partition;     // the collection step's (CPU) partition; "" : the same as the tasks'
  std::string account;
  std::string time_limit = "02:00:00";  // per task
  int cpus_per_task = 4;
  bool cpu_only = false;  // no perf: no GPU asked for (analytic and CPU-backend grading on CPU partitions)
  // Where each task builds: grading.build_dir when given (a shared tree: the tasks that use it take turns,
  // which suits a one-node cluster), else a node-local folder (${TMPDIR:-/tmp}/rooflab-build-JOB-TASK).
  bool submit = false;  // also run sbatch (grade-class --slurm)
};

// Writes OUT/slurm/grade.sbatch, OUT/slurm/collect.sbatch and OUT/roster.json; submits them with --submit.
int cmd_slurm_script(const SlurmArgs& args);

// The text of the array script for `tasks` tasks (exposed for the grader's tests).
std::string slurm_array_script(const SlurmArgs& args, int tasks, const std::filesystem::path& cli);

}  // namespace rooflab::grader
