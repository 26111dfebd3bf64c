#include "runner.hpp"

#include "process.hpp"
#include "util.hpp"

#include <rooflab/detail/coverage.hpp>
#include <rooflab/detail/report_reader.hpp>
#include <rooflab/detail/rubric.hpp>
#include <rooflab/specs.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <fcntl.h>
#include <unistd.h>

#include <cmath>
#include <optional>
#include <set>

namespace rooflab::grader {

std::string_view to_string(Status s) {
  switch (s) {
    case Status::passed: return "passed";
    case Status::failed: return "failed";
    case Status::needs_gpu: return "needs a GPU";
    case Status::not_counted: return "not counted";
    case Status::build_failed: return "build failed";
    case Status::crashed: return "crashed";
    case Status::timed_out: return "timed out";
    case Status::unavailable: return "needs the CUDA toolkit";
  }
  return "?";
}

namespace {

std::string backend_of(const std::string& binary_kind) {
  for (const auto& row : rooflab::rubric::test_kinds()) {
    if (row.binary == binary_kind) return row.backend;
  }
  return "host";
}

// The notes a test printed ("rooflab: ..." lines) and, for a skip, GoogleTest's "Skipped" message.
std::string notes_from_output(const std::string& out) {
  std::istringstream in(out);
  std::string line, notes;
  bool skip_message = false;
  while (std::getline(in, line)) {
    if (line.rfind("rooflab: ", 0) == 0) notes += line.substr(9) + "\n";
    if (skip_message) {
      if (line.rfind("[", 0) == 0) {
        skip_message = false;
      } else {
        notes += line + "\n";
      }
    }
    if (line.size() >= 8 && line.compare(line.size() - 8, 8, ": Skipped") == 0) skip_message = true;
  }
  return notes;
}

// A file the test process writes its report into: opened here, unlinked at once (no path to find or
// name on a command line), handed to the child as its descriptor 3 (ProcessOptions::pass_fd), read back
// with pread.
class ReportFile {
 public:
  ReportFile() {
    const std::string dir = std::filesystem::temp_directory_path().string();
    fd_ = open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd_ < 0) {  // file systems without O_TMPFILE
      std::string path = dir + "/rooflab-report-XXXXXX";
      fd_ = mkostemp(path.data(), O_CLOEXEC);
      if (fd_ >= 0) unlink(path.c_str());
    }
  }
  ~ReportFile() {
    if (fd_ >= 0) close(fd_);
  }
  ReportFile(const ReportFile&) = delete;
  ReportFile& operator=(const ReportFile&) = delete;
  int fd() const { return fd_; }
  std::string read_all() const {
    std::string out;
    if (fd_ < 0) return out;
    char buf[1 << 16];
    for (off_t off = 0;;) {
      const ssize_t n = pread(fd_, buf, sizeof buf, off);
      if (n <= 0) break;
      out.append(buf, static_cast<std::size_t>(n));
      off += n;
    }
    return out;
  }

