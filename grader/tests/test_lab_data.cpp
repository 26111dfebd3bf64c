// A lab's data agree with each other: every rule of a lab's thresholds.json grades some kernel of its
// registry and is graded by exactly one perf test (its rubric.json entry's "thresholds"), and nothing names a
// rule that is not there. And the ceilings a perf test judged by reach results.json as data.
#include "manifest.hpp"
#include "process.hpp"
#include "report.hpp"
#include "runner.hpp"
#include "tests/test_support.hpp"

#include <rooflab/detail/rubric.hpp>
#include <rooflab/specs.hpp>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace rooflab::grader;
using rooflab::grader::testing::frame;
using rooflab::grader::testing::read;
using rooflab::grader::testing::running;

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
  int checked = 0;
  for (const auto& lab : m.labs) {
    SCOPED_TRACE("lab " + lab.id);
    std::set<std::string> rules;
    for (const auto& t : rooflab::load_lab_thresholds(lab.dir / "thresholds.json", lab.id)) rules.insert(t.quantity);
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
    EXPECT_EQ(mismatch, "") << "lab " << lab.id << ": " << (lab.dir / "thresholds.json").string() << ", " << lab.rubric.string()
                            << " and the kernel registry disagree:\n" << mismatch;
    ++checked;
  }
  EXPECT_EQ(checked, static_cast<int>(m.labs.size()));
}

namespace {
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

// A perf test's measures (award() on a GPU) reach results.json per test, as data a script reads a GPU run from;
// one without its quantity, value or unit is not believed.
TEST(LabData, MeasuresReachResultsJson) {
  const DeclaredTest t{"P", "Copy", "perf", 6};
  const nlohmann::json measure = {{"quantity", "copy"}, {"value", 2.9e12}, {"unit", "B/s"}, {"against", "copy_bandwidth"},
                                  {"reference", 3e12}, {"fraction", 2.9 / 3}, {"architecture", 90}};
  const auto report = [&](const nlohmann::json& props) {
    return frame('S', nlohmann::json{{"suite", "P"}, {"name", "Copy"}}.dump()) +
           frame('J', nlohmann::json{{"suite", "P"}, {"name", "Copy"}, {"result", "passed"},
                                     {"failures", nlohmann::json::array()}, {"skip", ""}, {"properties", props}}.dump());
  };
  TestResult r = interpret_report(
      rooflab::report::parse(report({{"rooflab_fraction", "1.0000"}, {"rooflab_measure.copy", measure.dump()}})), 0, t);
  ASSERT_EQ(r.status, Status::passed) << r.output;
  ASSERT_EQ(r.measures.size(), 1u);
  r.lab = "09";
  r.id = "P.Copy";
  Lab lab;
  lab.id = "09";
  const auto j = nlohmann::json::parse(gradescope_json({LabResults{&lab, "dir", {r}, ""}}, "h"));
  EXPECT_EQ(j.at("tests")[0].at("rooflab_measures"), nlohmann::json::array({measure}));
  for (const char* bad : {"{", "{\"quantity\": \"copy\", \"unit\": \"B/s\"}", "{\"quantity\": \"copy\", \"value\": \"fast\", \"unit\": \"B/s\"}"}) {
    const TestResult b =
        interpret_report(rooflab::report::parse(report({{"rooflab_fraction", "1.0000"}, {"rooflab_measure.copy", bad}})), 0, t);
    EXPECT_EQ(b.status, Status::failed) << bad;
    EXPECT_NE(b.output.find("malformed measure"), std::string::npos) << b.output;
  }
}

// ---- the numbers the rubric and the handout state agree with the lab's thresholds.json ----
//
// A lab's thresholds are written once, in labs/NN-name/thresholds.json; its rubric's "checks" text and its
// handout's tables restate them for students. A number stated as a threshold is one written "90%" (0.9),
// "1.6x" (1.6) or "<= 0.25" (0.25); sizes ("8192 x 8192", "4096^3") are not. Checked here, without building:
//   - a perf test's rubric entry states exactly the numbers of the rules it lists (full_at and zero_at of a
//     sliding rule, the bound of a ratio rule), and a perf entry without rules states none;
//   - a handout table row that names such a test (`Lab04Perf.Warptile...` or `.Warptile...`) does the same;
//   - a number in a handout table column headed "full ..." or "none ..." and in the kinds table's perf row is
//     one of the lab's rules (or the implausible-above margin, "5% above").

namespace {

std::vector<double> stated_numbers(const std::string& text) {
  static const std::regex kStated(R"((\d+(?:\.\d+)?)\s*%|(?:^|[^\w.])(\d+(?:\.\d+)?)x(?![\w])|<=\s*(\d+(?:\.\d+)?))");
  std::vector<double> out;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), kStated); it != std::sregex_iterator(); ++it) {
    const auto& m = *it;
    if (m[1].matched) out.push_back(std::stod(m[1].str()) / 100);
    else if (m[2].matched) out.push_back(std::stod(m[2].str()));
    else out.push_back(std::stod(m[3].str()));
  }
  return out;
}

