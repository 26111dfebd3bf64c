// rooflab: grade GPU performance labs against the roofline of the GPU they run on.
//
// The `rooflab` launcher at the project's top installs what is missing, builds this CLI and runs it;
// `./rooflab test` is the launcher's own (a CMake workflow). See README.md.
#include "class_grading.hpp"
#include "commands.hpp"
#include "gradescope.hpp"
#include "new_lab.hpp"
#include "slurm.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <iostream>

namespace {

// The options of grade-class (also the Slurm tasks' and the collection step's command line).
void add_class_options(CLI::App& gc, rooflab::grader::ClassArgs& k) {
  gc.add_option("submissions", k.submissions, "The folder of submissions (not needed with --collect)");
  gc.add_option("labs", k.labs, "Labs to grade (default: all)");
  gc.add_option("--out", k.out, "Where the class files go (grades.csv, junit/, students/, summary.txt)")->required();
  gc.add_option("--seed", k.seed, "Seed of the random test data (a secret one)");
  gc.add_option("--timeout", k.timeout_s, "Seconds one test may run")->capture_default_str();
  gc.add_option("--kind", k.kinds, "Only these kinds of test (see grade --kind)")
      ->check(CLI::IsMember({"analytic", "emu", "gpu", "static", "race"}));
  gc.add_flag("--force", k.force, "Regrade every student, even those whose inputs and grader are unchanged");
  gc.add_flag("!--no-verify", k.verify, "Do not check passing tests against a run of the reference solutions");
  gc.add_option("--build-dir", k.build_dir, "The build tree shared by the class (default OUT/build)");
  gc.add_option("--task", k.task, "(Slurm) grade only chunk TASK of the sorted submissions");
  gc.add_option("--chunk", k.chunk, "(Slurm) students per task")->capture_default_str();
  gc.add_flag("--collect", k.collect_only, "Grade nothing: merge the students' results into the class files");
  gc.add_flag("--require-gpu", k.require_gpu, "Grade nothing on a node without a GPU (perf is graded)");
  gc.add_option("--hidden-tests", k.hidden_tests, "Instructors' hidden tests (see grade --hidden-tests)")
      ->check(CLI::ExistingDirectory);
}

void add_slurm_options(CLI::App& app, rooflab::grader::SlurmArgs& s) {
  app.add_option("--partition", s.partition, "(Slurm) the tasks' partition (default: the cluster's)");
  app.add_option("--collect-partition", s.collect_partition, "(Slurm) the collection job's partition (a CPU one)");
  app.add_option("--account", s.account, "(Slurm) the account to charge");
  app.add_option("--time", s.time_limit, "(Slurm) time limit of one task")->capture_default_str();
  app.add_option("--cpus-per-task", s.cpus_per_task, "(Slurm) CPUs of one task")->capture_default_str();
  app.add_flag("--cpu-only", s.cpu_only, "(Slurm) no GPU: analytic and CPU-backend grading on CPU nodes, perf not graded");
}

}  // namespace

