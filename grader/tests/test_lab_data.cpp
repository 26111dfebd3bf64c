// A lab's data agree with each other: every data/thresholds.json rule of a lab grades some kernel of its
// registry and is graded by exactly one perf test (its rubric.json entry's "thresholds"), and nothing names a
// rule that is not there. And the ceilings a perf test judged by reach results.json as data.
#include "manifest.hpp"
#include "process.hpp"
#include "report.hpp"
#include "runner.hpp"

#include <rooflab/detail/rubric.hpp>
#include <rooflab/specs.hpp>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace rooflab::grader;

namespace {

// The three views of a lab's thresholds. `perf_tests`: perf test -> the thresholds its rubric entry lists;
// `kernels`: kernel -> the thresholds its registry entry names. "" when they agree one for one, otherwise
// every disagreement.
std::string thresholds_mismatch(const std::set<std::string>& rules,
                                const std::map<std::string, std::vector<std::string>>& perf_tests,
                                const std::map<std::string, std::vector<std::string>>& kernels) {
  std::string out;
  std::map<std::string, std::vector<std::string>> graded_by_test, grading_kernels;
  for (const auto& [test, qs] : perf_tests) {
    for (const auto& q : qs) graded_by_test[q].push_back(test);
  }
  for (const auto& [kernel, qs] : kernels) {
    for (const auto& q : qs) grading_kernels[q].push_back(kernel);
  }
  for (const auto& q : rules) {
    const auto t = graded_by_test.find(q);
    if (t == graded_by_test.end()) out += fmt::format("  rule {}: no perf test lists it in rubric.json\n", q);
    else if (t->second.size() > 1) out += fmt::format("  rule {}: listed by {} perf tests (one grades it)\n", q, t->second.size());
    if (!grading_kernels.count(q)) out += fmt::format("  rule {}: no kernel of the registry names it\n", q);
  }
  for (const auto& [q, tests] : graded_by_test) {
    if (!rules.count(q)) out += fmt::format("  {} lists {}, which thresholds.json does not have\n", tests.front(), q);
  }
  for (const auto& [q, names] : grading_kernels) {
    if (!rules.count(q)) out += fmt::format("  kernel {} names {}, which thresholds.json does not have\n", names.front(), q);
  }
  return out;
}

}  // namespace

TEST(LabData, ThresholdsMismatchNamesEveryDisagreement) {
  const std::set<std::string> rules = {"copy", "ratio"};
  EXPECT_EQ(thresholds_mismatch(rules, {{"P.Copy", {"copy"}}, {"P.Ratio", {"ratio"}}},
                                {{"copy_kernel", {"copy"}}, {"strided", {"ratio"}}}),
            "");
  const std::string m = thresholds_mismatch(rules, {{"P.Copy", {"copy", "typo"}}, {"P.Again", {"copy"}}},
                                            {{"copy_kernel", {"copy"}}, {"other", {"gone"}}});
  EXPECT_NE(m.find("rule ratio: no perf test"), std::string::npos) << m;
  EXPECT_NE(m.find("rule ratio: no kernel"), std::string::npos) << m;
  EXPECT_NE(m.find("rule copy: listed by 2 perf tests"), std::string::npos) << m;
  EXPECT_NE(m.find("P.Copy lists typo"), std::string::npos) << m;
  EXPECT_NE(m.find("kernel other names gone"), std::string::npos) << m;
}

