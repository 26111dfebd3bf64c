#include "slurm.hpp"

#include "grade_args.hpp"
#include "process.hpp"
#include "util.hpp"

#include <fmt/format.h>

#include <sys/stat.h>

#include <fstream>
#include <iostream>

namespace rooflab::grader {

namespace fs = std::filesystem;

namespace {

// A word for a bash script (grade_args.hpp's quoting): nothing in a path or a seed is expanded.
std::string sh_quote(const std::string& s) { return shell_line({s}); }

void write_script(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
  fs::permissions(p, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec);
}

std::string header(const SlurmArgs& a, const std::string& name, const std::string& partition) {
  std::string h = "#!/bin/bash\n";
  h += fmt::format("#SBATCH --job-name={}\n", name);
  if (!partition.empty()) h += fmt::format("#SBATCH --partition={}\n", partition);
  if (!a.account.empty()) h += fmt::format("#SBATCH --account={}\n", a.account);
  return h;
}

}  // namespace

std::string slurm_array_script(const SlurmArgs& a, int tasks, const fs::path& cli) {
  const fs::path out = fs::absolute(a.grading.out);
  std::string s = header(a, "rooflab-grade", a.partition);
  s += fmt::format("#SBATCH --array=0-{}\n", tasks - 1);
  s += fmt::format("#SBATCH --output={}/slurm/logs/task-%a.out\n", out.string());
  s += fmt::format("#SBATCH --time={}\n#SBATCH --cpus-per-task={}\n#SBATCH --nodes=1\n#SBATCH --ntasks=1\n", a.time_limit,
                   a.cpus_per_task);
  if (!a.cpu_only) {
    // Perf is graded: one GPU per task, and the node to itself, so that no other job's traffic is measured.
    s += "#SBATCH --gres=gpu:1\n#SBATCH --exclusive\n";
  }
  s += "#\n# Written by `rooflab slurm-script` (docs/instructor-guide.md, \"Grading on a Slurm cluster\").\n"
       "# Resubmit one failed task alone: sbatch --array=N this-file, then sbatch the collect script.\n"
       "set -euo pipefail\n";
  // Calibration is per GPU: cached by UUID (with driver and clocks) on shared storage, so each node measures
  // its own GPU once and every student is graded against the GPU that ran them.
  s += fmt::format("export ROOFLAB_CACHE_DIR={}\n", sh_quote((out / "calibration").string()));
  const std::string build = a.grading.build_dir ? sh_quote(fs::absolute(*a.grading.build_dir).string())
                                        : "\"${TMPDIR:-/tmp}/rooflab-build-${SLURM_ARRAY_JOB_ID}-${SLURM_ARRAY_TASK_ID}\"";
  s += fmt::format("build={}\n", build);
  // Every task runs grade-class on its chunk, with the options of the class (to_argv: spelled as the CLI reads
  // them); the build tree and the task are the script's own shell variables.
  ClassArgs task = a.grading;
  task.submissions = fs::absolute(a.grading.submissions);
  task.out = out;
  task.build_dir = "$build";
  // On shared storage, as the submissions are: every task reads the same hidden tests.
  if (a.grading.hidden_tests) task.hidden_tests = fs::absolute(*a.grading.hidden_tests);
  task.task.reset();
  task.collect_only = false;
  task.require_gpu = !a.cpu_only;
  std::vector<std::string> argv = to_argv(task);
  argv.insert(argv.begin(), cli.string());
  argv.insert(argv.end(), {"--task", "$SLURM_ARRAY_TASK_ID"});
  s += shell_line(argv, {"$build", "$SLURM_ARRAY_TASK_ID"}) + "\n";
  return s;
}

int cmd_slurm_script(const SlurmArgs& a) {
  const fs::path out = fs::absolute(a.grading.out);
  require_numeric_seed(a.grading.seed);
  const Manifest base = load_manifest(own_build_dir());
  const auto labs = resolve_labs(base, a.grading.labs);
  std::vector<std::string> ignored;
  const auto subs = find_submissions(a.grading.submissions, ignored);
  for (const auto& i : ignored) fmt::print("rooflab slurm-script: {}\n", i);
  if (subs.empty()) throw std::invalid_argument(fmt::format("{} holds no submission", a.grading.submissions.string()));
  const int chunk = std::max(1, a.grading.chunk);
  const int tasks = (static_cast<int>(subs.size()) + chunk - 1) / chunk;
  write_roster(out, labs, subs, chunk);
  const fs::path cli = fs::read_symlink("/proc/self/exe");
  const fs::path dir = out / "slurm";
  fs::create_directories(dir / "logs");
  write_script(dir / "grade.sbatch", slurm_array_script(a, tasks, cli));
  std::string collect = header(a, "rooflab-collect", a.collect_partition.empty() ? a.partition : a.collect_partition);
  collect += fmt::format("#SBATCH --output={}/slurm/logs/collect.out\n#SBATCH --time=00:30:00\n#SBATCH --ntasks=1\n",
                         out.string());
  collect += "#\n# Merges the students' results into grades.csv, junit/ and summary.txt (submitted with\n"
             "# --dependency=afterany on the array: it runs however the tasks ended, and names the missing ones).\n"
             "set -euo pipefail\n";
  ClassArgs collect_args;
  collect_args.out = out;
  collect_args.collect_only = true;
  std::vector<std::string> argv = to_argv(collect_args);
  argv.insert(argv.begin(), cli.string());
  collect += "exec " + shell_line(argv) + "\n";
  write_script(dir / "collect.sbatch", collect);
  fmt::print("rooflab slurm-script: {} submissions in {} tasks of up to {}{}\n  {}\n  {}\n", subs.size(), tasks, chunk,
             a.cpu_only ? " (CPU only: no GPU asked for, perf not graded)" : " (one GPU each, exclusive)",
             (dir / "grade.sbatch").string(), (dir / "collect.sbatch").string());
  if (!a.submit) {
    fmt::print("Submit with:\n  job=$(sbatch --parsable {})\n  sbatch --dependency=afterany:$job {}\n",
               (dir / "grade.sbatch").string(), (dir / "collect.sbatch").string());
    return kExitOk;
  }
  const ProcessResult array = run_process({"sbatch", "--parsable", (dir / "grade.sbatch").string()}, {.timeout_s = 120});
  if (array.failed_to_start) {
    std::cerr << "rooflab: Slurm is not installed here (no sbatch in PATH). The scripts are written; submit them from "
                 "a machine of the cluster:\n  job=$(sbatch --parsable " << (dir / "grade.sbatch").string()
              << ")\n  sbatch --dependency=afterany:$job " << (dir / "collect.sbatch").string() << "\n";
    return kExitUsage;
  }
  if (!array.ok()) {
    std::cerr << "rooflab: sbatch refused the job array (" << array.describe() << "):\n" << array.output;
    return kExitHarness;
  }
  const std::string job = array.output.substr(0, array.output.find_first_of(";\n"));
  const ProcessResult coll = run_process(
      {"sbatch", "--parsable", "--dependency=afterany:" + job, (dir / "collect.sbatch").string()}, {.timeout_s = 120});
  if (!coll.ok()) {
    std::cerr << "rooflab: sbatch refused the collection job (" << coll.describe() << "):\n" << coll.output;
    return kExitHarness;
  }
  const std::string collect_job = coll.output.substr(0, coll.output.find_first_of(";\n"));
  fmt::print("submitted: job array {} ({} tasks), collection job {}\n", job, tasks, collect_job);
  write_script(dir / "jobs", fmt::format("array={}\ncollect={}\n", job, collect_job));
  return kExitOk;
}

}  // namespace rooflab::grader