 private:
  int fd_ = -1;
};

// The CPU backend's thread orders. The reverse and random ones also pretend a GPU with few SMs (the backend
// decides, common/emu/src/device_props.cpp), so grids are small and every grid-stride loop goes round.
// The orders are the kind's `schedules` in data/test_kinds.json ("random:SEED" is named "random").
struct Schedule {
  std::string name;
  std::string value;
};

std::vector<Schedule> schedules_of(const std::string& binary_kind) {
  std::vector<Schedule> out;
  for (const auto& row : rooflab::rubric::test_kinds()) {
    if (row.binary != binary_kind) continue;
    for (const auto& value : row.schedules) out.push_back({value.substr(0, value.find(':')), value});
    if (!out.empty()) break;
  }
  return out;
}

struct Run {
  ProcessResult process;
  report::Report report;
  std::string report_bytes;  // what the process wrote on its report channel, as parsed into `report`
};

Run run_reporting(const std::filesystem::path& binary, const DeclaredTest& test, const RunOptions& options,
                  const Schedule* schedule, const char* record) {
  ReportFile file;
  ProcessOptions popts;
  popts.timeout_s = options.timeout_s;
  popts.env = options.env;
  popts.env["ROOFLAB_EMU_QUIET"] = "1";  // the grader's own header already says how the CPU backend was used
  popts.pass_fd = file.fd();
  popts.env["ROOFLAB_REPORT_FD"] = "3";  // where run_process puts it in the child
  popts.env["ROOFLAB_RECORD"] = record;
  if (schedule != nullptr) popts.env["ROOFLAB_EMU_SCHEDULE"] = schedule->value;
  Run run;
  run.process = run_process({binary.string(), "--gtest_filter=" + test.id()}, popts);
  if (options.verbose) std::fputs(run.process.output.c_str(), stdout);
  run.report_bytes = file.read_all();
  run.report = report::parse(run.report_bytes);
  return run;
}

// The thread order a reference run of `test` uses: the first of its kind's, if it has any.
std::optional<Schedule> reference_schedule(const DeclaredTest& test) {
  const auto* row = rooflab::rubric::find_kind(test.kind);
  const auto schedules = schedules_of(row != nullptr ? row->binary : test.kind);
  if (schedules.empty()) return std::nullopt;
  return schedules.front();
}

// A report of one test that passed, whole.
bool one_pass(const report::Report& r) {
  return r.error.empty() && r.results.size() == 1 && r.results[0].value("result", "") == "passed";
}

// ---- reference runs kept on disk ----
//
// A reference run depends on the reference binary, the test, the thread order, the environment the grader gives
// it (the seed) and the course's data files, and on nothing a student sends: every known-bad case of a lab's
// selftest and every student of a class is verified against the same runs, and a second grade of the same lab
// needs none. A passing run's report is kept beside the binary, under a name hashed from all of those (a relinked
// binary or an edited data file is a new name, so nothing stale is read). Student processes cannot write there:
// the sandbox gives them the build trees read-only, and build/solutions not at all. A file that cannot be read,
// parsed, or does not say "passed" is a miss, and a folder that cannot be written is no cache.

std::uint64_t fnv1a(std::string_view bytes) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (const unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

std::optional<std::filesystem::path> reference_record_path(const std::filesystem::path& trusted, const DeclaredTest& test,
                                                           const RunOptions& options,
                                                           const std::optional<Schedule>& schedule) {
  std::string key = file_identity(trusted);
  if (key.empty()) return std::nullopt;
  key += "\n";
  std::vector<std::string> data;
  std::error_code ec;
  for (std::filesystem::directory_iterator f(rooflab::data_dir(), ec), end; !ec && f != end; f.increment(ec)) {
    if (f->is_regular_file(ec)) data.push_back(file_identity(f->path()) + "\n");
  }
  std::sort(data.begin(), data.end());
  for (const auto& d : data) key += d;
  key += fmt::format("test {}\norder {}\n", test.id(), schedule ? schedule->value : "-");
  // The report folder and the model's predictions (for plots) differ per student and change no checked value.
  for (const auto& [var, value] : options.env) {
    if (var != "ROOFLAB_REPORT_DIR" && var != "ROOFLAB_MODEL_PREDICTIONS") key += fmt::format("{}={}\n", var, value);
  }
  if (!options.env.count("ROOFLAB_SEED")) {
    const char* inherited = std::getenv("ROOFLAB_SEED");
    key += fmt::format("inherited seed {}\n", inherited != nullptr ? inherited : "");
  }
  return trusted.parent_path() / "reference-runs" / fmt::format("{:016x}.report", fnv1a(key));
}

std::optional<report::Report> kept_reference(const std::filesystem::path& file) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec)) return std::nullopt;
  report::Report kept = report::parse(read_all(file));
  if (!one_pass(kept)) return std::nullopt;
  return kept;
}

void keep_reference(const std::filesystem::path& file, const std::string& bytes) {
  std::error_code ec;
  std::filesystem::create_directories(file.parent_path(), ec);
  if (ec) return;
  const std::filesystem::path part = file.string() + fmt::format(".{}.part", getpid());
  {
    std::ofstream out(part, std::ios::binary | std::ios::trunc);
    out << bytes;
    if (!out.flush()) {
      std::filesystem::remove(part, ec);
      return;
    }
  }
  std::filesystem::rename(part, file, ec);  // atomic: two graders of one lab at once each write a whole file
  if (ec) std::filesystem::remove(part, ec);
}

// The values the reference solution's binary checks in this test (ROOFLAB_RECORD=want): run once per test and
// kept (kept_or_new_reference).
const report::Report* reference_run(const std::filesystem::path& trusted, const DeclaredTest& test,
                                    const RunOptions& options, std::string* why_not) {
  static std::map<std::string, std::optional<report::Report>> cache;
  // One key for this process and the disk: the kept run's name, made of everything the run depends on. A binary
  // that cannot be read has none (its run then fails anyway): its path and the test.
  const auto record = reference_record_path(trusted, test, options, reference_schedule(test));
  const std::string key = record ? record->string() : trusted.string() + "|" + test.id();
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, kept_or_new_reference(trusted, test, options, why_not)).first;
  if (!it->second && why_not->empty()) *why_not = "the reference run did not pass";
  return it->second ? &*it->second : nullptr;
}

