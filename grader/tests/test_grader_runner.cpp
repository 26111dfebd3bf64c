// Running test binaries and scoring them (runner.cpp).
// The grader is tested too: declarations, test reports and their verification, process isolation, scoring rules, the
// Gradescope output, submission whitelisting, and the stub/solution mirror of every lab.
#include "build.hpp"
#include "class_grading.hpp"
#include "commands.hpp"
#include "gradescope.hpp"
#include "manifest.hpp"
#include "process.hpp"
#include "report.hpp"
#include "slurm.hpp"
#include "runner.hpp"
#include "symbols.hpp"
#include "tests/test_support.hpp"

#include <rooflab/testing/random.hpp>
#include <rooflab/detail/rubric.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <regex>
#include <set>

#include <unistd.h>

namespace fs = std::filesystem;
using namespace rooflab::grader;
using rooflab::grader::testing::frame;
using rooflab::grader::testing::read;
using rooflab::grader::testing::running;

namespace {

std::string started(const std::string& suite, const std::string& name) {
  return frame('S', nlohmann::json{{"suite", suite}, {"name", name}}.dump());
}
std::string result(const std::string& suite, const std::string& name, const std::string& outcome,
                   nlohmann::json properties = nlohmann::json::object(), nlohmann::json failures = nlohmann::json::array()) {
  return frame('J', nlohmann::json{{"suite", suite}, {"name", name}, {"result", outcome}, {"failures", failures},
                                   {"skip", ""}, {"properties", properties}}.dump());
}

}  // namespace

TEST(Runner, BelievesAReportOnlyWhenItAndTheExitCodeAgree) {
  const DeclaredTest t{"S", "T", "perf", 8};
  const auto interpret = [&](const std::string& bytes, int exit_code) {
    return interpret_report(rooflab::report::parse(bytes), exit_code, t);
  };
  auto r = interpret(started("S", "T") + result("S", "T", "passed", {{"rooflab_fraction", "0.2500"}}), 0);
  EXPECT_EQ(r.status, Status::passed);
  EXPECT_DOUBLE_EQ(r.score, 2.0);
  r = interpret(started("S", "T") + result("S", "T", "passed"), 0);
  EXPECT_DOUBLE_EQ(r.score, 8.0);
  r = interpret(started("S", "T") + result("S", "T", "skipped"), 77);
  EXPECT_EQ(r.status, Status::needs_gpu);
  EXPECT_DOUBLE_EQ(r.score, 0.0);
  r = interpret(started("S", "T") + result("S", "T", "failed", {}, {"boom"}), 1);
  EXPECT_EQ(r.status, Status::failed);
  EXPECT_NE(r.output.find("boom"), std::string::npos);
  // Forgeries and accidents: nothing reported, a pass with a failing exit code, another test's result, two
  // results, a fraction outside [0, 1], garbage on the channel.
  EXPECT_EQ(interpret("", 0).status, Status::failed);
  EXPECT_EQ(interpret(started("S", "T") + result("S", "T", "passed"), 1).status, Status::failed);
  EXPECT_EQ(interpret(started("S", "U") + result("S", "U", "passed"), 0).status, Status::failed);
  EXPECT_EQ(interpret(started("S", "T") + result("S", "T", "passed") + result("S", "T", "passed"), 0).status,
            Status::failed);
  EXPECT_EQ(interpret(started("S", "T") + result("S", "T", "passed", {{"rooflab_fraction", "5"}}), 0).status,
            Status::failed);
  EXPECT_EQ(interpret(started("S", "T") + result("S", "T", "passed", {{"rooflab_fraction", "nan"}}), 0).status,
            Status::failed);
  EXPECT_EQ(interpret(started("S", "T") + result("S", "T", "passed", {{"rooflab_fraction", "-0.5"}}), 0).status,
            Status::failed);
  EXPECT_EQ(interpret("not a report", 0).status, Status::failed);
  EXPECT_EQ(interpret(started("S", "T") + result("S", "T", "passed").substr(0, 20), 0).status, Status::failed);
}

// A test binary that leaves a daemon behind loses the test, saying what it left.
TEST(Runner, ATestThatLeavesAProcessRunningFails) {
  const fs::path dir = fs::temp_directory_path() / fmt::format("rooflab-leftover-{}", getpid());
  fs::create_directories(dir);
  const fs::path fake = dir / "fake_test";
  {
    std::ofstream out(fake);
    out << "#!/bin/sh\nsetsid sleep 3174 </dev/null >/dev/null 2>&1 &\nexit 0\n";
  }
  fs::permissions(fake, fs::perms::owner_all);
  Lab lab;
  lab.id = "09";
  Binary b;
  b.kind = "analytic";
  b.path = fake;
  b.declared = {{"Lab09Analytic", "Leaves", "analytic", 2}};
  RunOptions options;
  options.timeout_s = 30;
  const auto results = run_binary(lab, b, options);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].status, Status::failed);
  EXPECT_EQ(results[0].score, 0);
  EXPECT_NE(results[0].output.find("left 1 process running after it ended"), std::string::npos) << results[0].output;
  EXPECT_NE(results[0].output.find("sleep 3174"), std::string::npos) << results[0].output;
  EXPECT_FALSE(running("sleep 3174"));
  fs::remove_all(dir);
}

