// One grade as a pipeline that reads top to bottom (cmd_grade in commands.cpp calls the stages in order):
//
//   plan     which labs, which build tree, which student files (checked, or a submission assembled), what
//            the grade verifies and where its files go: plan_grade
//   build    configure the tree (configure_stage), then each test binary, sandboxed (build_binary)
//   run      each binary's tests in their own processes (run_binary, runner.hpp), per lab (grade_lab)
//   verify   the reference solutions' binaries each passing test is checked against (reference_binaries)
//   collect  results.json, report.md and the summary line (collect_grade)
//
// `selftest` runs built variants through run_variant and `inspect` builds with build_binary's sandbox: the
// same stages, fewer of them. Nothing here includes a command's header (tests/check_structure.cpp).
#pragma once

#include "build.hpp"
#include "grade_args.hpp"
#include "manifest.hpp"
#include "report.hpp"
#include "runner.hpp"
#include "sandbox.hpp"
#include "util.hpp"

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace rooflab::grader {

struct GpuState {
  bool present = false;
  std::string description;  // name and arch, or why there is none
  std::string arch;         // "90"
  std::string name;         // as CUDA reports it ("NVIDIA H100 80GB HBM3"), for rooflab::find_gpu_by_cuda_name
};
GpuState detect_gpu();

// ---- plan ----

struct GradePlan {
  std::vector<const Lab*> labs;  // of the CLI's own manifest
  GpuState gpu;
  BuildTree tree;
  std::filesystem::path student_dir;  // labs/, solutions/ or the submission's copy in the build tree
  std::vector<RefusedFile> refused;   // student files refused before anything compiles them
  std::vector<std::string> notes;     // for the report's header
  std::string hidden_tests;           // absolute, "" for none
  bool verify = false;                // check passing tests against the reference solutions' run
  std::filesystem::path reference_values;  // verify against these records (--reference-values), "" for a run
  bool dry_run = false;               // run the dry-run binaries too (GradeArgs::dry_run, ROOFLAB_DRYRUN, --kind dryrun)
  bool focused = false;               // --kind or --test: not a grade, its own result files
  std::filesystem::path report_dir, json_path, md_path;
};

GradePlan plan_grade(const GradeArgs& args, const Manifest& base);
// What a hidden-tests folder holds for `lab_id`: "lab 01: 2 hidden tests graded with the public ones", or
// why none. Throws std::invalid_argument when DIR is not a folder or its rubric is malformed.
std::string hidden_tests_note(const std::filesystem::path& dir, const std::string& lab_id);
// Takes the student files again (--watch, after a save): a submission copied and checked again, labs/
// checked again (a fixed file is no longer refused).
void retake_student_files(const GradeArgs& args, GradePlan& plan);

// ---- build ----

// Configures the plan's tree when its inputs changed; nullopt, or the exit code when configuring failed.
std::optional<int> configure_stage(const GradePlan& plan, const std::optional<Sandbox>& build_box, bool verbose);
// "" when `b` was built, else why its tests are lost: a refused student file, a compile error, a forbidden
// library. A dry-run binary's reference objects are built first, outside the sandbox.
std::string build_binary(const GradePlan& plan, const Lab& lab, const Binary& b, bool verbose,
                         const std::optional<Sandbox>& build_box);
// Compiles `b` in the plan's tree: "" or "the student files do not compile:" with the compiler's errors.
std::string compile_binary(const GradePlan& plan, const Binary& b, bool verbose, const std::optional<Sandbox>& build_box);

// ---- verify ----

// The reference solutions' test binaries of `lab` of the verified kinds (runner.hpp: verified_kind), by kind,
// built in build/solutions: what a run is verified against (rooflab/detail/report.hpp). Only `kinds` when
// given (a grade of some kinds needs no other reference). Empty (with the reason in *why) when they cannot
// be built. reference_binaries: their paths.
std::map<std::string, Binary> reference_test_binaries(const Lab& lab, bool verbose, const std::string& hidden_tests,
                                                     const std::vector<std::string>& kinds, std::string* why);
std::map<std::string, std::filesystem::path> reference_binaries(const Lab& lab, bool verbose,
                                                                const std::string& hidden_tests, std::string* why,
                                                                const std::vector<std::string>& kinds = {});

// ---- run ----

// What every lab of one grade shares once the tree is built: the run's options and the report's header.
struct GradeRun {
  const GradeArgs& args;
  const GradePlan& plan;
  const Manifest& built;  // the build tree's manifest
  RunOptions options;
  std::optional<Sandbox> build_box;
  std::string header;      // what the report says about the machine and the run
  std::string gpu_detail;  // why no GPU was found: the report only
  bool color = false;
};

// The report's header for this run; measures the GPU's ceilings when there is one (adding what the tests
// may read to `options` and `sandboxed`).
std::string run_header(const GradePlan& plan, bool no_sandbox, RunOptions& options, GradingTree& sandboxed);
// Measures the CPU backend's pretend-GPU ceilings once for the dry-run tests, with the harness's own tool (built
// first where `may_build` and the tree compiles the harness itself), and lets the tests read them from the
// calibration cache (adding to `options` and `sandboxed`); "" or why each test measures them itself.
std::string share_dryrun_ceilings(const std::filesystem::path& build_dir, bool may_build, RunOptions& options,
                                  GradingTree& sandboxed);
// Builds, runs and verifies one lab's binaries of the chosen kinds; prints its terminal table.
LabResults grade_lab(const GradeRun& run, const Lab& lab);
// Runs every binary of a built variant (selftest: nothing is built here).
std::vector<TestResult> run_variant(const Lab& lab, const Variant& v, const RunOptions& options,
                                    const std::map<std::string, std::string>& build_errors = {});
// A kernel that hung in the CPU-backend tests hangs in the race tests too: "" or why they are not run.
std::string race_skip_reason(const std::vector<TestResult>& so_far);

// ---- collect ----

// Writes results.json and report.md and prints what this machine could grade.
void collect_grade(const GradeRun& run, const std::vector<LabResults>& labs);

// ---- shared ----

// What the report's header says when student processes are not confined, or "".
std::string sandbox_warning(bool disabled);
// Whether a build tree was configured with the selftest variants (they are built from solutions/).
bool has_selftests(const std::filesystem::path& build_dir);

}  // namespace rooflab::grader
