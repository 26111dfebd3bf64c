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
#include "sandbox.hpp"
#include "symbols.hpp"
#include "tests/test_support.hpp"

#include <rooflab/testing/random.hpp>
#include <rooflab/detail/rubric.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <algorithm>
#include <fstream>
#include <functional>
#include <iterator>
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
  // A perf test's score is the fraction it awards: a pass without one is not believed (a fake result reporter in
  // the process swallowed the failure that ended the test before award()); another kind's pass is whole.
  r = interpret(started("S", "T") + result("S", "T", "passed"), 0);
  EXPECT_EQ(r.status, Status::failed);
  EXPECT_DOUBLE_EQ(r.score, 0.0);
  EXPECT_NE(r.output.find("without awarding a score"), std::string::npos) << r.output;
  r = interpret_report(rooflab::report::parse(started("S", "T") + result("S", "T", "passed")), 0,
                       DeclaredTest{"S", "T", "emu", 8});
  EXPECT_EQ(r.status, Status::passed);
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

// ---- verification against recorded reference values (gradescope-package, grade --reference-values) ----

namespace {

std::string values_frame(const std::string& label, const std::vector<double>& data) {
  const std::string h =
      nlohmann::json{{"label", label}, {"dtype", "f64"}, {"count", data.size()}, {"atol", 0.0}, {"rtol", 1e-6}}.dump();
  std::string payload;
  for (int i = 0; i < 4; ++i) payload += static_cast<char>((h.size() >> (8 * i)) & 0xff);
  payload += h;
  payload.append(reinterpret_cast<const char*>(data.data()), data.size() * sizeof(double));
  return frame('V', payload);
}

rooflab::report::Values values(const std::string& label, std::vector<double> data) {
  rooflab::report::Values v;
  v.label = label;
  v.rtol = 1e-6;
  v.data = std::move(data);
  return v;
}

// A record of lab 09's analytic tests made with `seed`: Lab09Analytic.Ridge's answer is `answer`.
RecordedReference record(std::optional<std::string> seed, double answer) {
  RecordedReference rec{"09", "analytic", std::move(seed), nlohmann::json::object(), {}};
  rec.tests["Lab09Analytic.Ridge"].values.push_back(values("near", {answer}));
  return rec;
}

}  // namespace

// Records keep every value exactly (float32 where it holds them, float64 where it does not, NaN and infinities
// too) and a malformed one is an error that names its file, never a record of nothing.
TEST(RecordedReference, ValuesSurviveTheRecordAndAMalformedOneIsAnError) {
  RecordedReference rec{"09", "emu", "4242", {{"commit", "abc"}}, {}};
  const double nan = std::nan("");
  const double inf = HUGE_VAL;
  rec.tests["Lab09Kernels.Copy"].values = {values("all_close", {1.5, -0.0, static_cast<double>(3e38f), inf, -inf, nan}),
                                           values("near", {0.1, 1e300, 5e-324}), values("empty", {})};
  rec.tests["Lab09Kernels.None"];
  const nlohmann::json j = nlohmann::json::parse(recorded_json(rec).dump());
  EXPECT_EQ(j["tests"]["Lab09Kernels.Copy"]["values"][0]["dtype"], "f32");
  EXPECT_EQ(j["tests"]["Lab09Kernels.Copy"]["values"][1]["dtype"], "f64");
  const RecordedReference back = parse_recorded(j, "x.json");
  EXPECT_EQ(back.lab, "09");
  EXPECT_EQ(back.kind, "emu");
  EXPECT_EQ(back.seed, std::optional<std::string>("4242"));
  ASSERT_EQ(back.tests.size(), 2u);
  const auto& got = back.tests.at("Lab09Kernels.Copy").values;
  ASSERT_EQ(got.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    const auto& want = rec.tests.at("Lab09Kernels.Copy").values[i];
    EXPECT_EQ(got[i].label, want.label);
    ASSERT_EQ(got[i].data.size(), want.data.size());
    for (std::size_t k = 0; k < want.data.size(); ++k) {
      if (std::isnan(want.data[k])) {
        EXPECT_TRUE(std::isnan(got[i].data[k]));
      } else {
        EXPECT_EQ(std::signbit(got[i].data[k]), std::signbit(want.data[k]));
        EXPECT_EQ(got[i].data[k], want.data[k]) << want.label << "[" << k << "]";
      }
    }
  }
  EXPECT_FALSE(parse_recorded(recorded_json(record(std::nullopt, 1)), "y.json").seed.has_value());
  // Malformed: another format, a count the data does not hold, data that is not base64, a missing key.
  const auto malformed = [&](const std::function<void(nlohmann::json&)>& spoil) {
    nlohmann::json bad = j;
    spoil(bad);
    try {
      parse_recorded(bad, "bad.json");
    } catch (const std::runtime_error& e) {
      return std::string(e.what()).find("reference values bad.json: malformed") != std::string::npos;
    }
    return false;
  };
  EXPECT_TRUE(malformed([](nlohmann::json& b) { b["format"] = "rooflab reference values 0"; }));
  EXPECT_TRUE(malformed([](nlohmann::json& b) { b["tests"]["Lab09Kernels.Copy"]["values"][1]["count"] = 4; }));
  EXPECT_TRUE(malformed([](nlohmann::json& b) { b["tests"]["Lab09Kernels.Copy"]["values"][1]["data"] = "AA=A"; }));
  EXPECT_TRUE(malformed([](nlohmann::json& b) { b["tests"]["Lab09Kernels.Copy"]["values"][0]["dtype"] = "f16"; }));
  EXPECT_TRUE(malformed([](nlohmann::json& b) { b.erase("seed"); }));
  EXPECT_TRUE(malformed([](nlohmann::json& b) { b["tests"] = 3; }));
}