TEST(Runner, CorrectnessIsCountedOnce) {
  const auto make = [](std::string kind, Status s, double score) {
    TestResult r;
    r.kind = std::move(kind);
    r.status = s;
    r.max_score = 4;
    r.score = score;
    return r;
  };
  // No GPU: the CPU backend's results count, the GPU's skipped ones do not.
  std::vector<TestResult> no_gpu = {make("emu", Status::passed, 4), make("gpu", Status::needs_gpu, 0),
                                    make("perf", Status::needs_gpu, 0)};
  settle_correctness(no_gpu, false);
  EXPECT_DOUBLE_EQ(no_gpu[0].max_score, 4);
  EXPECT_DOUBLE_EQ(no_gpu[1].max_score, 0);
  EXPECT_EQ(no_gpu[1].status, Status::not_counted);
  EXPECT_DOUBLE_EQ(no_gpu[2].max_score, 4);  // performance points stay owed: "needs a GPU", never passed
  EXPECT_EQ(no_gpu[2].status, Status::needs_gpu);
  // The grader found a GPU: its result counts, even a failure, and the CPU backend's pass does not add to it.
  std::vector<TestResult> with_gpu = {make("emu", Status::passed, 4), make("gpu", Status::failed, 0)};
  settle_correctness(with_gpu, true);
  EXPECT_DOUBLE_EQ(with_gpu[0].max_score, 0);
  EXPECT_DOUBLE_EQ(with_gpu[0].score, 0);
  EXPECT_DOUBLE_EQ(with_gpu[1].max_score, 4);
}

// Code no grade checked: an instance some test process holds and none launched is named in a hint worth no
// points; the tests' own points are untouched.
TEST(Runner, KernelInstancesNoTestLaunchedAreAHint) {
  Lab lab;
  lab.id = "07";
  const auto ran = [](std::vector<std::string> launched) {
    TestResult r;
    r.kind = "emu";
    r.status = Status::passed;
    r.max_score = r.score = 5;
    r.kernels_defined = {"void k<1>(float*)", "void k<2>(float*)", "void k<4>(float*)"};
    r.kernels_launched = std::move(launched);
    return r;
  };
  const std::vector<TestResult> some = {ran({"void k<1>(float*)"}), ran({"void k<2>(float*)"})};
  const auto hint = untested_kernels_check(lab, some);
  ASSERT_TRUE(hint.has_value());
  EXPECT_EQ(hint->id, "Lab07Coverage.EveryKernelTested");
  EXPECT_EQ(hint->status, Status::failed);
  EXPECT_DOUBLE_EQ(hint->max_score, 0);
  EXPECT_NE(hint->output.find("code no grade checked: void k<4>(float*)"), std::string::npos) << hint->output;
  EXPECT_EQ(hint->output.find("k<1>"), std::string::npos) << hint->output;
  const std::vector<TestResult> all = {ran({"void k<1>(float*)", "void k<4>(float*)"}), ran({"void k<2>(float*)"})};
  EXPECT_EQ(untested_kernels_check(lab, all)->status, Status::passed);
  EXPECT_FALSE(untested_kernels_check(lab, {TestResult{}}).has_value()) << "no CPU-backend report, no hint";
}

TEST(Runner, UnavailableBinariesKeepTheirPointsOwed) {
  Lab lab;
  lab.id = "09";
  Binary b;
  b.kind = "gpu";
  b.declared = {{"Lab09Kernels", "Copy", "gpu", 4}, {"Lab09Perf", "Copy", "perf", 6}};
  b.unavailable = "no CUDA toolkit";
  auto results = run_binary(lab, b, RunOptions{});
  ASSERT_EQ(results.size(), 2u);
  for (const auto& r : results) {
    EXPECT_EQ(r.status, Status::unavailable);
    EXPECT_NE(r.output.find("no CUDA toolkit"), std::string::npos);
  }
  settle_correctness(results, false);
  EXPECT_DOUBLE_EQ(results[0].max_score, 0);  // correctness: counted on the CPU backend's side instead
  EXPECT_DOUBLE_EQ(results[1].max_score, 6);  // performance: owed
}
