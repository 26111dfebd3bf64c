#include "commands.hpp"

#include "build.hpp"
#include "gradescope.hpp"
#include "manifest.hpp"
#include "process.hpp"
#include "report.hpp"
#include "runner.hpp"
#include "sandbox.hpp"
#include "symbols.hpp"

#include <rooflab/testing/ptx.hpp>
#include <rooflab/testing/random.hpp>
#include <rooflab/specs.hpp>

#if defined(ROOFLAB_HAVE_CUDA)
#include <rooflab/testing/calibration.hpp>
#include <rooflab/testing/device.hpp>
#include <rooflab/testing/device_info.hpp>
#endif

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iostream>
#include <map>
#include <cmath>
#include <regex>
#include <set>
#include <sstream>
#include <sys/inotify.h>
#include <poll.h>
#include <unistd.h>

namespace rooflab::grader {

namespace fs = std::filesystem;

fs::path own_build_dir() { return ROOFLAB_BUILD_DIR; }

fs::path source_dir() { return ROOFLAB_SOURCE_DIR; }

std::string utc_now(bool seconds) {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, seconds ? "%Y-%m-%d %H:%M:%S UTC" : "%Y-%m-%d %H:%M UTC", std::gmtime(&t));
  return buf;
}

namespace {
// The wall clock a student reads beside the terminal ("14:03:27"): when --watch saw a save.
std::string local_clock() {
  const std::time_t t = std::time(nullptr);
  char buf[16];
  std::strftime(buf, sizeof buf, "%H:%M:%S", std::localtime(&t));
  return buf;
}
}  // namespace

void write_text(const fs::path& path, const std::string& text) {
  if (path.has_parent_path()) fs::create_directories(path.parent_path());
  const fs::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary);
    if (!out) throw std::runtime_error("cannot write " + tmp.string());
    out << text;
  }
  fs::rename(tmp, path);  // a reader (a class collection step, a rerun) never sees half a file
}

void require_numeric_seed(const std::optional<std::string>& seed) {
  const char* env = std::getenv("ROOFLAB_SEED");
  const std::string text = seed ? *seed : env != nullptr ? env : "";
  if ((seed || (env != nullptr && *env != '\0')) && !rooflab::parse_seed(text)) {
    throw std::invalid_argument(fmt::format("{} \"{}\" is not a seed: give an unsigned integer (such as 918273)",
                                            seed ? "--seed" : "ROOFLAB_SEED", text));
  }
}

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

namespace {

struct GpuState {
  bool present = false;
  std::string description;  // name and arch, or why there is none
  std::string arch;         // "90"
};

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
  s.description = fmt::format("{} ({})", info.name, info.arch());
#else
  s.description = "no GPU support in this build (no CUDA compiler was found)";
#endif
  return s;
}

// A kernel that hung in the CPU-backend tests hangs in the race tests too: they are hints, so they are not
// run then (one time-out per hang, not two).
std::string race_skip_reason(const std::vector<TestResult>& so_far) {
  for (const auto& r : so_far) {
    if (r.kind == "emu" && r.status == Status::timed_out) {
      return "not run: " + r.id + " timed out on the CPU backend, and the race check runs the same kernels";
    }
  }
  return "";
}

// ---- the sandbox of student processes (sandbox.hpp) ----