// The recorded reference run of `test` (grade --reference-values), or null and why: it must exist and have
// been made with this grade's seed. The seeds are not named: a student reads the reason.
const report::Report* recorded_reference(const std::string& binary_kind, const DeclaredTest& test,
                                         const RunOptions& options, std::string* why_not) {
  const auto kind = options.recorded->find(binary_kind);
  if (kind == options.recorded->end()) {
    *why_not = fmt::format("no reference values were recorded for this lab's {} tests", binary_kind);
    return nullptr;
  }
  // The seed the test processes ran with: the grade's, else the one they inherit.
  std::optional<std::string> ours;
  const char* inherited = std::getenv("ROOFLAB_SEED");
  if (const auto seed = options.env.find("ROOFLAB_SEED"); seed != options.env.end()) {
    ours = seed->second;
  } else if (inherited != nullptr && *inherited != '\0') {
    ours = inherited;
  }
  if (kind->second.seed != ours) {
    *why_not = "the reference values were recorded with another seed than this grade's";
    return nullptr;
  }
  const auto t = kind->second.tests.find(test.id());
  if (t == kind->second.tests.end()) {
    *why_not = "no reference value was recorded for this test";
    return nullptr;
  }
  return &t->second;
}

// What a passing test is verified against: the recorded run when the grade has records, else a run of the
// reference binary of its kind.
const report::Report* reference_for(const std::string& binary_kind, const DeclaredTest& test,
                                    const RunOptions& options, std::string* why_not) {
  if (options.recorded) return recorded_reference(binary_kind, test, options, why_not);
  return reference_run(options.trusted.at(binary_kind), test, options, why_not);
}

bool verifies(const std::string& binary_kind, const RunOptions& options) {
  if (options.recorded) return verified_kind(binary_kind);
  const auto trusted = options.trusted.find(binary_kind);
  return trusted != options.trusted.end() && !trusted->second.empty();
}

// The values a passing test's process says it checked, against the reference (a process with no student
// code, or its record). Unverifiable against a record: lost, since a missing value must not win points.
void verify_result(const std::string& binary_kind, const DeclaredTest& test, const RunOptions& options,
                   const report::Report& got, TestResult& r) {
  std::string why_not;
  const report::Report* want = reference_for(binary_kind, test, options, &why_not);
  if (want == nullptr && options.recorded) {
    r.status = Status::failed;
    r.output = "not verified: " + why_not + ", so this result cannot be checked and earns nothing (tell your "
               "course staff).\n" + r.output;
  } else if (want == nullptr) {
    r.output += "\n(not verified against the reference run: " + why_not + ")";
  } else if (const report::Verdict v = report::verify(got.values, want->values); !v.ok) {
    r.status = Status::failed;
    r.output = "the results this test process reported do not match an independent run of the reference "
               "solution (a process with no student code): " + v.message + ".\n" + r.output;
  }
}

}  // namespace

std::optional<report::Report> run_reference(const std::filesystem::path& trusted, const DeclaredTest& test,
                                            const RunOptions& options, std::string* why_not, std::string* bytes) {
  // The reference binary links no student code: it runs outside the sandbox (it may live in another build
  // tree, build/solutions, that student processes must not read).
  const SandboxScope unconfined(std::nullopt);
  // The reference runs in the first of its kind's thread orders, if it has any.
  const auto schedule = reference_schedule(test);
  Run run = run_reporting(trusted, test, options, schedule ? &*schedule : nullptr, "want");
  if (run.process.ok() && one_pass(run.report)) {
    if (bytes != nullptr) *bytes = std::move(run.report_bytes);
    return std::move(run.report);
  }
  *why_not = fmt::format("the reference run did not pass ({})", run.process.describe());
  return std::nullopt;
}

std::optional<report::Report> kept_or_new_reference(const std::filesystem::path& trusted, const DeclaredTest& test,
                                                    const RunOptions& options, std::string* why_not) {
  const auto record = reference_record_path(trusted, test, options, reference_schedule(test));
  if (record) {
    if (auto kept = kept_reference(*record)) return kept;
  }
  std::string bytes;
  auto run = run_reference(trusted, test, options, why_not, &bytes);
  if (run && record) keep_reference(*record, bytes);
  return run;
}