int main(int argc, char** argv) {
  using namespace rooflab::grader;
  // Progress reaches a log file line by line, as it does a terminal (grade-class > log: not 12 minutes of nothing).
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  CLI::App app{"rooflab: GPU performance labs, graded against the roofline measured on your GPU"};
  app.require_subcommand(1);
  app.footer("\nThe launcher's `./rooflab test` builds the reference solutions and runs the whole test suite.\n"
             "Exit codes: 0 ran (whatever the score), 1 a selftest or inspect that failed, 2 usage error, 3 the harness\n"
             "failed to build, 4 needs a GPU or the CUDA toolkit.");

  GradeArgs grade;
  auto* g = app.add_subcommand("grade", "Build and grade labs with the student files in labs/ (or --solutions, "
                                        "--submission DIR)");
  g->add_option("labs", grade.labs, "Labs to grade: 01, 1 or memory-bandwidth (default: all)");
  auto* sol = g->add_flag("--solutions", grade.solutions, "Grade the reference solutions");
  g->add_option("--submission", grade.submission, "Grade a submission directory laid out like labs/")
      ->check(CLI::ExistingDirectory)
      ->excludes(sol);
  g->add_option("--json", grade.json, "Write Gradescope results.json here");
  g->add_option("--report-dir", grade.report_dir, "Where the Markdown report and plots go (default ./rooflab-report)");
  g->add_option("--build-dir", grade.build_dir,
                "Build tree to use (default build/default, build/solutions or build/submission); give each grader "
                "running in parallel its own");
  g->add_option("--seed", grade.seed, "Seed of the random test data (instructors: a secret one; an unsigned integer)");
  g->add_option("--timeout", grade.timeout_s, "Seconds one test may run before it counts as hung")->capture_default_str();
  g->add_flag("-v,--verbose", grade.verbose, "Show builds and test output as they run");
  g->add_flag("--no-color", grade.no_color, "Plain text");
  // Two plain flags: CLI11 gives an optional<bool> flag a value even when it is not on the command line.
  bool verify_on = false, verify_off = false;
  auto* verify_flag = g->add_flag("--verify", verify_on,
                                  "Check every passing test's values in a process without student code (a run of "
                                  "the reference solutions' binaries; default: on with --submission)");
  g->add_flag("--no-verify", verify_off, "Do not (see --verify)")->excludes(verify_flag);
  g->add_option("--kind", grade.kinds,
                "Only these kinds of test: analytic, emu, gpu, static, race, dryrun (the perf tests on the CPU "
                "backend, worth no points) (repeatable)")
      ->check(CLI::IsMember({"analytic", "emu", "gpu", "static", "race", "dryrun"}));
  g->add_option("--test", grade.test, "Only the tests whose Suite.Name contains this text");
  g->add_flag("--watch", grade.watch, "Grade again every time a student file of the graded labs (or of the "
                                      "--submission folder) is saved");
  g->add_flag("--all-kinds", grade.all_kinds,
              "Also build the test binaries this machine cannot run (the GPU ones without a GPU)");
  g->add_option("--hidden-tests", grade.hidden_tests,
                "Instructors' hidden tests, built and graded with the public ones: DIR/NN/rubric.json lists lab NN's "
                "(kind, points), DIR/NN/<kind>*.cpp hold them (docs/instructor-guide.md)")
      ->check(CLI::ExistingDirectory);
  g->add_flag("--gradescope", grade.gradescope,
              "Write results.json for Gradescope's autograder: tests that need a GPU count 0 of 0 here, and the "
              "output says the GPU cluster grades them (what run_autograder passes)");
  g->add_flag("--no-sandbox", grade.no_sandbox,
              "Run the build of student files and the tests without the sandbox (debugging the grader only; "
              "see docs/instructor-guide.md)");

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
                                                      "the project): analytic and CPU-backend points on Gradescope, "
                                                      "perf points left to the GPU cluster");
  gs->add_option("labs", package.labs, "Labs the assignment grades (default: all)");
  gs->add_option("--out", package.out, "The zip to write")->capture_default_str();
  gs->add_option("--hidden-tests", package.hidden_tests, "Hidden tests to pack and grade with (see grade --hidden-tests)")
      ->check(CLI::ExistingDirectory);
  gs->add_option("--seed", package.seed, "A secret seed of the test data, written into run_autograder");

  InspectArgs inspect;
  auto* in = app.add_subcommand("inspect", "What the compiler says about a lab's kernels, without a GPU: registers, "
                                           "spills, shared memory, occupancy, widest loads, tensor cores, roofline floor");
  in->add_option("lab", inspect.lab, "The lab (default 01)");
  in->add_option("--gpu", inspect.gpu, "GPU id from data/gpus.json for occupancy and the floor")->capture_default_str();
  in->add_option("--arch", inspect.arch, "sm_80, sm_90, ... (one the build captured; default: the GPU's own)");
  in->add_option("--n", inspect.n, "Problem size for the roofline floor (the lab's meaning of n)")->capture_default_str();
  in->add_flag("--json", inspect.json, "Machine-readable");
  in->add_flag("--solutions", inspect.solutions, "Inspect the reference solutions instead of labs/");

  bool list_json = false;
  auto* l = app.add_subcommand("list", "The labs, their points by kind, and how many stub steps are left");
  l->add_flag("--json", list_json, "Machine-readable");

  bool remeasure = false;
  auto* c = app.add_subcommand("calibrate", "Measure this GPU's ceilings (copy bandwidth, FP32 FMA, cuBLAS GEMM) and "
                                            "compare them with the datasheet");
  c->add_flag("--remeasure", remeasure, "Ignore the cached figures");

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

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? kExitOk : kExitUsage;
  }
  try {
    if (*g) {
      if (verify_on) grade.verify = true;
      if (verify_off) grade.verify = false;
      return cmd_grade(grade);
    }
    if (*gc) return klass.submit ? cmd_slurm_script(klass) : cmd_grade_class(klass.grading);
    if (*ss) return cmd_slurm_script(script);
    if (*gs) return cmd_gradescope_package(package);
    if (*l) return cmd_list(list_json);
    if (*in) return cmd_inspect(inspect);
    if (*c) return cmd_calibrate(remeasure);
    if (*s) return cmd_selftest(st);
    if (*nl) {
      if (new_lab.root.empty()) new_lab.root = source_dir();
      return cmd_new_lab(new_lab);
    }
  } catch (const std::invalid_argument& e) {
    std::cerr << "rooflab: " << e.what() << "\n";
    return kExitUsage;
  } catch (const std::exception& e) {
    std::cerr << "rooflab: " << e.what() << "\n";
    return kExitHarness;
  }
  return kExitUsage;
}