std::vector<double> rule_numbers(const rooflab::Threshold& t) {
  if (!t.sliding()) return {t.value};
  std::vector<double> out{t.full_at, t.zero_at};
  for (const auto& a : t.by_architecture) {  // the numbers on other architectures are stated too
    out.push_back(a.full_at);
    out.push_back(a.zero_at);
  }
  return out;
}

bool holds_number(const std::vector<double>& xs, double x) {
  return std::any_of(xs.begin(), xs.end(), [x](double y) { return std::abs(x - y) <= 1e-9 * std::max(1.0, std::abs(y)); });
}

// "" when every number `text` states is in `allowed` and, with `exact`, every number of `required` is stated.
std::string text_mismatch(const std::string& text, const std::vector<double>& allowed, const std::vector<double>& required) {
  const auto stated = stated_numbers(text);
  std::string out;
  for (double x : stated) {
    if (!holds_number(allowed, x)) out += fmt::format(" states {:g}, which is no threshold of it;", x);
  }
  for (double x : required) {
    if (!holds_number(stated, x)) out += fmt::format(" does not state {:g};", x);
  }
  return out;
}

std::vector<std::string> table_cells(const std::string& row) {
  std::vector<std::string> cells;
  std::string cell;
  for (std::size_t i = 1; i < row.size(); ++i) {
    if (row[i] == '|' && row[i - 1] != '\\') {
      cells.push_back(cell);
      cell.clear();
    } else {
      cell += row[i];
    }
  }
  return cells;
}

struct LabText {
  std::vector<rooflab::Threshold> rules;
  rooflab::rubric::Rubric rubric;
  std::vector<std::string> readme;  // lines
};

// The numbers of the rules a rubric entry lists (empty for a perf test that grades by none).
std::vector<double> entry_numbers(const LabText& lab, const rooflab::rubric::Entry& e) {
  std::vector<double> out;
  for (const auto& q : e.thresholds) {
    for (const auto& t : lab.rules) {
      if (t.quantity == q) for (double x : rule_numbers(t)) out.push_back(x);
    }
  }
  return out;
}

// The tests a table cell names: `Suite.Name`, or `.Name` after a row that named the suite (`suite`, updated).
std::vector<std::string> tests_named(const std::string& cell, std::string& suite) {
  static const std::regex kName(R"(`(\w*)\.(\w+)`)");
  std::vector<std::string> out;
  for (auto it = std::sregex_iterator(cell.begin(), cell.end(), kName); it != std::sregex_iterator(); ++it) {
    if ((*it)[1].length() > 0) suite = (*it)[1].str();
    if (!suite.empty()) out.push_back(suite + "." + (*it)[2].str());
  }
  return out;
}

// Every disagreement of the lab's rubric checks and handout tables with its rules, one per line.
std::string threshold_text_mismatch(const LabText& lab, double implausible_above) {
  std::string out;
  std::vector<double> any_rule = {implausible_above - 1};
  for (const auto& t : lab.rules) {
    for (double x : rule_numbers(t)) any_rule.push_back(x);
    // The share of its roof below which a ratio counts the student's own baseline as slowed (a handout may say it).
    if (t.student_baseline) any_rule.push_back(t.student_baseline->roof_fraction);
  }
  for (const auto& e : lab.rubric.tests) {
    if (e.kind != "perf") continue;
    const auto want = entry_numbers(lab, e);
    if (auto m = text_mismatch(e.checks, want, want); !m.empty()) out += fmt::format("rubric {} checks:{}\n", e.test, m);
  }
  std::vector<std::string> header;
  std::string suite;  // of the last test a row of this table named in full
  for (std::size_t i = 0; i < lab.readme.size(); ++i) {
    const std::string& line = lab.readme[i];
    if (!line.starts_with("|")) {
      header.clear();
      suite.clear();
      continue;
    }
    if (i + 1 < lab.readme.size() && lab.readme[i + 1].starts_with("|--")) header = table_cells(line);
    if (line.starts_with("|--")) continue;
    const auto cells = table_cells(line);
    if (cells.empty()) continue;
    const std::string where = fmt::format("README.md line {}", i + 1);
    bool named = false;
    for (const std::string& id : tests_named(cells[0], suite)) {
      for (const auto& e : lab.rubric.tests) {
        if (e.kind != "perf" || e.test != id) continue;
        named = true;
        const auto want = entry_numbers(lab, e);
        if (auto m = text_mismatch(line, want, want); !m.empty()) out += fmt::format("{} ({}):{}\n", where, e.test, m);
      }
    }
    if (named) continue;
    if (cells[0].find("perf") != std::string::npos && cells[0].size() <= 6) {
      if (auto m = text_mismatch(line, any_rule, {}); !m.empty()) out += fmt::format("{} (kinds table, perf):{}\n", where, m);
      continue;
    }
    for (std::size_t c = 0; c < cells.size() && c < header.size(); ++c) {
      const bool threshold_column = header[c].find("full") != std::string::npos || header[c].find("none") != std::string::npos ||
                                    header[c].find("no points") != std::string::npos;
      if (!threshold_column) continue;
      if (auto m = text_mismatch(cells[c], any_rule, {}); !m.empty()) out += fmt::format("{} (column{}):{}\n", where, header[c], m);
    }
  }
  return out;
}