std::vector<double> expected_values(const std::filesystem::path& trusted, const DeclaredTest& test,
                                    const RunOptions& options) {
  std::string why_not;
  std::vector<double> out;
  if (const report::Report* r = reference_run(trusted, test, options, &why_not)) {
    for (const auto& v : r->values) out.insert(out.end(), v.data.begin(), v.data.end());
  }
  return out;
}

std::string leaked_answer(const std::string& output, const std::vector<double>& expected) {
  // The student's own answer may coincide with the right answer to another case: it is not a leak.
  static const std::regex own_answer(R"(your answer \S+)");
  const std::string shown_text = std::regex_replace(output, own_answer, "");
  for (const double want : expected) {
    if (want == std::floor(want) && std::abs(want) < 1e6) continue;  // sizes and counts are shown as inputs
    std::ostringstream stream;
    stream << want;
    for (const std::string& shown : {fmt::format("{:.9g}", want), fmt::format("{:g}", want), stream.str()}) {
      if (shown_text.find(shown) != std::string::npos) return shown;
    }
  }
  return "";
}

namespace {

// The kernels a CPU-backend test process says it holds and launched (for a hint only: a process can claim
// anything, and no points depend on it).
void read_kernels(const nlohmann::json& result, TestResult* r) {
  const auto kernels = result.find("kernels");
  if (kernels == result.end() || !kernels->is_object()) return;
  const auto names = [&](const char* key) {
    std::vector<std::string> out;
    for (const auto& k : kernels->value(key, nlohmann::json::array())) {
      if (k.is_string()) out.push_back(k.get<std::string>());
    }
    return out;
  };
  r->kernels_defined = names("defined");
  r->kernels_launched = names("launched");
}

TestResult run_one(const Lab& lab, const Binary& binary, const DeclaredTest& test, const RunOptions& options,
                   const Schedule* schedule) {
  const bool verify = verifies(binary.kind, options);
  const Run run = run_reporting(binary.path, test, options, schedule, verify ? "got" : "");
  const ProcessResult& p = run.process;

  TestResult r;
  if (p.timed_out || p.signaled || p.failed_to_start) {
    r.status = p.timed_out ? Status::timed_out : (p.signaled ? Status::crashed : Status::failed);
    // The CPU backend's own report of the fault (kernel, block, thread, how far out of bounds) goes first.
    std::string reports;
    std::istringstream lines(p.output);
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("rooflab emu:", 0) == 0) reports += line + "\n";
    }
    r.output = fmt::format("{}the test process {}; its last output:\n{}", reports, p.describe(), tail_lines(p.output, 25));
  } else {
    r = interpret_report(run.report, p.exit_code, test);
    if (r.status == Status::failed && r.output.empty()) {
      r.output = fmt::format("the test process {}; its last output:\n{}", p.describe(), tail_lines(p.output, 25));
    }
    const std::string notes = notes_from_output(p.output);
    if (!notes.empty()) r.output = notes + (r.output.empty() ? "" : "\n" + r.output);
  }
  // GPU results only where the grader itself found a GPU (a test process can claim anything).
  if (binary.kind == "gpu" && !options.gpu_present && r.status == Status::passed) {
    r.status = Status::needs_gpu;
    r.output = "the grader found no GPU on this machine, so this result cannot come from one: not counted.\n" + r.output;
  }
  // A perf test cannot have timed more kernel time than its process lived.
  if (r.status == Status::passed && run.report.claimed_kernel_seconds > p.seconds) {
    r.status = Status::failed;
    r.output = fmt::format("rejected as implausible: the test claims {:.3f} s of timed kernels but its process ran "
                           "{:.3f} s.\n{}", run.report.claimed_kernel_seconds, p.seconds, r.output);
  }
  // The values this process says it checked, against a run of the reference solution (no student code).
  if (verify && r.status == Status::passed) verify_result(binary.kind, test, options, run.report, r);
  // A test ends everything it starts: what it left running (a daemon, a setsid or double-forked child) was
  // killed by the grader (process.hpp), and the test is lost for it whatever it reported.
  if (!p.left_running.empty()) {
    if (r.status == Status::passed) r.status = Status::failed;
    r.output = fmt::format("left {} process{} running after it ended (the grader killed {}; a test must wait for "
                           "every process it starts): {}\n{}",
                           p.left_running.size(), p.left_running.size() == 1 ? "" : "es",
                           p.left_running.size() == 1 ? "it" : "them", fmt::join(p.left_running, "; "), r.output);
  }
  if (binary.kind == "dryrun") {
    r.output = "DRY RUN: the GPU code path on the CPU backend at scaled-down sizes; every figure here is a CPU "
               "timing of a pretend GPU, not a GPU measurement, and earns nothing.\n" + r.output;
  }
  r.lab = lab.id;
  r.id = test.id();
  r.kind = test.kind;
  r.backend = backend_of(binary.kind);
  r.max_score = test.points;
  r.seconds = p.seconds;
  if (binary.kind == "emu" && run.report.results.size() == 1) read_kernels(run.report.results[0], &r);
  if (r.status != Status::passed) r.score = 0;
  return r;
}

}  // namespace