// DIR/<lab>/<kind>.json, one file per verified kind: a missing one is left out, one that is not JSON or is
// another lab's is an error.
TEST(RecordedReference, AReadRecordMustBeJsonOfItsOwnLabAndKind) {
  const fs::path dir = fs::temp_directory_path() / fmt::format("rooflab-records-{}", getpid());
  fs::remove_all(dir);
  fs::create_directories(dir / "09");
  std::ofstream(dir / "09" / "analytic.json") << recorded_json(record("7", 2.5)).dump();
  const auto read_back = read_reference_values(dir, "09");
  ASSERT_EQ(read_back.size(), 1u);
  EXPECT_EQ(read_back.at("analytic").tests.at("Lab09Analytic.Ridge").values[0].data, std::vector<double>{2.5});
  EXPECT_TRUE(read_reference_values(dir, "10").empty());
  fs::copy_file(dir / "09" / "analytic.json", dir / "09" / "emu.json");  // lab 09's analytic record as its emu one
  EXPECT_THROW(read_reference_values(dir, "09"), std::runtime_error);
  std::ofstream(dir / "09" / "emu.json") << "{ not json";
  try {
    read_reference_values(dir, "09");
    ADD_FAILURE() << "a record that is not JSON was read";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("emu.json: not JSON"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

// With records, a passing test earns its points only when its values match the recorded run of its test for
// this grade's seed: a value that differs, a test with no record, a record of another seed (not named: the
// student reads the reason) or of no kind at all, each earns nothing.
TEST(RecordedReference, OnlyARecordOfThisTestAndSeedThatMatchesVerifies) {
  const fs::path dir = fs::temp_directory_path() / fmt::format("rooflab-recorded-run-{}", getpid());
  fs::create_directories(dir);
  std::ofstream(dir / "report.bin", std::ios::binary)
      << started("Lab09Analytic", "Ridge") + values_frame("near", {2.5}) + result("Lab09Analytic", "Ridge", "passed");
  const fs::path fake = dir / "fake_test";
  std::ofstream(fake) << "#!/bin/sh\ncat '" << (dir / "report.bin").string() << "' >&3\nexit 0\n";
  fs::permissions(fake, fs::perms::owner_all);
  Lab lab;
  lab.id = "09";
  Binary b;
  b.kind = "analytic";
  b.path = fake;
  b.declared = {{"Lab09Analytic", "Ridge", "analytic", 5}};
  const auto grade = [&](std::map<std::string, RecordedReference> recorded, std::optional<std::string> seed) {
    RunOptions options;
    options.timeout_s = 30;
    if (seed) options.env["ROOFLAB_SEED"] = *seed;
    options.recorded = std::move(recorded);
    const auto results = run_binary(lab, b, options);
    EXPECT_EQ(results.size(), 1u);
    return results.empty() ? TestResult{} : results[0];
  };
  TestResult r = grade({{"analytic", record("4242", 2.5)}}, "4242");
  EXPECT_EQ(r.status, Status::passed) << r.output;
  EXPECT_DOUBLE_EQ(r.score, 5);
  r = grade({{"analytic", record("4242", 2.75)}}, "4242");
  EXPECT_EQ(r.status, Status::failed);
  EXPECT_NE(r.output.find("do not match"), std::string::npos) << r.output;
  RecordedReference other = record("4242", 2.5);
  other.tests = {{"Lab09Analytic.Other", other.tests.begin()->second}};
  r = grade({{"analytic", other}}, "4242");
  EXPECT_EQ(r.status, Status::failed);
  EXPECT_DOUBLE_EQ(r.score, 0);
  EXPECT_NE(r.output.find("not verified: no reference value was recorded for this test"), std::string::npos) << r.output;
  r = grade({{"analytic", record("4242", 2.5)}}, "977");
  EXPECT_EQ(r.status, Status::failed);
  EXPECT_NE(r.output.find("recorded with another seed"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("4242"), std::string::npos) << "the secret seed is shown: " << r.output;
  if (std::getenv("ROOFLAB_SEED") == nullptr) {
    EXPECT_EQ(grade({{"analytic", record("4242", 2.5)}}, std::nullopt).status, Status::failed) << "default seed";
    EXPECT_EQ(grade({{"analytic", record(std::nullopt, 2.5)}}, std::nullopt).status, Status::passed);
  }
  r = grade({}, "4242");
  EXPECT_EQ(r.status, Status::failed);
  EXPECT_NE(r.output.find("no reference values were recorded for this lab's analytic tests"), std::string::npos);
  fs::remove_all(dir);
}

// A passing reference run is kept beside its binary and read back instead of running it again (every known-bad
// case of a lab and every student of a class is verified against the same runs); a relinked binary, another
// seed, a damaged file or a failing run each mean a new run, and a failing run is never kept.
TEST(KeptReference, APassingRunIsKeptAndOnlyAnIdenticalRunReadsIt) {
  const fs::path dir = fs::temp_directory_path() / fmt::format("rooflab-kept-reference-{}", getpid());
  fs::remove_all(dir);
  fs::create_directories(dir / "bin");
  const fs::path runs = dir / "runs.txt", answer = dir / "answer.bin", fake = dir / "bin" / "fake_test";
  const auto write_answer = [&](double value, const char* outcome) {
    std::ofstream(answer, std::ios::binary) << started("Lab09Analytic", "Ridge") + values_frame("near", {value}) +
                                                   result("Lab09Analytic", "Ridge", outcome);
  };
  const auto write_binary = [&] {
    std::ofstream(fake) << "#!/bin/sh\necho run >> '" << runs.string() << "'\ncat '" << answer.string() << "' >&3\n"
                        << "grep -q passed '" << answer.string() << "'\n";
    fs::permissions(fake, fs::perms::owner_all);
  };
  const auto count_runs = [&] {
    std::ifstream in(runs);
    return static_cast<int>(std::count(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>(), '\n'));
  };
  write_answer(2.5, "passed");
  write_binary();
  const DeclaredTest t{"Lab09Analytic", "Ridge", "analytic", 5};
  RunOptions options;
  options.timeout_s = 30;
  options.env["ROOFLAB_SEED"] = "4242";
  const auto value_of = [&](const RunOptions& o) {
    std::string why;
    const auto r = kept_or_new_reference(fake, t, o, &why);
    return r && !r->values.empty() && !r->values[0].data.empty() ? r->values[0].data[0] : -1.0;
  };
  EXPECT_EQ(value_of(options), 2.5);
  EXPECT_EQ(count_runs(), 1);
  write_answer(3.5, "passed");  // the binary's answer changes, the binary does not: the kept run is read
  EXPECT_EQ(value_of(options), 2.5);
  EXPECT_EQ(count_runs(), 1);
  auto other_report_dir = options;  // a student's own report folder changes nothing checked
  other_report_dir.env["ROOFLAB_REPORT_DIR"] = (dir / "student-2").string();
  EXPECT_EQ(value_of(other_report_dir), 2.5);
  EXPECT_EQ(count_runs(), 1);
  auto other_seed = options;
  other_seed.env["ROOFLAB_SEED"] = "977";
  EXPECT_EQ(value_of(other_seed), 3.5);
  EXPECT_EQ(count_runs(), 2);
  // Relinked: a new modification time is a new run.
  fs::last_write_time(fake, fs::last_write_time(fake) + std::chrono::seconds(5));
  EXPECT_EQ(value_of(options), 3.5);
  EXPECT_EQ(count_runs(), 3);
  // A damaged file is a miss, run again and kept whole.
  std::vector<fs::path> kept;
  for (const auto& f : fs::directory_iterator(dir / "bin" / "reference-runs")) kept.push_back(f.path());
  ASSERT_EQ(kept.size(), 3u);  // seed 4242 before and after the relink, seed 977
  for (const auto& f : kept) std::ofstream(f, std::ios::trunc) << "garbage";
  EXPECT_EQ(value_of(options), 3.5);
  EXPECT_EQ(count_runs(), 4);
  EXPECT_EQ(value_of(options), 3.5);
  EXPECT_EQ(count_runs(), 4);
  // A failing run is not kept: each asks again.
  write_answer(4.5, "failed");
  fs::last_write_time(fake, fs::last_write_time(fake) + std::chrono::seconds(5));
  EXPECT_EQ(value_of(options), -1.0);
  EXPECT_EQ(value_of(options), -1.0);
  EXPECT_EQ(count_runs(), 6);
  fs::remove_all(dir);
}

// A package's records hold the reference run's values and its hidden tests answer what they test: no student
// process may read them, as it may not read solutions/ (the sandbox's readable top-level entries leave all
// three out; a grade's build is given its hidden tests on their own).
TEST(RecordedReference, StudentProcessesMayNotReadThem) {
  const fs::path dir = fs::temp_directory_path() / fmt::format("rooflab-readable-{}", getpid());
  for (const char* top : {"labs", "common", "solutions", "reference", "hidden-tests"}) fs::create_directories(dir / top);
  std::set<std::string> readable;
  for (const auto& p : readable_source_entries(dir)) readable.insert(p.filename().string());
  EXPECT_EQ(readable, (std::set<std::string>{"labs", "common"}));
  fs::remove_all(dir);
}

// Inspect's traffic section for a lab half written: a test that failed only because a launcher still holds its stub
// is taken out of the output and its step named once; the tests that ran keep their lines; any other failure stays
// whole, with GoogleTest's summary, and is counted.
TEST(InspectTraffic, AStubsFailureIsNamedNotShownAndOtherFailuresStay) {
  const std::string stub_failure =
      "unknown file: Failure\n"
      "C++ exception with description \"not implemented: lab05.flash1.launch (the student file still holds the stub)\" "
      "thrown in the test body.\n"
      "[  FAILED  ] Lab05Traffic.FlashNeverWritesTheScores (5 ms)\n";
  const std::string written = "rooflab: softmax: analytic 1.0e+06 B, modelled DRAM 1.0e+06 B (1.00x)\n";
  const std::string summary = "[==========] 3 tests from 1 test suite ran. (9 ms total)\n[  PASSED  ] 1 test.\n";
  const auto stubs_only = rooflab::grader::without_stub_failures(written + stub_failure + stub_failure + summary);
  EXPECT_EQ(stubs_only.text, written);
  EXPECT_EQ(stubs_only.stubs, (std::vector<std::string>{"lab05.flash1.launch"}));
  EXPECT_EQ(stubs_only.other_failures, 0);

  const std::string crash = "kernels.cu:12: Failure\nExpected equality of these values: ...\n"
                            "[  FAILED  ] Lab05Traffic.SoftmaxReadsOnce (3 ms)\n";
  const auto mixed = rooflab::grader::without_stub_failures(stub_failure + crash + summary);
  EXPECT_EQ(mixed.other_failures, 1);
  EXPECT_EQ(mixed.stubs, (std::vector<std::string>{"lab05.flash1.launch"}));
  EXPECT_NE(mixed.text.find("Expected equality of these values"), std::string::npos) << mixed.text;
  EXPECT_NE(mixed.text.find("[  FAILED  ] Lab05Traffic.SoftmaxReadsOnce"), std::string::npos) << mixed.text;
  EXPECT_NE(mixed.text.find("[  PASSED  ] 1 test."), std::string::npos) << mixed.text;
  EXPECT_EQ(mixed.text.find("still holds the stub"), std::string::npos) << mixed.text;

  // A message that only looks like a stub's (no closing words) is not one.
  const auto odd = rooflab::grader::without_stub_failures(
      "C++ exception with description \"not implemented: a thing\" thrown in the test body.\n[  FAILED  ] A.B (1 ms)\n");
  EXPECT_TRUE(odd.stubs.empty());
  EXPECT_EQ(odd.other_failures, 1);
}