// A private directory for the per-process scratch directories of one command, removed at its end.
class ScratchRoot {
 public:
  ScratchRoot() {
    std::string pattern = (fs::temp_directory_path() / "rooflab-sandbox-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("cannot make a scratch directory in " + pattern);
    path_ = pattern;
  }
  ~ScratchRoot() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  ScratchRoot(const ScratchRoot&) = delete;
  ScratchRoot& operator=(const ScratchRoot&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// What the report's header says when student processes are not confined, or "".
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

// Whether a build tree was configured with the selftest variants (they are built from solutions/).
bool has_selftests(const fs::path& build_dir) {
  std::ifstream cache(build_dir / "CMakeCache.txt");
  for (std::string line; std::getline(cache, line);) {
    if (line.rfind("ROOFLAB_SELFTEST:", 0) == 0) return line.substr(line.find('=') + 1) == "ON";
  }
  return false;
}

// The lab's tests that a refused student file makes lost, with the reason; "" if none.
std::string refusal_of(const Lab& lab, const Binary& b, const std::vector<RefusedFile>& refused) {
  std::string out;
  for (const auto& r : refused) {
    if (r.lab == lab.id && binary_uses(b, r.file)) out += fmt::format("{} was refused, so this was not built: {}\n", r.file, r.reason);
  }
  return out;
}

// Runs every binary of a built variant (for selftest: nothing is built here).
std::vector<TestResult> run_variant(const Lab& lab, const Variant& v, const RunOptions& options,
                                    const std::map<std::string, std::string>& build_errors = {}) {
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

// The reference solutions' test binaries of `lab`, by kind, built in build/solutions: what a run is verified
// against (rooflab/detail/report.hpp). Empty (with the reason in *why) when they cannot be built.
std::map<std::string, fs::path> reference_binaries(const Lab& lab, bool verbose, const std::string& hidden_tests,
                                                   std::string* why) {
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
  std::map<std::string, fs::path> out;
  if (!solutions) {
    *why = configure_error;
    return out;
  }
  for (const auto& b : solutions->lab(lab.id).variant("main").binaries) {
    if (!b.unavailable.empty() || (b.kind != "analytic" && b.kind != "emu" && b.kind != "gpu")) continue;
    const ProcessResult built = build_target(tree.build_dir, b.target, verbose);
    if (!built.ok()) {
      *why = "the reference solutions did not build: " + compile_errors(built.output, 5);
      return {};
    }
    out[b.kind] = b.path;
  }
  return out;
}

}  // namespace

int cmd_grade(const GradeArgs& a) {
  require_numeric_seed(a.seed);
  const fs::path src = source_dir();
  const Manifest base = load_manifest(own_build_dir());
  std::vector<const Lab*> labs;
  for (const auto& key : a.labs) labs.push_back(&base.lab(key));  // throws invalid_argument: a usage error
  if (labs.empty()) {
    for (const auto& l : base.labs) labs.push_back(&l);
  }

  const GpuState gpu = detect_gpu();
  BuildTree tree{src, own_build_dir(), "default", {}};
  std::vector<std::string> notes;
  // Always given, "" for none: a tree configured with hidden tests must not keep them for the next grade.
  const std::string hidden_tests = a.hidden_tests ? fs::absolute(*a.hidden_tests).lexically_normal().string() : "";
  tree.defs["ROOFLAB_HIDDEN_TESTS"] = hidden_tests;
  if (a.hidden_tests) {
    for (const Lab* lab : labs) notes.push_back(hidden_tests_note(hidden_tests, lab->id));
  }
  if (a.solutions) {
    tree.build_dir = src / "build" / "solutions";
    tree.preset = "solutions";
  }
  if (a.submission) tree.build_dir = src / "build" / "submission";
  if (!a.solutions && !a.submission && !a.build_dir && has_selftests(tree.build_dir)) {
    tree.build_dir = src / "build" / "default";  // keep a CI tree's selftest variants: grade labs/ beside it
  }
  if (a.build_dir) tree.build_dir = fs::absolute(*a.build_dir);  // parallel graders: one tree each
  // Student files are checked (links, size, includes) before anything compiles them; a refused one
  // loses the tests of the binaries it goes into, with the reason.
  fs::path student_dir = src / (a.solutions ? "solutions" : "labs");
  std::vector<RefusedFile> refused;
  if (a.submission) {
    // Only the whitelisted files are taken, into the build tree (so parallel graders do not share them).
    student_dir = tree.build_dir / "student-files";
    fs::remove_all(student_dir);
    auto assembled = assemble_submission(labs, fs::absolute(*a.submission), student_dir);
    notes.insert(notes.end(), assembled.notes.begin(), assembled.notes.end());
    refused = std::move(assembled.refused);
  } else {
    refused = check_student_files(labs, student_dir);
    for (const auto& r : refused) notes.push_back(fmt::format("lab {}: {} was refused: {}", r.lab, r.file, r.reason));
  }
  if (!a.solutions) {
    tree.defs["ROOFLAB_STUDENT_DIR"] = student_dir.string();
    // Nothing of solutions/ may enter a build of student files (the selftest variants patch the solutions);
    // in the sandbox that build could not read them anyway.
    tree.defs["ROOFLAB_SELFTEST"] = "OFF";
  }
  if (gpu.present) tree.defs["CMAKE_CUDA_ARCHITECTURES"] = gpu.arch;  // build for the GPU that is here

  // The build and every test binary run sandboxed (sandbox.hpp); the build may write the build tree.
  const ScratchRoot scratch;
  GradingTree sandboxed{src, tree.build_dir, student_dir, {}, scratch.path()};
  std::optional<Sandbox> build_box;
  GradingTree for_build = sandboxed;  // the hidden tests are compiled; no test process may read them
  if (a.hidden_tests) for_build.readable.push_back(hidden_tests);
  if (!a.no_sandbox) build_box = build_sandbox(for_build);

  if (const auto why = configure_needed(tree)) {
    fmt::print("rooflab: configuring {} ({}) ...\n", tree.build_dir.string(), *why);
    std::fflush(stdout);
  }
  const ProcessResult conf = configure_if_needed(tree, a.verbose, build_box);
  if (!conf.ok()) {
    std::cerr << conf.output << "\nrooflab: configuring the build failed (" << conf.describe() << ")\n";
    return kExitHarness;
  }
  const Manifest m = load_manifest(tree.build_dir);
  if (first_build(tree.build_dir)) {
    fmt::print("rooflab: the first build of {} compiles the harness and the labs' tests: expect {} (later grades "
               "rebuild only what changed, in seconds).\n", tree.build_dir.string(),
               first_build_estimate(std::thread::hardware_concurrency()));
    std::fflush(stdout);
  }

  const fs::path report_dir = a.report_dir.value_or(fs::current_path() / "rooflab-report");
  RunOptions options;
  options.timeout_s = a.timeout_s;
  options.verbose = a.verbose;
  options.gpu_present = gpu.present;
  const bool verify = a.verify.value_or(a.submission.has_value()) && !a.solutions;
  // Dry runs (the perf tests on the CPU backend, no points) only when asked for: ROOFLAB_DRYRUN=1 adds them to a
  // grade, --kind dryrun runs them on their own (what a student or an instructor looks at to see them run).
  const char* dry_env = std::getenv("ROOFLAB_DRYRUN");
  const bool dry_run = (dry_env != nullptr && std::string_view(dry_env) == "1") ||
                       std::find(a.kinds.begin(), a.kinds.end(), "dryrun") != a.kinds.end();
  options.env["ROOFLAB_REPORT_DIR"] = fs::absolute(report_dir).string();
  if (a.seed) options.env["ROOFLAB_SEED"] = *a.seed;

  // The terminal says "no GPU on this machine"; why the CUDA runtime found none goes to the report only (a
  // laptop user should not go off to update drivers).
  std::string header = gpu.present ? fmt::format("Graded {} on a GPU machine: {}.", utc_now(), gpu.description)
                                   : fmt::format("Graded {}: no GPU on this machine.", utc_now());
  const std::string gpu_detail = gpu.present ? "" : "\nGPU detection: " + gpu.description + ".";
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
    // Perf tests read the ceilings just measured; they may not write them.
    options.env["ROOFLAB_CACHE_DIR"] = rooflab::cache_dir().string();
    sandboxed.readable.push_back(rooflab::cache_dir());
  }
#endif
  if (verify) {
    header += "\nEvery passing test's checked values were compared with a run of the reference solutions in a "
              "process without student code.";
  }
  std::optional<Sandbox> test_box;
  if (!a.no_sandbox) {
    test_box = test_sandbox(sandboxed);
    // Plots are written to the scratch and copied out: a test never writes the report directory itself.
    test_box->collect["ROOFLAB_REPORT_DIR"] = fs::absolute(report_dir);
  }
  const SandboxScope in_sandbox(test_box);  // the runner's processes
  if (const std::string w = sandbox_warning(a.no_sandbox); !w.empty()) header += "\n" + w;
  if (dry_run) {
    header += "\nDRY RUN requested: the perf tests ran on the CPU backend at scaled-down "
              "sizes against a pretend GPU, to prove they run to the end. Their figures are CPU timings, not GPU "
              "measurements, and earn no points (kind \"dryrun\").";
  }
  for (const auto& n : notes) header += "\n" + n;
  fmt::print("{}\n", header);

  // Gradescope's run grades the kinds that earn points without a GPU by design: that is its grade.
  const bool focused = (!a.kinds.empty() && !a.gradescope) || !a.test.empty();
  // A focused run writes its own files: the last full grade's results.json and report.md stay as they were.
  const fs::path json_path = a.json.value_or(report_dir / (focused ? "results-focused.json" : "results.json"));
  const fs::path md_path = report_dir / (focused ? "report-focused.md" : "report.md");
  if (focused) {
    const std::string what = fmt::format("{}{}{}", a.kinds.empty() ? "" : "--kind " + fmt::format("{}", fmt::join(a.kinds, ",")),
                                         !a.kinds.empty() && !a.test.empty() ? " " : "",
                                         a.test.empty() ? "" : "--test " + a.test);
    header += fmt::format("\nFocused run ({}): only some tests ran; this is not a grade.", what);
    fmt::print("rooflab: FOCUSED RUN ({}): only some tests run; this is NOT A GRADE. Its results go to {}; the "
               "last full grade's {} is left as it was.\n", what, json_path.string(),
               (report_dir / "results.json").string());
  }
  const bool color = !a.no_color && isatty(STDOUT_FILENO) != 0;
  const auto wanted_kind = [&](const std::string& kind) {
    return a.kinds.empty() || std::find(a.kinds.begin(), a.kinds.end(), kind) != a.kinds.end();
  };
  // One grade of every chosen lab: run once, or again after every save with --watch.
  const auto grade_once = [&]() {
  std::vector<LabResults> all;
  for (const Lab* wanted : labs) {
    const Lab& lab = m.lab(wanted->id);
    const Variant& v = lab.variant("main");
    LabResults lr;
    lr.lab = &lab;
    lr.student_dir = v.student_dir.string();
    RunOptions lab_options = options;
    if (verify) {
      fmt::print("rooflab: lab {}: building the reference solutions' tests (results are checked against them) ...\n",
                 lab.id);
      std::fflush(stdout);
      std::string why;
      lab_options.trusted = reference_binaries(lab, a.verbose, hidden_tests, &why);
      if (lab_options.trusted.empty()) {
        fmt::print("rooflab: lab {}: results NOT verified against the reference solutions: {}\n", lab.id, why);
      }
    }
    for (const auto& b : v.binaries) {
      if (!wanted_kind(b.kind)) continue;
      if (b.kind == "dryrun" && !dry_run) continue;
      const char* label = b.kind == "dryrun" ? " (DRY RUN: CPU backend, not GPU figures)" : "";
      RunOptions o = lab_options;
      o.only_tests = a.test;
      // A GPU binary is not even built where no GPU can run it (its tests stay owed, "needs a GPU").
      if (b.kind == "gpu" && !gpu.present && !a.all_kinds && b.unavailable.empty()) {
        o.needs_gpu_reason = "not built: no GPU on this machine (--all-kinds builds it anyway)";
        auto results = run_binary(lab, b, o);
        lr.tests.insert(lr.tests.end(), results.begin(), results.end());
        continue;
      }
      std::string error = refusal_of(lab, b, refused);
      if (b.kind == "dryrun" && b.unavailable.empty() && error.empty()) {
        error = build_reference_objects(tree.build_dir, lab, a.verbose);
      }
      if (b.unavailable.empty() && error.empty()) {
        fmt::print("rooflab: lab {}: building {}{} ...\n", lab.id, b.target, label);
        std::fflush(stdout);
        const ProcessResult built = build_target(tree.build_dir, b.target, a.verbose, build_box);
        if (!built.ok()) error = "the student files do not compile:\n" + compile_errors(built.output);
        if (built.ok()) error = forbidden_symbols_in(tree.build_dir, lab, b);  // symbols.hpp
      }
      fmt::print("rooflab: lab {}: running {} tests{} ...\n", lab.id, b.kind, label);
      std::fflush(stdout);
      if (b.kind == "race") o.skip_reason = race_skip_reason(lr.tests);
      auto results = run_binary(lab, b, o, error);
      lr.tests.insert(lr.tests.end(), results.begin(), results.end());
    }
    settle_correctness(lr.tests, gpu.present);
    if (auto check = forbidden_symbols_check(tree.build_dir, lab, v.binaries)) lr.tests.push_back(*check);
    if (auto hint = untested_kernels_check(lab, lr.tests); hint && a.test.empty()) lr.tests.push_back(*hint);
    lr.note = gpu.present ? "graded on " + gpu.description
                          : "no GPU here: correctness graded on the CPU backend, performance needs a GPU";
    std::fputs(terminal_table(lr, color).c_str(), stdout);
    all.push_back(std::move(lr));
  }

  write_text(json_path, (a.gradescope ? gradescope_autograder_json(all, header + gpu_detail)
                                      : gradescope_json(all, header + gpu_detail)) + "\n");
  write_text(md_path, markdown_report(all, header + gpu_detail));
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
  fmt::print("\nrooflab: {}{:.1f} / {:.1f} of the points {}{}. Results: {}; report: {}\n",
             focused ? "FOCUSED RUN, NOT A GRADE: " : "", score, gradable,
             focused ? "of the tests that ran" : "gradable here",
             owed > 0 ? fmt::format(" ({:.0f} in all with a GPU)", gradable + owed) : "", json_path.string(),
             md_path.string());
  };

  grade_once();
  if (!a.watch) return kExitOk;
  // --watch: inotify on the graded labs' folders; a save (write, or an editor's rename over the file) of
  // a student file grades again. No polling: the process sleeps in read().
  const int fd = inotify_init1(IN_CLOEXEC);
  if (fd < 0) {
    std::cerr << "rooflab: --watch needs inotify: " << std::strerror(errno) << "\n";
    return kExitUsage;
  }
  // A submission is watched where it is (the grade copies it into the build tree), labs/ in place.
  const fs::path watch_root = a.submission ? fs::absolute(*a.submission) : student_dir;
  std::vector<fs::path> dirs;
  for (const Lab* lab : labs) dirs.push_back(watch_root / lab->dir_name());
  if (a.submission && labs.size() == 1) dirs.push_back(watch_root);  // one lab's files may sit at its top
  std::set<std::string> names;
  for (const Lab* lab : labs) names.insert(lab->student_files.begin(), lab->student_files.end());
  std::map<int, fs::path> watched;  // inotify's watch descriptor -> the folder, to say which file changed
  for (const auto& dir : dirs) {
    const int wd = inotify_add_watch(fd, dir.c_str(), IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE);
    if (wd < 0) {
      std::cerr << "rooflab: cannot watch " << dir << ": " << std::strerror(errno) << "\n";
    } else {
      watched[wd] = dir;
    }
  }
  // The student files a batch of inotify events names, by path.
  const auto student_files_in = [&](const char* buf, ssize_t n, std::set<std::string>& out) {
    for (ssize_t off = 0; off < n;) {
      const auto* ev = reinterpret_cast<const inotify_event*>(buf + off);
      if (ev->len > 0 && names.count(ev->name) != 0) {
        const auto dir = watched.find(ev->wd);
        out.insert(dir == watched.end() ? std::string(ev->name) : (dir->second / ev->name).string());
      }
      off += static_cast<ssize_t>(sizeof(inotify_event) + ev->len);
    }
  };
  for (;;) {
    fmt::print("\nrooflab: watching the student files in {} (save one to grade again; Ctrl-C to stop) ...\n",
               watch_root.string());
    std::fflush(stdout);
    std::set<std::string> changed_files;
    while (changed_files.empty()) {
      alignas(inotify_event) char buf[4096];
      const ssize_t n = read(fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return kExitOk;
      student_files_in(buf, n, changed_files);
    }
    // Editors write in bursts (a backup, a rename, the file): let the burst end, then drain it.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    pollfd p{fd, POLLIN, 0};
    while (poll(&p, 1, 0) > 0) {
      alignas(inotify_event) char drain[4096];
      const ssize_t n = read(fd, drain, sizeof drain);
      if (n <= 0) break;
      student_files_in(drain, n, changed_files);
    }
    fmt::print("\nrooflab: {} changed at {}; grading again ...\n", fmt::join(changed_files, ", "), local_clock());
    std::fflush(stdout);
    if (a.submission) {  // copied again, checked again
      fs::remove_all(student_dir);
      refused = assemble_submission(labs, watch_root, student_dir).refused;
    } else {
      refused = check_student_files(labs, student_dir);  // a fixed file is no longer refused
    }
    grade_once();
  }
}

int cmd_inspect(const InspectArgs& a) {
  const Manifest base = load_manifest(own_build_dir());
  const Lab& wanted = base.lab(a.lab);
  BuildTree tree{source_dir(), own_build_dir(), "default", {{"ROOFLAB_STUDENT_DIR", (source_dir() / "labs").string()}}};
  if (a.solutions) tree = {source_dir(), source_dir() / "build" / "solutions", "solutions", {}};
  // Student code is compiled and its static binary run: both sandboxed, as in grade.
  const ScratchRoot scratch;
  const GradingTree sandboxed{source_dir(), tree.build_dir, a.solutions ? source_dir() / "solutions" : base.student_dir,
                              {}, scratch.path()};
  if (a.solutions) {
    const ProcessResult conf = configure(tree, false, build_sandbox(sandboxed));
    if (!conf.ok()) {
      std::cerr << conf.output << "\nrooflab: configuring the build failed\n";
      return kExitHarness;
    }
  }
  const Manifest m = load_manifest(tree.build_dir);
  const Lab& lab = m.lab(wanted.id);
  const Binary* stat = nullptr;
  for (const auto& b : lab.variant("main").binaries) {
    if (b.kind == "static" && b.unavailable.empty()) stat = &b;
  }
  if (stat == nullptr) {
    std::cerr << "rooflab inspect: lab " << lab.id << " has no static binary (this build has no CUDA compiler)\n";
    return kExitNoGpu;
  }
  const ProcessResult built = build_target(tree.build_dir, stat->target, false, build_sandbox(sandboxed));
  if (!built.ok()) {
    std::cerr << "rooflab inspect: the student files do not compile:\n" << compile_errors(built.output) << "\n";
    return kExitFailed;
  }
  std::vector<std::string> argv = {stat->path.string(), "--rooflab-inspect", "--gpu", a.gpu, "--n", fmt::format("{:g}", a.n)};
  if (!a.arch.empty()) argv.insert(argv.end(), {"--arch", a.arch});
  if (a.json) argv.push_back("--json");
  const ProcessResult p = run_process(argv, {.timeout_s = 120, .sandbox = test_sandbox(sandboxed)});
  std::fputs(p.output.c_str(), p.ok() ? stdout : stderr);
  return p.ok() ? kExitOk : (p.exit_code == 2 ? kExitUsage : kExitFailed);
}

int cmd_selftest(const SelftestArgs& a) {
  const Manifest m = load_manifest(a.build_dir);
  const Lab& lab = m.lab(a.lab);
  const Variant& v = lab.variant(a.variant);
  const bool known_bad = v.expect != "full" && v.expect != "zero";
  const nlohmann::json expect = known_bad ? nlohmann::json::parse(rooflab::ptx::read_file(v.expect)) : nlohmann::json::object();
  RunOptions options;
  options.timeout_s = expect.value("timeout", 300.0);  // a case that hangs on purpose says how long to wait
  // Files a case tries to create outside its sandbox: none may exist before or after.
  std::vector<fs::path> must_not_create;
  for (const auto& f : expect.value("must_not_create", nlohmann::json::array())) {
    must_not_create.push_back(m.source_dir / f.get<std::string>());
    fs::remove(must_not_create.back());
  }
  options.gpu_present = detect_gpu().present;
  // Known-bad submissions are verified against the solutions variant of the same build, as a submission
  // is against build/solutions.
  if (known_bad) {
    for (const auto& candidate : lab.variants) {
      if (candidate.expect != "full") continue;
      for (const auto& b : candidate.binaries) {
        if (b.unavailable.empty() && (b.kind == "analytic" || b.kind == "emu" || b.kind == "gpu")) {
          options.trusted[b.kind] = b.path;
        }
      }
    }
  }
  // A case that must not compile is built here, as the grader builds a submission.
  std::map<std::string, std::string> build_errors;
  // The include policy a submission meets in grade (a case's files that include what a student file may
  // not, such as a solution, are refused: their binaries count as not built, with the reason).
  for (const auto& file : lab.student_files) {
    const fs::path path = v.student_dir / file;
    if (!fs::exists(path)) continue;
    if (const auto why = include_policy_violation(rooflab::ptx::read_file(path), lab.dir)) {
      for (const auto& b : v.binaries) {
        if (binary_uses(b, file)) build_errors[b.target] = fmt::format("{} was refused, so this was not built: {}", file, *why);
      }
    }
  }
  // The libraries the lab forbids (symbols.hpp), read from the objects the suite built.
  for (const auto& b : v.binaries) {
    if (b.unavailable.empty() && !build_errors.count(b.target) && fs::exists(b.path)) {
      if (std::string found = forbidden_symbols_in(m.build_dir, lab, b); !found.empty()) build_errors[b.target] = found;
    }
  }
  if (expect.value("build", "") == "fails") {
    for (const auto& b : v.binaries) {
      if (!b.unavailable.empty()) continue;
      const ProcessResult built = build_target(a.build_dir, b.target, false);
      if (!built.ok()) build_errors[b.target] = "the student files do not compile:\n" + compile_errors(built.output);
    }
  }
  // In the sandbox grade uses, so that the suite checks every kind of test binary still passes in it.
  const ScratchRoot scratch;
  const SandboxScope in_sandbox(test_sandbox({m.source_dir, m.build_dir, v.student_dir, {}, scratch.path()}));
  auto results = run_variant(lab, v, options, build_errors);
  if (auto check = forbidden_symbols_check(m.build_dir, lab, v.binaries)) results.push_back(*check);
  if (auto hint = untested_kernels_check(lab, results)) results.push_back(*hint);
  LabResults lr{&lab, v.student_dir.string(), results, "variant " + v.name};
  std::fputs(terminal_table(lr, false).c_str(), stdout);
  // Every test's status and points, as grade writes them (bench/compare-results diffs two runs of these).
  if (a.json) write_text(*a.json, gradescope_json({lr}, fmt::format("selftest lab {} {}", lab.id, v.name)) + "\n");

  std::vector<std::string> problems;
  const auto graded_here = [](const TestResult& r) {
    return r.kind == "analytic" || r.kind == "emu" || r.kind == "static" || r.kind == "race" || r.kind == "dryrun";
  };
  if (v.expect == "full") {
    for (const auto& r : results) {
      if (graded_here(r) && r.status != Status::unavailable && !(r.status == Status::passed && r.score >= r.max_score)) {
        problems.push_back(fmt::format("{} should earn full marks: {} {:.1f}/{:.1f}\n{}", r.id, to_string(r.status),
                                       r.score, r.max_score, r.output));
      }
    }
  } else if (v.expect == "zero") {
    for (const auto& r : results) {
      if (r.kind != "analytic" && r.kind != "emu") continue;
      if (r.score != 0) problems.push_back(fmt::format("stub test {} earned {:.1f} points", r.id, r.score));
      if (r.status == Status::crashed || r.status == Status::timed_out) {
        problems.push_back(fmt::format("stub test {} {} instead of failing cleanly", r.id, to_string(r.status)));
      } else if (r.status == Status::failed && r.output.find("not implemented") == std::string::npos) {
        problems.push_back(fmt::format("stub test {} fails without saying \"not implemented\":\n{}", r.id, r.output));
      }
    }
  } else {
    // A known-bad submission: its expect.json names the tests it must lose, and every other test it runs
    // must keep its points (a grader that fails everything would pass a must_fail list alone).
    std::set<std::string> lose;
    for (const auto& id : expect.at("must_fail")) lose.insert(id.get<std::string>());
    if (expect.value("others_pass", true)) {
      for (const auto& r : results) {
        if (lose.count(r.id) || r.status == Status::not_counted || r.max_score == 0) continue;
        if (r.status == Status::needs_gpu || r.status == Status::unavailable) continue;
        if (!(r.status == Status::passed && r.score >= r.max_score)) {
          problems.push_back(fmt::format("{} should keep its points ({} is not about it) but {}: {}", r.id,
                                         expect.value("why", ""), to_string(r.status), r.output));
        }
      }
    }
    // A failure message must teach without handing out the answer: no expected value of an analytic test
    // may appear in it (integers under a million are skipped: sizes and counts are shown as inputs).
    if (const auto trusted = options.trusted.find("analytic"); trusted != options.trusted.end()) {
      for (const auto& r : results) {
        if (r.kind != "analytic" || r.status != Status::failed) continue;
        const DeclaredTest t{r.id.substr(0, r.id.find('.')), r.id.substr(r.id.find('.') + 1), r.kind, 0};
        if (const std::string leak = leaked_answer(r.output, expected_values(trusted->second, t, options)); !leak.empty()) {
          problems.push_back(fmt::format("{}: its failure message shows an expected value ({}); a student would copy "
                                         "the answer from it:\n{}", r.id, leak, r.output));
        }
      }
    }
    for (const auto& f : must_not_create) {
      if (landlock_support().abi == 0) {  // no sandbox on this kernel: the grade header says so; nothing to prove
        fs::remove(f);
        continue;
      }
      if (fs::exists(f)) {
        problems.push_back(fmt::format("the submission created {} outside its sandbox", f.string()));
        fs::remove(f);
      }
    }
    for (const auto& id : expect.at("must_fail")) {
      const std::string want = id.get<std::string>();
      bool found = false;
      for (const auto& r : results) {
        if (r.id != want || r.status == Status::not_counted) continue;
        found = true;
        // A hint (no points) must fail; a graded test must lose points.
        const bool lost = r.max_score == 0 ? r.status != Status::passed : r.score < r.max_score;
        if (!lost) problems.push_back(fmt::format("{} should fail ({}) but passed", want, expect.value("why", "")));
      }
      if (!found) problems.push_back(fmt::format("expect.json names {}, which this variant does not run", want));
    }
  }
  if (problems.empty()) {
    fmt::print("selftest lab {} {}: as expected ({})\n", lab.id, v.name, v.expect);
    return kExitOk;
  }
  for (const auto& p : problems) fmt::print("selftest problem: {}\n", p);
  return kExitFailed;
}

int cmd_list(bool json) {
  const Manifest m = load_manifest(own_build_dir());
  nlohmann::json out = nlohmann::json::array();
  if (!json) fmt::print("{:<4} {:<28} {:>9} {:>6} {:>5} {:>5} {:>7}  {}\n", "lab", "title", "analytic", "emu", "gpu", "perf",
                        "static", "status");
  for (const auto& lab : m.labs) {
    std::map<std::string, double> points;
    for (const auto& b : lab.variant("main").binaries) {
      for (const auto& t : b.tests()) points[t.kind] += t.points;
    }
    const int todos = count_todos(lab.variant("main").student_dir, lab.student_files);
    const std::string status = todos == 0 ? "no stubs left" : fmt::format("{} stub steps left", todos);
    if (json) {
      out.push_back({{"id", lab.id}, {"name", lab.name}, {"title", lab.title}, {"points", points}, {"todos", todos}});
    } else {
      fmt::print("{:<4} {:<28} {:>9} {:>6} {:>5} {:>5} {:>7}  {}\n", lab.id, lab.title, points["analytic"], points["emu"],
                 points["gpu"], points["perf"], points["static"], status);
    }
  }
  if (json) {
    std::cout << out.dump(2) << "\n";
  } else {
    fmt::print("\nCorrectness points are earned once: on the GPU when there is one, else on the CPU backend (emu).\n"
               "Static checks are hints worth no points. Student files: {}\n", m.student_dir.string());
  }
  return kExitOk;
}

int cmd_calibrate([[maybe_unused]] bool remeasure) {
#if defined(ROOFLAB_HAVE_CUDA)
  std::string why;
  if (!rooflab::device_available(&why)) {
    std::cerr << "rooflab calibrate: needs a GPU, and none is usable here (" << why << ").\n"
              << "Without a GPU the graders use datasheet figures only for the analytic questions and plots.\n";
    return kExitNoGpu;
  }
  const auto info = rooflab::query_device(0);
  fmt::print("{}\n\n", rooflab::describe(info));
  const auto& c = rooflab::ceilings(0, remeasure);
  const rooflab::GpuSpec* spec = rooflab::find_gpu_by_cuda_name(info.name);
  const auto row = [&](const char* what, double measured, std::optional<double> datasheet, const char* unit) {
    if (datasheet && *datasheet > 0) {
      fmt::print("  {:<28} {:>10.1f} {:<8} datasheet {:>8.1f}  ({:.1f}%)\n", what, measured, unit, *datasheet,
                 100.0 * measured / *datasheet);
    } else {
      fmt::print("  {:<28} {:>10.1f} {:<8} datasheet     n/a\n", what, measured, unit);
    }
  };
  fmt::print("Ceilings measured {} ({}):\n", c.measured_at, spec ? spec->name : "GPU not in data/gpus.json");
  row("copy (best of kernel/memcpy)", c.copy_gbps, spec ? std::optional<double>(spec->bandwidth_gbps) : std::nullopt, "GB/s");
  row("  our vectorized copy kernel", c.copy_kernel_gbps, std::nullopt, "GB/s");
  row("  cudaMemcpy device to device", c.memcpy_gbps, std::nullopt, "GB/s");
  row("FP32 FMA (our kernel)", c.fp32_fma_flops / 1e12, spec ? std::optional<double>(spec->fp32_tflops) : std::nullopt, "TFLOP/s");
  row("SGEMM (cuBLAS)", c.sgemm_flops / 1e12, spec ? std::optional<double>(spec->fp32_tflops) : std::nullopt, "TFLOP/s");
  row("FP16 tensor GEMM (cuBLAS)", c.fp16_tensor_flops / 1e12, spec ? spec->fp16_tflops : std::nullopt, "TFLOP/s");
  row("BF16 tensor GEMM (cuBLAS)", c.bf16_tensor_flops / 1e12, spec ? spec->bf16_tflops : std::nullopt, "TFLOP/s");
  fmt::print("\ncached in {}\n", rooflab::ceilings_cache_path(info).string());
  return kExitOk;
#else
  std::cerr << "rooflab calibrate: this build has no CUDA support (no CUDA compiler was found at configure time).\n";
  return kExitNoGpu;
#endif
}

}  // namespace rooflab::grader