TestResult interpret_report(const report::Report& rep, int exit_code, const DeclaredTest& test) {
  TestResult r;
  r.max_score = test.points;
  r.status = Status::failed;
  if (!rep.error.empty()) {
    r.output = "unreadable test report (" + rep.error + "): something in the process wrote on the grader's channel";
    return r;
  }
  if (rep.results.empty()) {
    r.output = fmt::format("the test process ended (exit code {}) without reporting a result for {}: code that ran "
                           "before or instead of the test (a global initializer, exit() in a student file) ended it, "
                           "or the binary does not contain the test", exit_code, test.id());
    return r;
  }
  if (rep.results.size() != 1 || rep.started.size() != 1) {
    r.output = fmt::format("the test process reported {} results for one test: not trusted", rep.results.size());
    return r;
  }
  const auto& t = rep.results[0];
  const auto& s = rep.started[0];
  if (t.value("suite", "") != test.suite || t.value("name", "") != test.name || s.value("suite", "") != test.suite ||
      s.value("name", "") != test.name) {
    r.output = fmt::format("the test process reported on {}.{}, not on {}: not trusted", t.value("suite", "?"),
                           t.value("name", "?"), test.id());
    return r;
  }
  // The ceilings it judged by and what it measured against them (rooflab::grading::award): data for results.json,
  // whatever the result.
  const nlohmann::json properties = t.value("properties", nlohmann::json::object());
  for (const auto& [key, value] : properties.items()) {
    const bool ceiling = key.rfind("rooflab_ceiling.", 0) == 0, measure = key.rfind("rooflab_measure.", 0) == 0;
    if (!ceiling && !measure) continue;
    try {
      const nlohmann::json record = nlohmann::json::parse(value.get<std::string>());
      if (ceiling) {
        r.ceilings.push_back(record.get<CeilingInForce>());
      } else {
        r.measures.push_back(record.get<Measure>());
      }
    } catch (const nlohmann::json::exception&) {
      r.output = fmt::format("the test reported a malformed {} ({}): not trusted", ceiling ? "ceiling" : "measure", key);
      return r;
    }
  }
  const std::string result = t.value("result", "");
  if (result == "skipped") {
    if (exit_code != 77 && exit_code != 0) {
      r.output = fmt::format("the test reported a skip but its process exited with code {}", exit_code);
      return r;
    }
    r.status = Status::needs_gpu;
    r.output = t.value("skip", "");
    return r;
  }
  if (result == "failed") {
    // An exception escaping the test (a stub's NotImplemented, a CUDA error) is shown as its message.
    static const std::regex thrown(R"re(C\+\+ exception with description "([\s\S]*)" thrown in the test body\.)re");
    for (const auto& f : t.value("failures", nlohmann::json::array())) {
      std::string text = std::regex_replace(f.get<std::string>(), thrown, "$1");
      if (text.rfind("Failed\n", 0) == 0) text.erase(0, 7);  // ADD_FAILURE's own heading
      r.output += text + "\n";
      r.failures.push_back(std::move(text));
    }
    return r;
  }
  if (result != "passed") {
    r.output = "the test process reported an unknown result \"" + result + "\"";
    return r;
  }
  if (exit_code != 0) {
    r.output = fmt::format("the test reported a pass but its process exited with code {} (code after the test "
                           "failed, or something tampered with the result)", exit_code);
    return r;
  }
  // A perf test's score is the fraction it awards (rooflab::grading::award): a perf test that passed without one
  // stopped before it measured, or something hid its failures. Other kinds pass or fail whole.
  if (test.kind == "perf" && !properties.contains("rooflab_fraction")) {
    r.output = "the perf test passed without awarding a score (its figure never reached award(): the test stopped "
               "before it measured, or something in the process hid its failures): not trusted";
    return r;
  }
  double fraction = 1.0;
  if (properties.contains("rooflab_fraction")) {
    try {
      fraction = std::stod(properties["rooflab_fraction"].get<std::string>());
    } catch (const std::exception&) {
      fraction = std::nan("");
    }
    if (!(fraction >= 0.0 && fraction <= 1.0)) {  // NaN fails too
      r.output = fmt::format("the test reported a score fraction of {} (outside [0, 1]): not trusted",
                             properties["rooflab_fraction"].dump());
      return r;
    }
  }
  r.status = Status::passed;
  r.score = test.points * fraction;
  return r;
}

