// What a grade writes: results.json (ours and Gradescope's), the verification of recorded values (report.cpp).
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

TEST(Report, RecordedValuesAreVerifiedAgainstTheReferenceRun) {
  using rooflab::report::Values;
  const std::vector<Values> want = {{"all_close", 1e-6, 1e-5, {1.0, 2.0, 3.0}}, {"near", 0, 1e-9, {42.0}}};
  std::vector<Values> got = want;
  got[0].data[1] = 2.0000001;  // inside the tolerance
  auto v = rooflab::report::verify(got, want);
  EXPECT_TRUE(v.ok) << v.message;
  EXPECT_EQ(v.checked, 4u);
  got[1].data[0] = 43.0;
  v = rooflab::report::verify(got, want);
  EXPECT_FALSE(v.ok);
  EXPECT_NE(v.message.find("43"), std::string::npos);
  got = want;
  got[0].data[2] = std::nan("");
  EXPECT_FALSE(rooflab::report::verify(got, want).ok);
  EXPECT_FALSE(rooflab::report::verify({}, want).ok);          // a forged pass with nothing checked
  EXPECT_FALSE(rooflab::report::verify({want[0]}, want).ok);   // stopped early
  got = want;
  got[0].data.pop_back();
  EXPECT_FALSE(rooflab::report::verify(got, want).ok);
}

TEST(Report, FailureMessagesMustNotShowTheAnswer) {
  EXPECT_EQ(leaked_answer("your answer 3.5 is wrong; want 12.25", {12.25}), "12.25");
  EXPECT_EQ(leaked_answer("your answer 12.25 is wrong (twice the answer)", {12.25}), "");  // the student's own
  EXPECT_EQ(leaked_answer("n=4096: your answer 7 is wrong", {4096}), "");                 // an input, not a leak
  EXPECT_EQ(leaked_answer("got 1.0737e+09 bytes", {1073741824.0 * 1.0000001}), "");
  EXPECT_EQ(leaked_answer("expected 1.07374e+09", {1073741900.5}), "1.07374e+09");
}

// The values a test records travel through the channel intact (floats as floats, doubles as doubles).
TEST(Report, ValuesSurviveTheChannel) {
  std::string bytes;
  const auto values_frame = [](const std::string& label, const std::string& dtype, const std::string& data, std::size_t n) {
    const std::string h = nlohmann::json{{"label", label}, {"dtype", dtype}, {"count", n}, {"atol", 0.5}, {"rtol", 0.25}}.dump();
    std::string payload;
    for (int i = 0; i < 4; ++i) payload += static_cast<char>((h.size() >> (8 * i)) & 0xff);
    return frame('V', payload + h + data);
  };
  const float f[2] = {1.5f, -2.25f};
  const double d[1] = {3.125};
  bytes += values_frame("a", "f32", std::string(reinterpret_cast<const char*>(f), sizeof f), 2);
  bytes += values_frame("b", "f64", std::string(reinterpret_cast<const char*>(d), sizeof d), 1);
  bytes += frame('C', R"({"kernel_seconds": 0.5})");
  const auto r = rooflab::report::parse(bytes);
  ASSERT_TRUE(r.error.empty()) << r.error;
  ASSERT_EQ(r.values.size(), 2u);
  EXPECT_EQ(r.values[0].data, (std::vector<double>{1.5, -2.25}));
  EXPECT_EQ(r.values[1].data, (std::vector<double>{3.125}));
  EXPECT_DOUBLE_EQ(r.values[0].atol, 0.5);
  EXPECT_DOUBLE_EQ(r.claimed_kernel_seconds, 0.5);
  // A count that does not match the data is a malformed report, not a crash.
  EXPECT_FALSE(rooflab::report::parse(values_frame("a", "f32", "abc", 2)).error.empty());
}

