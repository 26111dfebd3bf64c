// rooflab: grade GPU performance labs against the roofline of the GPU they run on.
//
// The `rooflab` launcher at the project's top installs what is missing, builds this CLI and runs it;
// `./rooflab test` is the launcher's own (a CMake workflow). See README.md.
#include "class_grading.hpp"
#include "cli.hpp"
#include "commands.hpp"
#include "doctor.hpp"
#include "gradescope.hpp"
#include "new_lab.hpp"
#include "release.hpp"
#include "slurm.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <iostream>

namespace {

void add_slurm_options(CLI::App& app, rooflab::grader::SlurmArgs& s) {
  app.add_option("--partition", s.partition, "(Slurm) the tasks' partition (default: the cluster's)");
  app.add_option("--collect-partition", s.collect_partition, "(Slurm) the collection job's partition (a CPU one)");
  app.add_option("--account", s.account, "(Slurm) the account to charge");
  app.add_option("--time", s.time_limit, "(Slurm) time limit of one task")->capture_default_str();
  app.add_option("--cpus-per-task", s.cpus_per_task, "(Slurm) CPUs of one task")->capture_default_str();
  app.add_flag("--cpu-only", s.cpu_only, "(Slurm) no GPU: analytic and CPU-backend grading on CPU nodes, perf not graded");
}

}  // namespace