std::vector<TestResult> run_binary(const Lab& lab, const Binary& binary, const RunOptions& options,
                                   const std::string& build_error) {
  std::vector<TestResult> out;
  for (const auto& test : binary.tests()) {
    if (!wanted_test(test, options.only_tests)) continue;
    // A test not run here: owed, skipped or lost without starting a process.
    const auto not_run = [&](Status status, std::string output, std::string backend) {
      TestResult r;
      r.lab = lab.id;
      r.id = test.id();
      r.kind = test.kind;
      r.backend = std::move(backend);
      r.max_score = test.points;
      r.status = status;
      r.output = std::move(output);
      out.push_back(std::move(r));
    };
    if (!binary.unavailable.empty()) {
      not_run(Status::unavailable, "not graded on this machine: " + binary.unavailable, backend_of(binary.kind));
      continue;
    }
    if (!options.needs_gpu_reason.empty()) {
      not_run(Status::needs_gpu, options.needs_gpu_reason, backend_of(binary.kind));
      continue;
    }
    if (!options.skip_reason.empty()) {
      not_run(Status::failed, options.skip_reason, backend_of(binary.kind));
      continue;
    }
    if (!build_error.empty()) {
      not_run(Status::build_failed, build_error, "compiler output");
      continue;
    }
    const auto schedules = schedules_of(binary.kind);
    if (schedules.empty()) {
      out.push_back(run_one(lab, binary, test, options, nullptr));
      continue;
    }
    // The CPU backend: the test must pass under every schedule; report the first one that fails.
    TestResult first;
    bool have_first = false;
    for (const auto& s : schedules) {
      TestResult r = run_one(lab, binary, test, options, &s);
      if (!have_first) {
        first = r;
        have_first = true;
      }
      if (r.status != Status::passed) {
        if (&s != &schedules[0] && first.status == Status::passed) {
          r.output = fmt::format("passes with the {} thread order but fails with the {} one: the result depends on "
                                 "the order of threads, which on a GPU is not fixed (a missing __syncthreads or a "
                                 "race; or, with that order's few pretend SMs, a grid-stride loop that does not go "
                                 "round).\n{}",
                                 schedules[0].name, s.name, r.output);
        }
        first = r;
        break;
      }
      if (!options.all_schedules && options.all_schedules_for.count(test.id()) == 0) break;
    }
    out.push_back(std::move(first));
  }
  return out;
}

TestResult lab_check(const Lab& lab, std::string id, std::string backend, Status status) {
  TestResult r;
  r.lab = lab.id;
  r.id = std::move(id);
  r.kind = "static";
  r.backend = std::move(backend);
  r.status = status;
  return r;
}

std::optional<TestResult> untested_kernels_check(const Lab& lab, const std::vector<TestResult>& results) {
  std::set<std::string> defined, launched;
  for (const auto& r : results) {
    defined.insert(r.kernels_defined.begin(), r.kernels_defined.end());
    launched.insert(r.kernels_launched.begin(), r.kernels_launched.end());
  }
  if (defined.empty()) return std::nullopt;
  TestResult hint =
      lab_check(lab, fmt::format("Lab{}Coverage.EveryKernelTested", lab.id), "CPU backend", Status::passed);
  for (const auto& k : defined) {
    if (launched.count(k) == 0) hint.output += "code no grade checked: " + k + "\n";
  }
  if (hint.output.empty()) {
    hint.output = fmt::format("every one of the {} kernel instances compiled was launched by a test", defined.size());
    return hint;
  }
  hint.status = Status::failed;
  hint.output = "hint, no points lost: no test launched these kernel instances, so no grade checked them (a branch "
                "of a launcher that no test's values take; test it yourself, or remove code that never runs):\n" +
                hint.output;
  return hint;
}