LabText read_lab_text(const fs::path& dir) {
  LabText lab;
  lab.rubric = rooflab::rubric::load(dir / "rubric.json");
  lab.rules = rooflab::load_lab_thresholds(dir / "thresholds.json", lab.rubric.lab);
  std::ifstream in(dir / "README.md");
  for (std::string line; std::getline(in, line);) lab.readme.push_back(line);
  return lab;
}

}  // namespace

TEST(LabData, ThresholdTextMismatchFindsEveryWrongNumber) {
  rooflab::Threshold copy;
  copy.quantity = "copy";
  copy.kind = "ceiling_fraction";
  copy.full_at = 0.9;
  copy.zero_at = 0.5;
  rooflab::Threshold ratio;
  ratio.quantity = "ratio";
  ratio.kind = "ratio_max";
  ratio.value = 1.3;
  LabText lab;
  lab.rules = {copy, ratio};
  lab.rubric.tests = {{"P.Copy", "perf", 6, "copy at 8192 x 8192: full at 90%, none at 50%", {"copy"}},
                      {"P.Ratio", "perf", 6, "within 1.3x (pass/fail)", {"ratio"}},
                      {"P.Plot", "perf", 0, "draws the plot at 2^20 and 4096^3 (no points)"}};
  lab.readme = {"| test | points | full at | none at |", "|---|---|---|---|", "| `P.Copy` | 6 | 90% | 50% |",
                "| `.Ratio` | 6 | <= 1.3 | - |", "", "| kind | points | how |", "|---|---|---|",
                "| perf | 12 | full at 90%; 5% above is rejected |"};
  EXPECT_EQ(threshold_text_mismatch(lab, 1.05), "");
  lab.rubric.tests[0].checks = "full at 85%, none at 50%";
  lab.rubric.tests[1].checks = "within 1.3x, or 2x";
  lab.readme[2] = "| `P.Copy` | 6 | 90% | 40% |";
  lab.readme[3] = "| `.Ratio` | 6 | pass/fail | - |";
  lab.readme[7] = "| perf | 12 | full at 92% |";
  const std::string m = threshold_text_mismatch(lab, 1.05);
  EXPECT_NE(m.find("rubric P.Copy checks: states 0.85, which is no threshold of it; does not state 0.9;"), std::string::npos) << m;
  EXPECT_NE(m.find("rubric P.Ratio checks: states 2,"), std::string::npos) << m;
  EXPECT_NE(m.find("line 3 (P.Copy): states 0.4,"), std::string::npos) << m;
  EXPECT_NE(m.find("line 4 (P.Ratio): does not state 1.3;"), std::string::npos) << m;
  EXPECT_NE(m.find("line 8 (kinds table, perf): states 0.92,"), std::string::npos) << m;
}

// Every lab folder: its rubric's checks and its handout's threshold tables state its thresholds.json.
TEST(LabData, RubricAndHandoutStateTheLabsThresholds) {
  const double implausible = rooflab::implausible_above();
  int labs = 0;
  for (const auto& e : fs::directory_iterator(rooflab::labs_dir())) {
    if (!e.is_directory() || !fs::exists(e.path() / "thresholds.json")) continue;
    SCOPED_TRACE(e.path().string());
    const std::string m = threshold_text_mismatch(read_lab_text(e.path()), implausible);
    EXPECT_EQ(m, "") << e.path().filename().string() << ": the rubric or the handout states a number that "
                     << "thresholds.json does not have (thresholds.json is the one place they are written):\n" << m;
    ++labs;
  }
  EXPECT_GE(labs, 8);
}
