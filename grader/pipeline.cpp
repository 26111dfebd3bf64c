#include "pipeline.hpp"

#include "doctor_gate.hpp"
#include "predictions.hpp"
#include "symbols.hpp"

#if defined(ROOFLAB_HAVE_CUDA)
#include <rooflab/testing/calibration.hpp>
#include <rooflab/testing/device.hpp>
#include <rooflab/testing/device_info.hpp>
#endif

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <numeric>
#include <string_view>
#include <thread>

namespace rooflab::grader {

namespace fs = std::filesystem;

GpuState detect_gpu() {
  GpuState s;
#if defined(ROOFLAB_HAVE_CUDA)
  std::string why;
  if (!rooflab::device_available(&why)) {
    s.description = "no GPU (" + why + ")";
    return s;
  }
  const auto info = rooflab::query_device(0);
  s.present = true;
  s.arch = std::to_string(info.cc_major) + std::to_string(info.cc_minor);
  s.name = info.name;
  s.description = fmt::format("{} ({})", info.name, info.arch());
#else
  s.description = "no GPU support in this build (no CUDA compiler was found)";
#endif
  return s;
}

std::string sandbox_warning(bool disabled) {
  if (disabled) return "Not sandboxed: --no-sandbox was given, so student code ran with the grader's rights.";
  const auto& ll = landlock_support();
  if (ll.abi == 0) {
    return "Not sandboxed: " + ll.unavailable + ". Student code ran with the grader's rights (only its TMPDIR and "
           "HOME were private).";
  }
  if (ll.abi < 4) {
    return fmt::format("Sandbox without network rules: this kernel's Landlock (ABI {}) cannot refuse TCP; files are "
                       "confined.", ll.abi);
  }
  return "";
}

bool has_selftests(const fs::path& build_dir) {
  std::ifstream cache(build_dir / "CMakeCache.txt");
  for (std::string line; std::getline(cache, line);) {
    if (line.rfind("ROOFLAB_SELFTEST:", 0) == 0) return line.substr(line.find('=') + 1) == "ON";
  }
  return false;
}

// ---- plan ----

namespace {

// The build tree of a grade: build/default for labs/ (build/default beside a CI tree's selftest variants),
// build/solutions, build/submission, or --build-dir (parallel graders: one tree each).
BuildTree tree_of(const GradeArgs& a, const std::string& hidden_tests) {
  const fs::path src = source_dir();
  BuildTree tree{src, own_build_dir(), "default", {}};
  // Always given, "" for none: a tree configured with hidden tests must not keep them for the next grade.
  tree.defs["ROOFLAB_HIDDEN_TESTS"] = hidden_tests;
  if (a.solutions) {
    tree.build_dir = src / "build" / "solutions";
    tree.preset = "solutions";
  }
  if (a.submission) tree.build_dir = src / "build" / "submission";
  if (!a.solutions && !a.submission && !a.build_dir && has_selftests(tree.build_dir)) {
    tree.build_dir = src / "build" / "default";  // keep a CI tree's selftest variants: grade labs/ beside it
  }
  if (a.build_dir) tree.build_dir = fs::absolute(*a.build_dir);
  return tree;
}

// Student files are checked (links, size, includes) before anything compiles them; a refused one loses the
// tests of the binaries it goes into, with the reason.
void take_student_files(const GradeArgs& a, GradePlan& p, bool first) {
  if (a.submission) {
    // Only the whitelisted files are taken, into the build tree (so parallel graders do not share them).
    p.student_dir = p.tree.build_dir / "student-files";
    auto assembled = assemble_submission(p.labs, fs::absolute(*a.submission), p.student_dir);
    if (first) p.notes.insert(p.notes.end(), assembled.notes.begin(), assembled.notes.end());
    p.refused = std::move(assembled.refused);
  } else {
    p.student_dir = source_dir() / (a.solutions ? "solutions" : "labs");
    p.refused = check_student_files(p.labs, p.student_dir);
    if (!first) return;
    for (const auto& r : p.refused) p.notes.push_back(fmt::format("lab {}: {} was refused: {}", r.lab, r.file, r.reason));
  }
}

// Where this grade's files go: a focused run writes its own, so the last full grade's stay as they were.
void plan_outputs(const GradeArgs& a, GradePlan& p) {
  p.report_dir = a.report_dir.value_or(fs::current_path() / "rooflab-report");
  // Gradescope's run grades the kinds that earn points without a GPU by design: that is its grade.
  p.focused = (!a.kinds.empty() && !a.gradescope) || !a.test.empty();
  p.json_path = a.json.value_or(p.report_dir / (p.focused ? "results-focused.json" : "results.json"));
  p.md_path = p.report_dir / (p.focused ? "report-focused.md" : "report.md");
}

}  // namespace

GradePlan plan_grade(const GradeArgs& a, const Manifest& base) {
  GradePlan p;
  p.labs = resolve_labs(base, a.labs);  // an unknown lab: a usage error
  p.gpu = detect_gpu();
  p.hidden_tests = a.hidden_tests ? fs::absolute(*a.hidden_tests).lexically_normal().string() : "";
  p.tree = tree_of(a, p.hidden_tests);
  if (a.hidden_tests) {
    for (const Lab* lab : p.labs) p.notes.push_back(hidden_tests_note(p.hidden_tests, lab->id));
  }
  take_student_files(a, p, true);
  if (!a.solutions) {
    p.tree.defs["ROOFLAB_STUDENT_DIR"] = p.student_dir.string();
    // Nothing of solutions/ may enter a build of student files (the selftest variants patch the solutions);
    // in the sandbox that build could not read them anyway.
    p.tree.defs["ROOFLAB_SELFTEST"] = "OFF";
  }
  if (p.gpu.present) p.tree.defs["CMAKE_CUDA_ARCHITECTURES"] = p.gpu.arch;  // build for the GPU that is here
  p.verify = (a.reference_values || a.verify.value_or(a.submission.has_value())) && !a.solutions;
  if (a.reference_values) p.reference_values = fs::absolute(*a.reference_values).lexically_normal();
  // Dry runs (the perf tests on the CPU backend, no points): in a student's grade by default, where they show
  // what the perf path does without a GPU (a cheat it sees fails a 0-point test). Not under --gradescope (its
  // grade is the points it can give) nor with --no-dry-run or ROOFLAB_DRYRUN=0 (a class grade passes that flag
  // unless asked); --kind dryrun or ROOFLAB_DRYRUN=1 always runs them.
  const char* dry_env = std::getenv("ROOFLAB_DRYRUN");
  const std::string_view dry = dry_env != nullptr ? dry_env : "";
  p.dry_run = dry == "1" || std::find(a.kinds.begin(), a.kinds.end(), "dryrun") != a.kinds.end() ||
              (a.dry_run && !a.gradescope && dry != "0");
  plan_outputs(a, p);
  return p;
}

void retake_student_files(const GradeArgs& a, GradePlan& plan) { take_student_files(a, plan, false); }

std::string hidden_tests_note(const fs::path& dir, const std::string& lab_id) {
  if (!fs::is_directory(dir)) throw std::invalid_argument(fmt::format("--hidden-tests {}: not a folder", dir.string()));
  const fs::path rubric = dir / lab_id / "rubric.json";
  if (!fs::exists(rubric)) {
    return fmt::format("lab {}: no hidden tests (no {}/rubric.json in the hidden tests' folder)", lab_id, lab_id);
  }
  // The same shape as a lab's rubric.json (rubric::load throws, naming the file, on what is wrong with it).
  std::size_t tests = 0;
  try {
    tests = rooflab::rubric::load(rubric).tests.size();
  } catch (const std::runtime_error& e) {
    throw std::invalid_argument(e.what());  // the instructor's input: a usage error, not the harness's
  }
  return fmt::format("lab {}: {} hidden test{} graded with the public ones", lab_id, tests, tests == 1 ? "" : "s");
}

// ---- build ----

std::optional<int> configure_stage(const GradePlan& plan, const std::optional<Sandbox>& build_box, bool verbose) {
  if (const auto why = configure_needed(plan.tree)) {
    fmt::print("rooflab: configuring {} ({}) ...\n", plan.tree.build_dir.string(), *why);
    std::fflush(stdout);
  }
  const ProcessResult conf = configure_if_needed(plan.tree, verbose, build_box);
  if (!conf.ok()) {
    fmt::print(stderr, "{}\nrooflab: configuring the build failed ({})\n", conf.output, conf.describe());
    return kExitHarness;
  }
  if (first_build(plan.tree.build_dir)) {
    fmt::print("rooflab: the first build of {} compiles the harness and the labs' tests: expect {} (later grades "
               "rebuild only what changed, in seconds).\n", plan.tree.build_dir.string(),
               first_build_estimate(std::thread::hardware_concurrency()));
    std::fflush(stdout);
  }
  return std::nullopt;
}

namespace {

// The lab's tests that a refused student file makes lost, with the reason; "" if none.
std::string refusal_of(const Lab& lab, const Binary& b, const std::vector<RefusedFile>& refused) {
  std::string out;
  for (const auto& r : refused) {
    if (r.lab == lab.id && binary_uses(b, r.file)) out += fmt::format("{} was refused, so this was not built: {}\n", r.file, r.reason);
  }
  return out;
}

// A dry-run binary links the reference solution's answers.cpp (its dry-run test checks the perf tests' byte and
// FLOP counts against the handout's analysis), which the sandboxed build may not read (solutions/ is closed to
// student processes). Those objects are our own code: they are built here, outside the sandbox, so that the
// sandboxed build of the binary finds them up to date. Returns the build's error, or "".
std::string build_reference_objects(const fs::path& build_dir, const Lab& lab, bool verbose) {
  const std::string solution_dir = (source_dir() / "solutions" / lab.dir_name()).string() + "/";
  std::vector<std::string> argv = {"cmake", "--build", build_dir.string(), "--target"};
  std::ifstream ninja(build_dir / "build.ninja");
  for (std::string line; std::getline(ninja, line);) {
    // "build <object>: <rule> <source> ...": an edge that compiles a file of the reference solution.
    const std::size_t colon = line.find(": ");
    if (line.rfind("build ", 0) == 0 && colon != std::string::npos &&
        line.find(" " + solution_dir, colon) != std::string::npos) {
      argv.push_back(line.substr(6, colon - 6));
    }
  }
  if (argv.size() == 4) return "";
  const SandboxScope unconfined(std::nullopt);
  const ProcessResult built = run_process(argv, {.timeout_s = 1800, .echo = verbose});
  return built.ok() ? "" : "the reference answers the dry run links did not build: " + compile_errors(built.output, 5);
}

}  // namespace

std::string build_binary(const GradePlan& plan, const Lab& lab, const Binary& b, bool verbose,
                         const std::optional<Sandbox>& build_box) {
  std::string error = refusal_of(lab, b, plan.refused);
  if (b.kind == "dryrun" && b.unavailable.empty() && error.empty()) {
    error = build_reference_objects(plan.tree.build_dir, lab, verbose);
  }
  if (b.unavailable.empty() && error.empty()) {
    fmt::print("rooflab: lab {}: building {}{} ...\n", lab.id, b.target,
               b.kind == "dryrun" ? " (DRY RUN: CPU backend, not GPU figures)" : "");
    std::fflush(stdout);
    error = compile_binary(plan, b, verbose, build_box);
    if (error.empty()) error = forbidden_symbols_in(plan.tree.build_dir, lab, b);  // symbols.hpp
  }
  return error;
}

std::string compile_binary(const GradePlan& plan, const Binary& b, bool verbose, const std::optional<Sandbox>& build_box) {
  const ProcessResult built = build_target(plan.tree.build_dir, b.target, verbose, build_box);
  return built.ok() ? "" : "the student files do not compile:\n" + compile_errors(built.output);
}

// ---- verify ----

std::map<std::string, Binary> reference_test_binaries(const Lab& lab, bool verbose, const std::string& hidden_tests,
                                                     const std::vector<std::string>& kinds, std::string* why) {
  // Our own code from our own tree: built outside the student's sandbox (which may not read build/solutions).
  const SandboxScope unconfined(std::nullopt);
  static std::optional<Manifest> solutions;
  static std::string configure_error;
  // With the same hidden tests as the graded tree, so that they are verified too.
  const BuildTree tree{source_dir(), source_dir() / "build" / "solutions", "solutions",
                       {{"ROOFLAB_HIDDEN_TESTS", hidden_tests}}};
  // Graders at once (a class's Slurm tasks) share build/solutions: one configures and builds at a time.
  const TreeLock lock(tree.build_dir);
  if (!solutions && configure_error.empty()) {
    const ProcessResult conf = configure_if_needed(tree, verbose, std::nullopt);
    if (conf.ok()) {
      solutions = load_manifest(tree.build_dir);
    } else {
      configure_error = "configuring build/solutions failed: " + tail_lines(conf.output, 5);
    }
  }
  std::map<std::string, Binary> out;
  if (!solutions) {
    *why = configure_error;
    return out;
  }
  for (const auto& b : solutions->lab(lab.id).variant("main").binaries) {
    const bool wanted = kinds.empty() || std::find(kinds.begin(), kinds.end(), b.kind) != kinds.end();
    if (!b.unavailable.empty() || !verified_kind(b.kind) || !wanted) continue;
    const ProcessResult built = build_target(tree.build_dir, b.target, verbose);
    if (!built.ok()) {
      *why = "the reference solutions did not build: " + compile_errors(built.output, 5);
      return {};
    }
    out[b.kind] = b;
  }
  return out;
}

std::map<std::string, fs::path> reference_binaries(const Lab& lab, bool verbose, const std::string& hidden_tests,
                                                   std::string* why, const std::vector<std::string>& kinds) {
  std::map<std::string, fs::path> out;
  for (const auto& [kind, b] : reference_test_binaries(lab, verbose, hidden_tests, kinds, why)) out[kind] = b.path;
  return out;
}

// ---- run ----

namespace {

// Perf tests read the ceilings just measured (a GPU's, or a dry run's pretend GPU's) from the calibration cache;
// they may not write them.
void tests_read_the_calibration_cache(RunOptions& options, GradingTree& sandboxed) {
  const fs::path cache = rooflab::cache_dir();
  options.env["ROOFLAB_CACHE_DIR"] = cache.string();
  if (std::find(sandboxed.readable.begin(), sandboxed.readable.end(), cache) == sandboxed.readable.end()) {
    sandboxed.readable.push_back(cache);
  }
}

}  // namespace

std::string run_header(const GradePlan& plan, bool no_sandbox, RunOptions& options, GradingTree& sandboxed) {
  // The terminal says "no GPU on this machine"; why the CUDA runtime found none goes to the report only (a
  // laptop user should not go off to update drivers).
  const GpuState& gpu = plan.gpu;
  std::string header = gpu.present ? fmt::format("Graded {} on a GPU machine: {}.", utc_now(), gpu.description)
                                   : fmt::format("Graded {}: no GPU on this machine.", utc_now());
  if (!gpu.present) {
    header += "\nCorrectness was graded on the CPU backend (its timings say nothing about a GPU); performance tests "
              "need a GPU and show \"needs a GPU\".";
  }
#if defined(ROOFLAB_HAVE_CUDA)
  if (gpu.present) {
    fmt::print("rooflab: calibrating this GPU's ceilings (cached after the first time) ...\n");
    const auto& c = rooflab::ceilings();
    header += fmt::format("\nCeilings measured on this GPU ({}): copy {:.0f} GB/s, FP32 FMA {:.1f} TFLOP/s.",
                          c.measured_at, c.copy_gbps, c.fp32_fma_flops / 1e12);
    tests_read_the_calibration_cache(options, sandboxed);
  }
#else
  (void)options;
  (void)sandboxed;
#endif
  if (plan.verify && !plan.reference_values.empty()) {
    header += "\nEvery passing test's checked values were compared with those a run of the reference solutions "
              "recorded when this autograder was made (no student code ran there); a test without a recorded "
              "value earns nothing.";
  } else if (plan.verify) {
    header += "\nEvery passing test's checked values were compared with a run of the reference solutions in a "
              "process without student code.";
  }
  if (const std::string w = sandbox_warning(no_sandbox); !w.empty()) header += "\n" + w;
  if (plan.dry_run) {
    header += "\nDRY RUN: the perf tests also ran on the CPU backend at scaled-down sizes against a pretend GPU, to "
              "prove they run to the end and to show what the harness sees of the timed code (a kernel that skips "
              "or replays work, reads what it should not, or runs outside the timed stream fails there). Their "
              "figures are CPU timings, not GPU measurements, and earn no points (kind \"dryrun\"; --no-dry-run "
              "leaves them out).";
    if (const std::string why = share_dryrun_ceilings(plan.tree.build_dir, true, options, sandboxed); !why.empty()) {
      header += "\n" + why;
    }
  }
  for (const auto& n : plan.notes) header += "\n" + n;
  return header;
}

// Each dry-run perf test reads the pretend GPU's ceilings (rooflab::ceilings(), as on a GPU), and a sandboxed test
// process has a scratch HOME of its own: without this, every one of them measured them again on the CPU backend
// (copy, FMA, three GEMMs: about 0.8 s of CPU a process, a third of a known-bad case's selftest). They are
// measured here once, by the harness's own tool (common/src/dryrun_calibrate.cpp: no student file is compiled into
// it, so it runs outside the sandbox), into the calibration cache a GPU grade uses, and the tests read them there
// and may not write them (the GPU path's rule, run_header). The cache is kept between grades, as a GPU's is.
std::string share_dryrun_ceilings(const fs::path& build_dir, bool may_build, RunOptions& options,
                                  GradingTree& sandboxed) {
  const auto harness = shared_harness();
  const fs::path tool = (harness ? *harness : build_dir) / "common" / "rooflab-dryrun-calibrate";
  const std::string fallback = "Each dry-run perf test measured the pretend GPU's ceilings itself (";
  const SandboxScope unconfined(std::nullopt);
  if (may_build && !harness) {
    const ProcessResult built = build_target(build_dir, "rooflab-dryrun-calibrate", false);
    if (!built.ok()) return fallback + "the tool that measures them once did not build: " + built.describe() + ").";
  }
  if (!fs::exists(tool)) return fallback + tool.string() + " is not built).";
  const fs::path cache = rooflab::cache_dir();
  const ProcessResult measured =
      run_process({tool.string()}, {.timeout_s = 600, .env = {{"ROOFLAB_CACHE_DIR", cache.string()}}});
  if (!measured.ok()) return fallback + tool.filename().string() + " " + measured.describe() + ").";
  tests_read_the_calibration_cache(options, sandboxed);
  return "";
}

std::string race_skip_reason(const std::vector<TestResult>& so_far) {
  for (const auto& r : so_far) {
    if (r.kind == "emu" && r.status == Status::timed_out) {
      return "not run: " + r.id + " timed out on the CPU backend, and the race check runs the same kernels";
    }
  }
  return "";
}

namespace {

// The lab's run options with its verification: the reference binaries of the graded kinds built (or why not,
// said), or the recorded reference values read (a malformed record stops the grade: std::runtime_error).
RunOptions verified_options(const GradeRun& run, const Lab& lab) {
  RunOptions o = run.options;
  if (!run.plan.verify) return o;
  if (!run.plan.reference_values.empty()) {
    o.recorded = read_reference_values(run.plan.reference_values, lab.id);
    fmt::print("rooflab: lab {}: results are checked against the reference values recorded in {} ({} kinds)\n",
               lab.id, run.plan.reference_values.string(), o.recorded->size());
    return o;
  }
  const auto& kinds = run.args.kinds;  // only these kinds' references are needed; none when none is verified
  if (!kinds.empty() && std::none_of(kinds.begin(), kinds.end(), verified_kind)) return o;
  fmt::print("rooflab: lab {}: building the reference solutions' tests (results are checked against them) ...\n", lab.id);
  std::fflush(stdout);
  std::string why;
  o.trusted = reference_binaries(lab, run.args.verbose, run.plan.hidden_tests, &why, kinds);
  if (o.trusted.empty()) fmt::print("rooflab: lab {}: results NOT verified against the reference solutions: {}\n", lab.id, why);
  return o;
}

bool wanted_kind(const GradeArgs& a, const std::string& kind) {
  return a.kinds.empty() || std::find(a.kinds.begin(), a.kinds.end(), kind) != a.kinds.end();
}

// Whether `b` holds a test --test asks for (run_binary's filter, wanted_test).
bool holds_wanted_test(const Binary& b, const std::string& test) {
  const auto& tests = b.tests();
  return std::any_of(tests.begin(), tests.end(), [&](const DeclaredTest& t) { return wanted_test(t, test); });
}

// Builds and runs one binary of a lab; its tests are added to `tests`.
void grade_binary(const GradeRun& run, const Lab& lab, const Binary& b, const RunOptions& lab_options,
                  std::vector<TestResult>& tests) {
  RunOptions o = lab_options;
  o.only_tests = run.args.test;
  // A GPU binary is not even built where no GPU can run it (its tests stay owed, "needs a GPU").
  if (b.kind == "gpu" && !run.plan.gpu.present && !run.args.all_kinds && b.unavailable.empty()) {
    o.needs_gpu_reason = "not built: no GPU on this machine (--all-kinds builds it anyway)";
    auto results = run_binary(lab, b, o);
    tests.insert(tests.end(), results.begin(), results.end());
    return;
  }
  const std::string error = build_binary(run.plan, lab, b, run.args.verbose, run.build_box);
  fmt::print("rooflab: lab {}: running {} tests{} ...\n", lab.id, b.kind,
             b.kind == "dryrun" ? " (DRY RUN: CPU backend, not GPU figures)" : "");
  std::fflush(stdout);
  if (b.kind == "race") o.skip_reason = race_skip_reason(tests);
  auto results = run_binary(lab, b, o, error);
  tests.insert(tests.end(), results.begin(), results.end());
}

// Which of the student's lines the correctness tests ran (runner.hpp, untested_lines_check): the emu binary's
// coverage build, built and run once, where the emu tests were graded in full and the student files compiled.
std::optional<TestResult> untested_lines_hint(const GradeRun& run, const Lab& lab, const Variant& v,
                                              const RunOptions& options, const std::vector<TestResult>& tests) {
  if (!run.args.coverage || !run.args.test.empty() || !wanted_kind(run.args, "emu")) return std::nullopt;
  const auto emu = std::find_if(v.binaries.begin(), v.binaries.end(), [](const Binary& b) { return b.kind == "emu"; });
  if (emu == v.binaries.end() || emu->coverage_target.empty() || !emu->unavailable.empty()) return std::nullopt;
  // Only where a correctness test passed on the CPU backend: code that fails its tests (a stub) has more to fix
  // than its coverage, and the run would cost a compile and the whole lab's tests again.
  const bool any_passed = std::any_of(tests.begin(), tests.end(), [](const TestResult& r) {
    // (not counted: passed where a GPU graded correctness, settle_correctness)
    return r.kind == "emu" && (r.status == Status::passed || r.status == Status::not_counted);
  });
  if (!any_passed) return std::nullopt;
  Binary coverage = *emu;
  coverage.target = emu->coverage_target;
  coverage.path = emu->coverage_path;
  fmt::print("rooflab: lab {}: measuring which lines of yours the correctness tests run ...\n", lab.id);
  std::fflush(stdout);
  const std::string error = compile_binary(run.plan, coverage, run.args.verbose, run.build_box);
  return untested_lines_check(lab, coverage, options, error);
}

// The model's predictions handed to the lab's other binaries: its JSON in the build tree (which the sandbox lets
// tests read; the report folder it does not), named to their tests in ROOFLAB_MODEL_PREDICTIONS (the perf tests'
// rooflines put each kernel's predicted point, hollow, beside its measured one: rooflab::add_model_point), and the
// lab's roofline of predictions drawn in the report folder (labNN-roofline-model.png, model_roofline), which a
// student without a GPU reads before renting one.
void hand_over_model(const GradeRun& run, const Lab& lab, ModelRun& model, RunOptions& options) {
  if (!model.predictions) return;
  std::error_code ec;
  const fs::path folder = run.plan.tree.build_dir / "model";
  fs::create_directories(folder, ec);
  const fs::path file = folder / fmt::format("lab{}.json", lab.id);
  std::ofstream(file) << model.json;
  if (fs::exists(file, ec)) options.env["ROOFLAB_MODEL_PREDICTIONS"] = file.string();
  const auto report = run.options.env.find("ROOFLAB_REPORT_DIR");
  const auto plot = model_roofline(lab.id, *model.predictions);
  if (report == run.options.env.end() || !plot) return;
  fs::create_directories(report->second, ec);
  const PlotFiles files = write_plot(*plot, fs::path(report->second) / fmt::format("lab{}-roofline-model", lab.id));
  model.plot = (files.png.empty() ? files.data : files.png).filename().string();
}

}  // namespace

LabResults grade_lab(const GradeRun& run, const Lab& lab) {
  const Variant& v = lab.variant("main");
  LabResults lr;
  lr.lab = &lab;
  lr.student_dir = v.student_dir.string();
  RunOptions lab_options = verified_options(run, lab);
  const GpuState& gpu = run.plan.gpu;
  // The static binary first: the model's predictions come from it (predictions.hpp), and the other binaries'
  // plots show them. The results keep the binaries' order.
  std::vector<std::size_t> order(v.binaries.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_partition(order.begin(), order.end(), [&](std::size_t i) { return v.binaries[i].kind == "static"; });
  std::vector<std::vector<TestResult>> results(v.binaries.size());
  ModelRun model;
  for (const std::size_t i : order) {
    const Binary& b = v.binaries[i];
    if (!wanted_kind(run.args, b.kind)) continue;
    if (b.kind == "dryrun" && !run.plan.dry_run) continue;
    if (!holds_wanted_test(b, run.args.test)) continue;  // --test: a binary with none of its tests is not built
    grade_binary(run, lab, b, lab_options, results[i]);
    if (b.kind == "static" && !model.predictions && model.error.empty()) {
      model = run_model(v.binaries, prediction_gpu(gpu.present, gpu.name));
      hand_over_model(run, lab, model, lab_options);
    }
  }
  for (auto& r : results) lr.tests.insert(lr.tests.end(), r.begin(), r.end());
  settle_correctness(lr.tests, gpu.present);
  // The model's prediction beside each perf test, owed or measured, from this grade's build.
  predict_perf_tests(lab, model, lr.tests);
  if (auto check = forbidden_symbols_check(run.plan.tree.build_dir, lab, v.binaries)) lr.tests.push_back(*check);
  if (auto hint = untested_kernels_check(lab, lr.tests); hint && run.args.test.empty()) lr.tests.push_back(*hint);
  if (auto hint = untested_lines_hint(run, lab, v, lab_options, lr.tests)) lr.tests.push_back(*hint);
  lr.note = gpu.present ? "graded on " + gpu.description
                        : "no GPU here: correctness graded on the CPU backend, performance needs a GPU";
  apply_perf_gate(lr, gpu.present);  // no perf points on a GPU that fails rooflab doctor's health measurement
  std::fputs(terminal_table(lr, run.color).c_str(), stdout);
  return lr;
}

std::vector<TestResult> run_variant(const Lab& lab, const Variant& v, const RunOptions& options,
                                    const std::map<std::string, std::string>& build_errors) {
  std::vector<TestResult> results;
  for (const auto& b : v.binaries) {
    std::string missing;
    if (const auto e = build_errors.find(b.target); e != build_errors.end()) {
      missing = e->second;
    } else if (b.unavailable.empty() && !fs::exists(b.path)) {
      missing = fmt::format("{} was not built", b.path.string());
    }
    RunOptions o = options;
    if (b.kind == "race") o.skip_reason = race_skip_reason(results);
    auto r = run_binary(lab, b, o, missing);
    results.insert(results.end(), r.begin(), r.end());
  }
  settle_correctness(results, options.gpu_present);
  return results;
}

// ---- collect ----

void collect_grade(const GradeRun& run, const std::vector<LabResults>& all) {
  const std::string header = run.header + run.gpu_detail;
  write_text(run.plan.json_path, (run.args.gradescope ? gradescope_autograder_json(all, header)
                                                      : gradescope_json(all, header)) + "\n");
  write_text(run.plan.md_path, markdown_report(all, header));
  // What this machine could grade, and what waits for a GPU (or the CUDA toolkit).
  double score = 0, gradable = 0, owed = 0;
  for (const auto& lr : all) {
    for (const auto& t : lr.tests) {
      score += t.score;
      if (t.status == Status::needs_gpu || t.status == Status::unavailable) {
        owed += t.max_score;
      } else {
        gradable += t.max_score;
      }
    }
  }
  const bool focused = run.plan.focused;
  fmt::print("\nrooflab: {}{:.1f} / {:.1f} of the points {}{}. Results: {}; report: {}\n",
             focused ? "FOCUSED RUN, NOT A GRADE: " : "", score, gradable,
             focused ? "of the tests that ran" : "gradable here",
             owed > 0 ? fmt::format(" ({:.0f} in all with a GPU)", gradable + owed) : "", run.plan.json_path.string(),
             run.plan.md_path.string());
}

}  // namespace rooflab::grader