std::optional<TestResult> untested_lines_check(const Lab& lab, const Binary& emu, const RunOptions& options,
                                               const std::string& build_error) {
  if (emu.kind != "emu" || emu.coverage_path.empty()) return std::nullopt;
  TestResult hint =
      lab_check(lab, fmt::format("Lab{}Coverage.EveryLineTested", lab.id), "CPU backend", Status::failed);
  const std::string not_measured = "hint, no points lost: which of your lines the tests ran was not measured: ";
  if (!build_error.empty()) {
    hint.output = not_measured + "the coverage build failed:\n" + build_error;
    return hint;
  }
  ReportFile file;
  ProcessOptions popts;
  popts.timeout_s = options.timeout_s;
  popts.env = options.env;
  popts.env["ROOFLAB_EMU_QUIET"] = "1";
  popts.env["ROOFLAB_EMU_SCHEDULE"] = "reverse";  // the order whose pretend GPU has 2 SMs: loops go round the grid
  popts.pass_fd = file.fd();
  popts.env["ROOFLAB_REPORT_FD"] = "3";
  const ProcessResult p = run_process({emu.coverage_path.string()}, popts);
  hint.seconds = p.seconds;
  const report::Report rep = report::parse(file.read_all());
  if (!rep.coverage) {
    hint.output = not_measured + "the run of every correctness test with coverage counters " + p.describe() + "\n" +
                  tail_lines(p.output, 10);
    return hint;
  }
  if (rep.coverage->contains("error")) {
    hint.output = not_measured + rep.coverage->value("error", "");
    return hint;
  }
  std::vector<coverage::Gap> gaps;
  try {
    gaps = coverage::from_json(rep.coverage->at("gaps"));
  } catch (const nlohmann::json::exception& e) {
    hint.output = not_measured + "its report is malformed (" + e.what() + ")";
    return hint;
  }
  if (gaps.empty()) {
    hint.status = Status::passed;
    hint.output = "every line and branch of your .cu files ran in a correctness test";
    return hint;
  }
  hint.output = "hint, no points lost: no correctness test ran these lines or took these branches, so no grade "
                "checked them (a path for sizes, alignments or values the tests never use: test it yourself with "
                "such inputs, or remove code that never runs):\n" + coverage::describe(gaps);
  return hint;
}

void settle_correctness(std::vector<TestResult>& results, bool gpu_present) {
  // Correctness is graded on the GPU when the grader itself found one, else on the CPU backend: never
  // decided from what a test process reported (a GPU binary that cannot start without a driver must not
  // cost the CPU backend's points, and a process claiming a GPU must not earn them).
  for (auto& r : results) {
    const bool other = gpu_present ? r.kind == "emu" : r.kind == "gpu";
    if (!other) continue;
    r.max_score = 0;
    r.score = 0;
    if (r.status == Status::needs_gpu || r.status == Status::passed || r.status == Status::unavailable) {
      r.status = Status::not_counted;
    }
    r.output = (gpu_present ? "correctness is graded on the GPU; this CPU-backend result is shown for reference.\n"
                            : "correctness is graded on the CPU backend here (no GPU).\n") + r.output;
  }
}

// ---- recorded reference values (gradescope-package) ----

bool wanted_test(const DeclaredTest& test, const std::string& only) {
  return only.empty() || test.id().find(only) != std::string::npos;
}

bool verified_kind(const std::string& binary_kind) {
  return binary_kind == "analytic" || binary_kind == "emu" || binary_kind == "gpu";
}

namespace {

constexpr std::string_view kRecordFormat = "rooflab reference values 1";
constexpr std::string_view kBase64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string base64(const std::string& bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    const std::size_t n = std::min<std::size_t>(3, bytes.size() - i);
    std::uint32_t word = 0;
    for (std::size_t k = 0; k < 3; ++k) word = word << 8 | (k < n ? static_cast<unsigned char>(bytes[i + k]) : 0u);
    for (std::size_t k = 0; k < 4; ++k) out += k <= n ? kBase64[(word >> (18 - 6 * k)) & 63] : '=';
  }
  return out;
}

// std::nullopt when `text` is not base64 (with its '=' padding).
std::optional<std::string> unbase64(const std::string& text) {
  if (text.size() % 4 != 0) return std::nullopt;
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (std::size_t i = 0; i < text.size(); i += 4) {
    std::uint32_t word = 0;
    int pad = 0;
    for (std::size_t k = 0; k < 4; ++k) {
      const char c = text[i + k];
      const std::size_t digit = kBase64.find(c);
      const bool padding = c == '=' && k >= 2 && i + 4 == text.size() && (k == 3 || text[i + 3] == '=');
      if (digit == std::string_view::npos && !padding) return std::nullopt;
      pad += padding ? 1 : 0;
      word = word << 6 | (padding ? 0u : static_cast<std::uint32_t>(digit));
    }
    for (int k = 0; k < 3 - pad; ++k) out += static_cast<char>((word >> (16 - 8 * k)) & 0xff);
  }
  return out;
}

