// Running a lab's tests and scoring them. Every test runs in its own process with a time limit, so a
// kernel that crashes or hangs fails that test with the reason and the others still run. CPU-backend
// tests run under the forward, reverse and random thread schedules and pass only if they pass under all
// three (a missing __syncthreads makes the result depend on the order).
#pragma once

#include "manifest.hpp"

#include <rooflab/testing/ceiling.hpp>
#include <rooflab/detail/report_reader.hpp>

#include <nlohmann/json.hpp>

#include <filesystem>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace rooflab::grader {

enum class Status {
  passed,        // earned its points (perf: a fraction of them)
  failed,        // ran and failed
  needs_gpu,     // skipped: no GPU here; its points are not earned
  not_counted,   // correctness graded by the other backend (max_score 0)
  build_failed,  // the binary did not compile: every test in it is lost
  crashed,       // the test process died (signal)
  timed_out,     // the test process hung
  unavailable,   // this machine cannot build the binary (no CUDA toolkit): points owed, not graded
};
std::string_view to_string(Status s);

struct TestResult {
  std::string lab;      // "01"
  std::string id;       // Suite.Name
  std::string kind;     // analytic | emu | gpu | perf | static
  std::string backend;  // "host", "CPU backend", "GPU", "compiler output"
  double max_score = 0;
  double score = 0;
  Status status = Status::failed;
  std::string output;   // why it failed, notes, measured figures
  double seconds = 0;
  std::vector<CeilingInForce> ceilings = {};  // perf: the ceilings it was judged against (results.json carries them)
  std::vector<Measure> measures = {};  // perf on a GPU: what award() judged (results.json's "rooflab_measures")
  // CPU backend: the kernel instances the test binary holds and those its process launched (test_main.cpp).
  std::vector<std::string> kernels_defined = {};
  std::vector<std::string> kernels_launched = {};
  std::vector<std::string> failures = {};  // each failure the test reported, as GoogleTest worded it (terminal summary)
};

// A reference run recorded ahead of time (gradescope-package): what the reference solutions' test binary of
// one kind checked in each of its tests, run as verification runs it, with the seed it ran with. It lets a
// grade verify without the solutions' sources or binaries (docs/instructor-guide.md, Gradescope).
struct RecordedReference {
  std::string lab;                  // "02"
  std::string kind;                 // binary kind: analytic | emu
  std::optional<std::string> seed;  // ROOFLAB_SEED of the run; nullopt: the tests' own default
  nlohmann::json about = nlohmann::json::object();  // commit, rooflab version, when (for people; not checked)
  std::map<std::string, report::Report> tests;       // Suite.Name -> its values (only `values` is kept)
};

// The binary kinds whose tests verification checks against the reference solutions (the rest are judged by
// the grader itself: perf claims, compiler output, hints).
bool verified_kind(const std::string& binary_kind);
// Whether `test` is one that `only` (RunOptions::only_tests, grade --test) asks for: its id contains the text;
// every test when it is empty.
bool wanted_test(const DeclaredTest& test, const std::string& only);

// The record as one JSON document (reference/<lab>/<kind>.json in a package). Values are kept exactly: each
// comparison's data as base64 of little-endian float32 when every value is one, else float64.
nlohmann::json recorded_json(const RecordedReference& recorded);
// Reads a record back; std::runtime_error naming `where` and what is wrong with it.
RecordedReference parse_recorded(const nlohmann::json& j, const std::string& where);
// Lab `lab_id`'s records in DIR (DIR/<lab>/<kind>.json), by kind; a kind without a file is left out (its tests
// are then not verified and earn nothing). std::runtime_error on a malformed one.
std::map<std::string, RecordedReference> read_reference_values(const std::filesystem::path& dir,
                                                               const std::string& lab_id);