TEST(Report, GradescopeJsonNeverShowsASkipAsPassed) {
  Lab lab;
  lab.id = "01";
  lab.title = "Memory bandwidth";
  TestResult pass{"01", "A.B", "analytic", "host", 4, 4, Status::passed, "", 0};
  TestResult part{"01", "P.Q", "perf", "GPU", 8, 6, Status::passed, "75%", 0};
  TestResult skip{"01", "P.R", "perf", "GPU", 8, 0, Status::needs_gpu, "", 0};
  LabResults lr{&lab, "labs/01", {pass, part, skip}, ""};
  const auto j = nlohmann::json::parse(gradescope_json({lr}, "header"));
  EXPECT_DOUBLE_EQ(j["score"].get<double>(), 10.0);
  ASSERT_EQ(j["tests"].size(), 3u);
  EXPECT_EQ(j["tests"][0]["status"], "passed");
  EXPECT_EQ(j["tests"][1]["status"], "failed");  // partial credit is not a pass
  EXPECT_EQ(j["tests"][2]["status"], "failed");
  EXPECT_NE(j["tests"][2]["output"].get<std::string>().find("needs a GPU"), std::string::npos);
  const auto tags = j["tests"][0]["tags"];
  EXPECT_NE(std::find(tags.begin(), tags.end(), "lab01"), tags.end());
  EXPECT_NE(std::find(tags.begin(), tags.end(), "analytic"), tags.end());
  const std::string table = terminal_table(lr, false);
  EXPECT_NE(table.find("needs a GPU"), std::string::npos);
  EXPECT_NE(table.find("10.0 / 20.0"), std::string::npos);
}

// Without the CUDA toolkit a binary cannot be built: its tests are still listed, owed, with the reason.
TEST(Gradescope, PerfIsLeftToTheClusterInTheOutputNotAsPlaceholders) {
  Lab lab;
  lab.id = "01";
  Variant main;
  main.name = "main";
  Binary gpu;
  gpu.kind = "gpu";
  gpu.declared = {{"Lab01Kernels", "Copy", "gpu", 4}, {"Lab01Perf", "Copy", "perf", 6}, {"Lab01Perf", "Add", "perf", 8},
                  {"Lab01Plots", "Draw", "perf", 0}};
  main.binaries = {gpu};
  lab.variants = {main};
  TestResult emu{"01", "Lab01Kernels.Copy", "emu", "CPU backend", 4, 4, Status::passed, "", 0};
  TestResult twin{"01", "Lab01Kernels.Copy", "gpu", "GPU", 0, 0, Status::not_counted, "", 0};
  TestResult owed{"01", "Lab01Perf.Add", "perf", "GPU", 8, 0, Status::needs_gpu, "no GPU", 0};
  const LabResults lr{&lab, "dir", {emu, twin, owed}, ""};
  const auto j = nlohmann::json::parse(gradescope_autograder_json({lr}, "header"));
  EXPECT_DOUBLE_EQ(j["score"].get<double>(), 4.0);
  std::map<std::string, nlohmann::json> by_name;
  for (const auto& t : j["tests"]) {
    by_name[t["name"].get<std::string>()] = t;
    for (const auto& [key, value] : t.items()) {
      EXPECT_TRUE(std::set<std::string>({"name", "score", "max_score", "status", "output", "tags", "visibility"}).count(key))
          << key;
    }
  }
  // The emu test as graded, with its status; the GPU twin (0 points) left out; no placeholder for the perf
  // tests (Gradescope would show one without a status as passed): the output lists both graded ones, the one
  // this run left out included, with their points; the 0-point plot not listed.
  ASSERT_EQ(by_name.size(), 1u) << j.dump(2);
  EXPECT_DOUBLE_EQ(by_name.at("lab01 emu: Lab01Kernels.Copy")["max_score"].get<double>(), 4.0);
  for (const auto& t : j["tests"]) EXPECT_TRUE(t.contains("status")) << t.dump();
  const std::string output = j["output"].get<std::string>();
  EXPECT_NE(output.find("The 14 performance points (lab 01: 14)"), std::string::npos) << output;
  EXPECT_NE(output.find("lab01 perf: Lab01Perf.Add (8 points)"), std::string::npos) << output;
  EXPECT_NE(output.find("lab01 perf: Lab01Perf.Copy (6 points)"), std::string::npos) << output;
  EXPECT_EQ(output.find("Lab01Plots"), std::string::npos) << output;
  EXPECT_NE(j["output"].get<std::string>().find("header"), std::string::npos);
}