// Data that float32 holds exactly goes as float32 (the channel's own type for float outputs): half the bytes.
nlohmann::json values_json(const report::Values& v) {
  const bool f32 = std::all_of(v.data.begin(), v.data.end(), [](double x) {
    return std::isnan(x) || static_cast<double>(static_cast<float>(x)) == x;
  });
  std::string bytes;
  for (const double x : v.data) {
    const float f = static_cast<float>(x);
    bytes.append(f32 ? reinterpret_cast<const char*>(&f) : reinterpret_cast<const char*>(&x), f32 ? 4 : 8);
  }
  return {{"label", v.label}, {"atol", v.atol}, {"rtol", v.rtol}, {"dtype", f32 ? "f32" : "f64"},
          {"count", v.data.size()}, {"data", base64(bytes)}};
}

report::Values parse_values(const nlohmann::json& j) {
  report::Values v;
  v.label = j.at("label").get<std::string>();
  v.atol = j.at("atol").get<double>();
  v.rtol = j.at("rtol").get<double>();
  const std::string dtype = j.at("dtype").get<std::string>();
  const std::size_t count = j.at("count").get<std::size_t>();
  const std::size_t width = dtype == "f32" ? 4 : dtype == "f64" ? 8 : 0;
  const auto bytes = unbase64(j.at("data").get<std::string>());
  if (width == 0 || !bytes || bytes->size() != count * width) {
    throw std::runtime_error(fmt::format("comparison \"{}\": its data is not {} {} values in base64", v.label,
                                         count, dtype));
  }
  for (std::size_t i = 0; i < count; ++i) {
    float f = 0;
    double d = 0;
    if (width == 4) std::memcpy(&f, bytes->data() + 4 * i, 4);
    if (width == 8) std::memcpy(&d, bytes->data() + 8 * i, 8);
    v.data.push_back(width == 4 ? static_cast<double>(f) : d);
  }
  return v;
}

}  // namespace

nlohmann::json recorded_json(const RecordedReference& rec) {
  nlohmann::json tests = nlohmann::json::object();
  for (const auto& [id, report] : rec.tests) {
    nlohmann::json values = nlohmann::json::array();
    for (const auto& v : report.values) values.push_back(values_json(v));
    tests[id] = {{"values", values}};
  }
  return {{"format", kRecordFormat}, {"lab", rec.lab}, {"kind", rec.kind},
          {"seed", rec.seed ? nlohmann::json(*rec.seed) : nlohmann::json(nullptr)}, {"about", rec.about},
          {"tests", tests}};
}

RecordedReference parse_recorded(const nlohmann::json& j, const std::string& where) {
  RecordedReference rec;
  try {
    if (!j.is_object() || j.value("format", "") != kRecordFormat) {
      throw std::runtime_error(fmt::format("not a record of reference values (its \"format\" is not \"{}\")",
                                           kRecordFormat));
    }
    rec.lab = j.at("lab").get<std::string>();
    rec.kind = j.at("kind").get<std::string>();
    if (!j.at("seed").is_null()) rec.seed = j.at("seed").get<std::string>();
    rec.about = j.value("about", nlohmann::json::object());
    for (const auto& [id, test] : j.at("tests").items()) {
      report::Report& r = rec.tests[id];
      for (const auto& v : test.at("values")) r.values.push_back(parse_values(v));
    }
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("reference values {}: malformed: {}", where, e.what()));
  }
  return rec;
}

std::map<std::string, RecordedReference> read_reference_values(const std::filesystem::path& dir,
                                                               const std::string& lab_id) {
  std::map<std::string, RecordedReference> out;
  for (const auto& kind : rooflab::rubric::binary_kinds()) {
    const std::filesystem::path file = dir / lab_id / (kind + ".json");
    if (!verified_kind(kind) || !std::filesystem::exists(file)) continue;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(read_all(file));
    } catch (const nlohmann::json::exception& e) {
      throw std::runtime_error(fmt::format("reference values {}: not JSON: {}", file.string(), e.what()));
    }
    RecordedReference rec = parse_recorded(j, file.string());
    if (rec.lab != lab_id || rec.kind != kind) {
      throw std::runtime_error(fmt::format("reference values {}: recorded for lab {} {}, not lab {} {}",
                                           file.string(), rec.lab, rec.kind, lab_id, kind));
    }
    out.emplace(kind, std::move(rec));
  }
  return out;
}

}  // namespace rooflab::grader