struct RunOptions {
  double timeout_s = 300;
  bool all_schedules = true;  // emu tests under forward, reverse and random
  // With all_schedules false, the tests that still run under every order (a known-bad case's must_fail
  // tests: the bug may show in one order only); every other test runs in the first order.
  std::set<std::string> all_schedules_for;
  std::map<std::string, std::string> env;  // extra environment for every test (seed, report dir)
  bool verbose = false;
  bool gpu_present = false;
  std::string skip_reason;   // non-empty: the binary's tests are not run, and fail with this reason
  std::string needs_gpu_reason;  // non-empty: the binary is not run here; its tests stay owed ("needs a GPU")
  std::string only_tests;    // non-empty: run only the tests whose id contains it (the others are left out)  // the grader's own detection: GPU results count only where it found a GPU
  // Per binary kind, the same test binary built from the reference solutions: each passing test's checked
  // values are compared with a run of it (rooflab/detail/report.hpp). Empty: not verified.
  std::map<std::string, std::filesystem::path> trusted;
  // Instead of `trusted`: the reference runs gradescope-package recorded, per binary kind (grade
  // --reference-values). Every test of a verified kind is checked against them, and one they cannot verify
  // (no record of it, or one made with another seed) earns nothing.
  std::optional<std::map<std::string, RecordedReference>> recorded;
};

// Runs every test a binary declares. `build_error` non-empty: the binary did not compile; every declared
// test is reported lost with the compiler's message.
std::vector<TestResult> run_binary(const Lab& lab, const Binary& binary, const RunOptions& options,
                                   const std::string& build_error = {});

// Correctness is graded once: on the GPU when the grader found one, else on the CPU backend. The other
// backend's tests are kept in the report with max_score 0.
void settle_correctness(std::vector<TestResult>& lab_results, bool gpu_present);

// Code no grade checked: a kernel instance the student's CPU-backend test binary holds that none of its tests
// launched (a launcher's branch no test takes, for a value no test passes). A hint worth no points
// (LabNNCoverage.EveryKernelTested), failed when there is such an instance; nullopt when no CPU-backend test
// reported its kernels.
std::optional<TestResult> untested_kernels_check(const Lab& lab, const std::vector<TestResult>& lab_results);

// A result the grader makes itself about the whole lab (a check or a hint, no test process's): the lab, the
// id, kind "static", the backend named and the status given.
TestResult lab_check(const Lab& lab, std::string id, std::string backend, Status status);

// Code no test ran: the lines and branch outcomes of the student's .cu files that none of the correctness tests
// reached, from one run of the emu binary's coverage build (Binary::coverage_path, built), under the reverse
// order (2 pretend SMs), as every test is graded. A hint worth no points (LabNNCoverage.EveryLineTested), failed
// when there is such code or when it could not be measured; nullopt when the build has no coverage binary.
std::optional<TestResult> untested_lines_check(const Lab& lab, const Binary& emu, const RunOptions& options,
                                               const std::string& build_error = {});

// The values the reference solution's run of `test` expects (what the grader verifies against; cached in the
// process and on disk).
// Empty when that run did not pass.
std::vector<double> expected_values(const std::filesystem::path& trusted, const DeclaredTest& test,
                                    const RunOptions& options);

// One run of the reference solution's binary `trusted` on `test`, as verification runs it (ROOFLAB_RECORD=want,
// the kind's first thread order, options.env, outside the sandbox): its report when the test passed, else
// nullopt and why in *why_not. gradescope-package records these. `bytes`: where to put the report as the process
// wrote it (the grader keeps passing reference runs on disk, beside the binary: runner.cpp says when they are read).
std::optional<report::Report> run_reference(const std::filesystem::path& trusted, const DeclaredTest& test,
                                            const RunOptions& options, std::string* why_not,
                                            std::string* bytes = nullptr);

// The reference run verification uses (what expected_values and every verified test read, cached in the process
// on top): the passing run kept on disk beside `trusted` when there is one for this binary, test, thread order,
// environment and data files (runner.cpp, "reference runs kept on disk"), else run_reference, kept when it passed.
std::optional<report::Report> kept_or_new_reference(const std::filesystem::path& trusted, const DeclaredTest& test,
                                                    const RunOptions& options, std::string* why_not);

// A failure message must teach without handing out the answer: the first expected value that `output`
// shows (outside "your answer X"), or "". Integers under a million are not counted (sizes, counts).
std::string leaked_answer(const std::string& output, const std::vector<double>& expected);

// What a test process's report and exit code say about the one test it was asked to run (exposed for the
// grader's own tests). Passed only when both agree and the report names exactly that test.
TestResult interpret_report(const report::Report& report, int exit_code, const DeclaredTest& test);

}  // namespace rooflab::grader