// Every lab in the manifest: thresholds.json, the rubric's perf tests and the kernel registry (read from the
// lab's static binary, `--rooflab-inspect --registry`) name the same rules.
TEST(LabData, EveryLabsThresholdsRubricAndKernelRegistryAgree) {
  const Manifest m = load_manifest(ROOFLAB_BUILD_DIR);
  ASSERT_FALSE(m.labs.empty());
  const auto table = rooflab::load_thresholds(rooflab::data_dir() / "thresholds.json");
  int checked = 0;
  for (const auto& lab : m.labs) {
    SCOPED_TRACE("lab " + lab.id);
    std::set<std::string> rules;
    for (const auto& t : table.entries) {
      if (t.lab == lab.id) rules.insert(t.quantity);
    }
    std::map<std::string, std::vector<std::string>> perf_tests;
    for (const auto& e : rooflab::rubric::load(lab.rubric).tests) {
      if (e.kind == "perf") perf_tests[e.test] = e.thresholds;
    }
    const Binary* registry = nullptr;
    for (const auto& b : lab.variant("main").binaries) {
      if (b.kind == "static" && b.unavailable.empty()) registry = &b;
    }
    if (registry == nullptr) {
      ADD_FAILURE() << "lab " << lab.id << " has no static binary in this build to read its kernel registry from";
      continue;
    }
    const ProcessResult p = run_process({registry->path.string(), "--rooflab-inspect", "--registry"});
    ASSERT_TRUE(p.ok()) << registry->path << ": " << p.output;
    std::map<std::string, std::vector<std::string>> kernels;
    for (const auto& k : nlohmann::json::parse(p.output)) {
      kernels[k.at("kernel").get<std::string>()] = k.at("graded_by").get<std::vector<std::string>>();
    }
    ASSERT_FALSE(kernels.empty());
    const std::string mismatch = thresholds_mismatch(rules, perf_tests, kernels);
    EXPECT_EQ(mismatch, "") << "lab " << lab.id << ": data/thresholds.json, " << lab.rubric.string()
                            << " and the kernel registry disagree:\n" << mismatch;
    ++checked;
  }
  EXPECT_EQ(checked, static_cast<int>(m.labs.size()));
}

namespace {
std::string frame(char type, const std::string& payload) {
  std::string out(1, type);
  for (int i = 0; i < 8; ++i) out += static_cast<char>((static_cast<std::uint64_t>(payload.size()) >> (8 * i)) & 0xff);
  return out + payload;
}
}  // namespace

// A perf test's ceilings, recorded by award() as test properties, reach results.json: per test, and each
// once at the top.
TEST(LabData, CeilingsInForceReachResultsJson) {
  const DeclaredTest t{"P", "Copy", "perf", 6};
  const rooflab::CeilingInForce copy{"copy_bandwidth", 1.5e12, "B/s", "rooflab calibrate, GPU, today"};
  const nlohmann::json props = {{"rooflab_fraction", "0.5000"}, {"rooflab_ceiling.copy_bandwidth", nlohmann::json(copy).dump()}};
  const std::string bytes = frame('S', nlohmann::json{{"suite", "P"}, {"name", "Copy"}}.dump()) +
                            frame('J', nlohmann::json{{"suite", "P"}, {"name", "Copy"}, {"result", "passed"},
                                                      {"failures", nlohmann::json::array()}, {"skip", ""},
                                                      {"properties", props}}.dump());
  TestResult r = interpret_report(rooflab::report::parse(bytes), 0, t);
  ASSERT_EQ(r.status, Status::passed);
  ASSERT_EQ(r.ceilings.size(), 1u);
  EXPECT_EQ(r.ceilings[0].name, "copy_bandwidth");
  EXPECT_DOUBLE_EQ(r.ceilings[0].value, 1.5e12);
  r.lab = "09";
  r.id = "P.Copy";
  TestResult again = r;
  again.id = "P.Scale";
  Lab lab;
  lab.id = "09";
  const auto j = nlohmann::json::parse(gradescope_json({LabResults{&lab, "dir", {r, again}, ""}}, "h"));
  ASSERT_EQ(j.at("rooflab_ceilings").size(), 1u);
  EXPECT_EQ(j.at("rooflab_ceilings")[0].at("unit"), "B/s");
  EXPECT_EQ(j.at("tests")[0].at("rooflab_ceilings")[0].at("name"), "copy_bandwidth");
  EXPECT_EQ(j.at("tests")[0].at("rooflab_ceilings")[0].at("measured"), "rooflab calibrate, GPU, today");
  // A malformed ceiling record is not believed.
  const std::string bad = frame('S', nlohmann::json{{"suite", "P"}, {"name", "Copy"}}.dump()) +
                          frame('J', nlohmann::json{{"suite", "P"}, {"name", "Copy"}, {"result", "passed"},
                                                    {"failures", nlohmann::json::array()}, {"skip", ""},
                                                    {"properties", {{"rooflab_ceiling.x", "{"}}}}.dump());
  EXPECT_EQ(interpret_report(rooflab::report::parse(bad), 0, t).status, Status::failed);
}