// structure: declarations (the subcommands' options, then one dispatch; tests/check_structure.cpp)
int main(int argc, char** argv) {
  using namespace rooflab::grader;
  // Progress reaches a log file line by line, as it does a terminal (grade-class > log: not 12 minutes of nothing).
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  CLI::App app{"rooflab: GPU performance labs, graded against the roofline measured on your GPU"};
  app.require_subcommand(1);
  app.footer("\nThe launcher's `./rooflab test` builds the reference solutions and runs the whole test suite.\n"
             "Exit codes: 0 ran (whatever the score), 1 a selftest, inspect or doctor that failed, 2 usage error, 3 the\n"
             "harness failed to build, 4 needs a GPU or the CUDA toolkit (doctor: no GPU here).");

  GradeArgs grade;
  auto* g = app.add_subcommand("grade", "Build and grade labs with the student files in labs/ (or --solutions, "
                                        "--submission DIR)");
  add_grade_options(*g, grade);

  SlurmArgs klass;  // grade-class; its Slurm options count with --slurm
  auto* gc = app.add_subcommand("grade-class", "Grade a folder of submissions (one folder, .zip or .tar.gz per "
                                               "student): grades.csv, JUnit XML, a summary (docs/instructor-guide.md)");
  add_class_options(*gc, klass.grading);
  add_slurm_options(*gc, klass);
  gc->add_flag("--slurm", klass.submit, "Grade on a Slurm cluster: write and submit a job array and a collection job");
  SlurmArgs script;
  auto* ss = app.add_subcommand("slurm-script", "Write the sbatch job array that grades a class on a Slurm cluster, "
                                                "and the job that merges its results (--submit: submit them)");
  add_class_options(*ss, script.grading);
  add_slurm_options(*ss, script);
  ss->add_flag("--submit", script.submit, "Submit them with sbatch");

  GradescopeArgs package;
  auto* gs = app.add_subcommand("gradescope-package", "Write the Gradescope autograder zip (setup.sh, run_autograder, "
                                                      "the project without its solutions, and the reference values "
                                                      "recorded here that submissions are verified against): analytic "
                                                      "and CPU-backend points on Gradescope, perf points left to the "
                                                      "GPU cluster");
  gs->add_option("labs", package.labs, "Labs the assignment grades (default: all)");
  gs->add_option("--out", package.out, "The zip to write")->capture_default_str();
  gs->add_option("--hidden-tests", package.hidden_tests, "Hidden tests to pack and grade with (see grade --hidden-tests); "
                                                        "their reference values are recorded too")
      ->check(CLI::ExistingDirectory);
  gs->add_option("--seed", package.seed, "A secret seed of the test data, written into run_autograder; the reference "
                                         "values are recorded with it (default: ROOFLAB_SEED, else the tests' own)");

  InspectArgs inspect;
  auto* in = app.add_subcommand("inspect", "What the compiler says about a lab's kernels, without a GPU: registers, "
                                           "spills, shared memory, occupancy, widest loads, tensor cores, roofline floor, a predicted time and "
                                           "what limits it; then "
                                           "the bytes each kernel moves as modelled on the CPU backend");
  in->add_option("lab", inspect.lab, "The lab (default 01)");
  in->add_option("--gpu", inspect.gpu,
                 "GPU id from data/gpus.json for occupancy, the floor and the prediction (default: this machine's GPU, "
                 "else h100-sxm)");
  in->add_option("--arch", inspect.arch, "sm_80, sm_90, ... (one the build captured; default: the GPU's own)");
  in->add_option("--n", inspect.n,
                 "Problem size for the floor and the prediction, in the lab's meaning of n (default: the size its perf "
                 "tests time)");
  in->add_flag("--json", inspect.json, "Machine-readable");
  in->add_flag("--solutions", inspect.solutions, "Inspect the reference solutions instead of labs/");
  in->add_flag("--sass", inspect.sass,
               "The prediction reads SASS (nvdisasm's listing of the cubin: what runs) instead of PTX; needs nvdisasm "
               "(a full toolkit has it; else ROOFLAB_NVDISASM). docs/measurements.md holds both against the H100 run");
  in->add_flag("!--no-traffic", inspect.traffic,
               "Leave out the memory traffic modelled on the CPU backend (labs with tests/traffic.cpp)");

  bool list_json = false;
  auto* l = app.add_subcommand("list", "The labs, their points by kind, and how many stub steps are left");
  l->add_flag("--json", list_json, "Machine-readable");

  bool remeasure = false;
  auto* c = app.add_subcommand("calibrate", "Measure this GPU's ceilings (copy bandwidth, FP32 FMA, cuBLAS GEMM) and "
                                            "compare them with the datasheet");
  c->add_flag("--remeasure", remeasure, "Ignore the cached figures");

  DoctorArgs doctor;
  auto* dr = app.add_subcommand("doctor", "Is this machine fit to grade on: toolkit and driver, the GPU as the sandbox "
                                          "sees it, its state, and a 30 s health measurement (docs/doctor.md)");
  dr->add_option("--report", doctor.report, "The Markdown report (default REPORT_DIR/doctor.md)");
  dr->add_option("--report-dir", doctor.report_dir, "Where the report, --record's block and plots go")->capture_default_str();
  dr->add_option("--seconds", doctor.seconds, "Length of the health measurement")->capture_default_str();
  dr->add_flag("--record", doctor.record, "Also calibrate and grade the reference solutions: the block for docs/measurements.md");
  dr->add_flag("--gate", doctor.gate, "(used by the test suite) what grade does with perf points on this GPU");

  SelftestArgs st;
  auto* s = app.add_subcommand("selftest", "(used by the test suite) grade a built variant and check it scores as "
                                           "expected");
  s->add_option("--build-dir", st.build_dir)->required();
  s->add_option("--lab", st.lab)->required();
  s->add_option("--variant", st.variant)->required();
  s->add_option("--json", st.json, "Also write the variant's results.json (Gradescope format) here");

  NewLabArgs new_lab;
  auto* nl = app.add_subcommand("new-lab", "Scaffold lab NN from templates/lab/: labs/NN-NAME/, solutions/NN-NAME/ and "
                                           "its line in labs/CMakeLists.txt (docs/adding-a-lab.md)");
  nl->add_option("id", new_lab.id, "The lab id: two digits, as 09")->required();
  nl->add_option("name", new_lab.name, "The lab name: lower-case letters, digits and dashes, as scale-demo")->required();
  nl->add_option("--title", new_lab.title, "The title in the grader's tables (default: the name in words)");
  nl->add_option("--root", new_lab.root, "The course to add it to (default: the one this grader was built from)");

  ReleaseArgs release;
  auto* rl = app.add_subcommand("release", "Write a student copy of the course: the labs' stubs, handouts and tests, the "
                                           "grader; no solutions/, known-bad cases or hidden tests (docs/instructor-guide.md)");
  rl->add_option("labs", release.labs, "Labs to ship (default: all)");
  rl->add_option("--out", release.out, "The new (or empty) folder to write it to")->required();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? kExitOk : kExitUsage;
  }
  try {
    student_copy_check(app.get_subcommands().front()->get_name(), grade, inspect.solutions);
    if (*g) return cmd_grade(grade);
    if (*gc) return klass.submit ? cmd_slurm_script(klass) : cmd_grade_class(klass.grading);
    if (*ss) return cmd_slurm_script(script);
    if (*gs) return cmd_gradescope_package(package);
    if (*l) return cmd_list(list_json);
    if (*in) return cmd_inspect(inspect);
    if (*c) return cmd_calibrate(remeasure);
    if (*dr) return cmd_doctor(doctor);
    if (*s) return cmd_selftest(st);
    if (*nl) {
      if (new_lab.root.empty()) new_lab.root = source_dir();
      return cmd_new_lab(new_lab);
    }
    if (*rl) return cmd_release(release);
  } catch (const std::invalid_argument& e) {
    std::cerr << "rooflab: " << e.what() << "\n";
    return kExitUsage;
  } catch (const std::exception& e) {
    std::cerr << "rooflab: " << e.what() << "\n";
    return kExitHarness;
  }
  return kExitUsage;
}
