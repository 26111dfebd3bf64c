#include "runner.hpp"

#include "process.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <regex>
#include <sstream>
#include <unistd.h>

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
  if (binary_kind == "emu") return "CPU backend";
  if (binary_kind == "race") return "CPU backend (race mode)";
  if (binary_kind == "gpu") return "GPU";
  if (binary_kind == "static") return "compiler output";
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

std::filesystem::path temp_json() {
  static int counter = 0;
  return std::filesystem::temp_directory_path() / fmt::format("rooflab-{}-{}.json", getpid(), counter++);
}

struct Schedule {
  const char* name;
  const char* value;
};
constexpr Schedule kSchedules[] = {{"forward", "forward"}, {"reverse", "reverse"}, {"random", "random:20261122"}};

TestResult run_one(const Lab& lab, const Binary& binary, const DeclaredTest& test, const RunOptions& options,
                   const char* schedule) {
  const auto json_path = temp_json();
  ProcessOptions popts;
  popts.timeout_s = options.timeout_s;
  popts.env = options.env;
  popts.env["ROOFLAB_EMU_QUIET"] = "1";  // the grader's own header already says how the CPU backend was used
  if (schedule != nullptr) popts.env["ROOFLAB_EMU_SCHEDULE"] = schedule;
  const ProcessResult p = run_process(
      {binary.path.string(), "--gtest_filter=" + test.id(), "--gtest_output=json:" + json_path.string()}, popts);
  if (options.verbose) std::fputs(p.output.c_str(), stdout);

  TestResult r;
  std::string json_text;
  if (std::FILE* f = std::fopen(json_path.c_str(), "rb")) {
    char buf[65536];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) json_text.append(buf, n);
    std::fclose(f);
    std::filesystem::remove(json_path);
  }
  if (p.timed_out || p.signaled || p.failed_to_start || json_text.empty()) {
    r.status = p.timed_out ? Status::timed_out : (p.signaled ? Status::crashed : Status::failed);
    // The CPU backend's own report of the fault (kernel, block, thread, how far out of bounds) goes first.
    std::string reports;
    std::istringstream lines(p.output);
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("rooflab emu:", 0) == 0) reports += line + "\n";
    }
    r.output = fmt::format("{}the test process {}; its last output:\n{}", reports, p.describe(), tail_lines(p.output, 25));
  } else {
    r = interpret_gtest_json(json_text, test);
    const std::string notes = notes_from_output(p.output);
    if (!notes.empty()) r.output = notes + (r.output.empty() ? "" : "\n" + r.output);
  }
  r.lab = lab.id;
  r.id = test.id();
  r.kind = test.kind;
  r.backend = backend_of(binary.kind);
  r.max_score = test.points;
  r.seconds = p.seconds;
  if (r.status != Status::passed) r.score = 0;
  return r;
}

}  // namespace

TestResult interpret_gtest_json(const std::string& json_text, const DeclaredTest& test) {
  TestResult r;
  r.max_score = test.points;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::exception& e) {
    r.status = Status::failed;
    r.output = std::string("unreadable test report: ") + e.what();
    return r;
  }
  for (const auto& suite : j.value("testsuites", nlohmann::json::array())) {
    for (const auto& t : suite.value("testsuite", nlohmann::json::array())) {
      if (t.value("classname", "") != test.suite || t.value("name", "") != test.name) continue;
      if (t.value("result", "") == "SKIPPED") {
        r.status = Status::needs_gpu;
        return r;
      }
      if (t.contains("failures") && !t["failures"].empty()) {
        r.status = Status::failed;
        // An exception escaping the test (a stub's NotImplemented, a CUDA error) is shown as its message.
        static const std::regex thrown(R"re(unknown file\nC\+\+ exception with description "([\s\S]*)" thrown in the test body\.)re");
        // GoogleTest starts each failure with the test file's path and line: noise for a student.
        static const std::regex location(R"re((^|\n)(/[^\n]*:[0-9]+|unknown file)\n)re");
        for (const auto& f : t["failures"]) {
          std::string text = std::regex_replace(f.value("failure", ""), thrown, "$1");
          text = std::regex_replace(text, location, "$1");
          r.output += text + "\n";
        }
        return r;
      }
      r.status = Status::passed;
      double fraction = 1.0;
      if (t.contains("rooflab_fraction")) fraction = std::stod(t["rooflab_fraction"].get<std::string>());
      r.score = test.points * fraction;
      return r;
    }
  }
  r.status = Status::failed;
  r.output = fmt::format("{} did not run: the binary does not contain it (is the test source out of step with the "
                         "build?)", test.id());
  return r;
}

std::vector<TestResult> run_binary(const Lab& lab, const Binary& binary, const RunOptions& options,
                                   const std::string& build_error) {
  std::vector<TestResult> out;
  for (const auto& test : binary.tests()) {
    if (!binary.unavailable.empty()) {
      TestResult r;
      r.lab = lab.id;
      r.id = test.id();
      r.kind = test.kind;
      r.backend = backend_of(binary.kind);
      r.max_score = test.points;
      r.status = Status::unavailable;
      r.output = "not graded on this machine: " + binary.unavailable;
      out.push_back(std::move(r));
      continue;
    }
    if (!build_error.empty()) {
      TestResult r;
      r.lab = lab.id;
      r.id = test.id();
      r.kind = test.kind;
      r.backend = "compiler output";
      r.max_score = test.points;
      r.status = Status::build_failed;
      r.output = build_error;
      out.push_back(std::move(r));
      continue;
    }
    if (binary.kind != "emu") {
      out.push_back(run_one(lab, binary, test, options, nullptr));
      continue;
    }
    // The CPU backend: the test must pass under every schedule; report the first one that fails.
    TestResult first;
    bool have_first = false;
    for (const auto& s : kSchedules) {
      TestResult r = run_one(lab, binary, test, options, s.value);
      if (!have_first) {
        first = r;
        have_first = true;
      }
      if (r.status != Status::passed) {
        if (&s != &kSchedules[0] && first.status == Status::passed) {
          r.output = fmt::format("passes with the {} thread order but fails with the {} one: the result depends on "
                                 "the order of threads, which on a GPU is not fixed (a missing __syncthreads or a "
                                 "race).\n{}", kSchedules[0].name, s.name, r.output);
        }
        first = r;
        break;
      }
      if (!options.all_schedules) break;
    }
    out.push_back(std::move(first));
  }
  return out;
}

void settle_correctness(std::vector<TestResult>& results) {
  // The GPU graded correctness if any of its correctness tests actually ran (a binary that did not compile
  // says nothing about whether there is a GPU; then the CPU backend's results count).
  bool gpu_ran = false;
  for (const auto& r : results) {
    if (r.kind == "gpu" && r.status != Status::needs_gpu && r.status != Status::build_failed &&
        r.status != Status::unavailable) {
      gpu_ran = true;
    }
  }
  for (auto& r : results) {
    const bool other = gpu_ran ? r.kind == "emu" : r.kind == "gpu";
    if (!other) continue;
    r.max_score = 0;
    r.score = 0;
    if (r.status == Status::needs_gpu || r.status == Status::passed || r.status == Status::unavailable) {
      r.status = Status::not_counted;
    }
    r.output = (gpu_ran ? "correctness is graded on the GPU; this CPU-backend result is shown for reference.\n"
                        : "correctness is graded on the CPU backend here (no GPU).\n") + r.output;
  }
}

}  // namespace rooflab::grader
