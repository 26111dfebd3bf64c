// The labs as the grader reads them: rubrics, handouts, stubs and solutions, forbidden libraries.
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

// The text outside the STUDENT BEGIN/END fences, each fence reduced to its id.
std::string outside_fences(const std::string& text, std::vector<std::string>* ids) {
  static const std::regex fence(R"(// STUDENT BEGIN \(([\w.]+)\)[\s\S]*?// STUDENT END)");
  std::string out;
  auto last = text.cbegin();
  for (auto it = std::sregex_iterator(text.begin(), text.end(), fence); it != std::sregex_iterator(); ++it) {
    out.append(last, text.cbegin() + it->position(0));
    out += "<fence " + (*it)[1].str() + ">";
    ids->push_back((*it)[1]);
    last = text.cbegin() + it->position(0) + it->length(0);
  }
  out.append(last, text.cend());
  return out;
}

}  // namespace

TEST(Rubric, GivesEachBinaryItsTestsAndRefusesBadEntries) {
  const auto r = rooflab::rubric::parse(R"({"lab": "09", "tests": [
    {"test": "Lab09Analytic.Bytes", "kind": "analytic", "points": 4, "checks": "bytes"},
    {"test": "Lab09Kernels.Copy", "kind": "correctness", "points": 2.5, "checks": "copy"},
    {"test": "Lab09Perf.Copy", "kind": "perf", "points": 6, "checks": "copy GB/s"},
    {"test": "Lab09Races.None", "kind": "race", "points": 0, "checks": "no races"}]})", "test");
  const auto emu = declared_tests(r, "emu");
  ASSERT_EQ(emu.size(), 1u);
  EXPECT_EQ(emu[0].id(), "Lab09Kernels.Copy");
  EXPECT_EQ(emu[0].kind, "emu");
  EXPECT_DOUBLE_EQ(emu[0].points, 2.5);
  const auto gpu = declared_tests(r, "gpu");
  ASSERT_EQ(gpu.size(), 2u);
  EXPECT_EQ(gpu[0].kind, "gpu");
  EXPECT_EQ(gpu[1].kind, "perf");
  EXPECT_EQ(declared_tests(r, "analytic").size(), 1u);
  EXPECT_EQ(declared_tests(r, "race").size(), 1u);
  EXPECT_TRUE(declared_tests(r, "static").empty());
  // A binary must register exactly its tests.
  EXPECT_EQ(rooflab::rubric::mismatch(r, "gpu", {"Lab09Kernels.Copy", "Lab09Perf.Copy"}), "");
  EXPECT_NE(rooflab::rubric::mismatch(r, "gpu", {"Lab09Kernels.Copy"}).find("Lab09Perf.Copy"), std::string::npos);
  EXPECT_NE(rooflab::rubric::mismatch(r, "emu", {"Lab09Kernels.Copy", "Lab09Kernels.Extra"}).find("Extra"),
            std::string::npos);
  // Entries the grader must refuse, each with the reason.
  const auto refused = [](const std::string& test) {
    try {
      rooflab::rubric::parse(R"({"lab": "09", "tests": [)" + test + "]}", "bad");
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(refused(R"({"test": "X.Y", "kind": "speed", "points": 1, "checks": "c"})").find("unknown kind"), std::string::npos);
  EXPECT_NE(refused(R"({"test": "X.Y", "kind": "race", "points": 1, "checks": "c"})").find("hints"), std::string::npos);
  EXPECT_NE(refused(R"({"test": "X.Y", "kind": "dryrun", "points": 1, "checks": "c"})").find("no points"),
            std::string::npos);
  EXPECT_NE(refused(R"({"test": "XY", "kind": "analytic", "points": 1, "checks": "c"})").find("Suite.Name"), std::string::npos);
  EXPECT_NE(refused(R"({"test": "X.Y", "kind": "analytic", "points": 1, "checks": "c"}, {"test": "X.Y", "kind": "analytic", "points": 1, "checks": "c"})").find("twice"), std::string::npos);
  EXPECT_NE(refused(R"({"test": "X.Y", "kind": "analytic", "points": 1})").find("malformed"), std::string::npos);
}

// The handout's points tables say what the rubric says: per test (a row naming `Suite.Name`, or
// `Suite.A`, `.B` with "N each") and per kind (a row whose first cell lists kinds).
// A dry-run binary holds the perf tests and the lab's dry-run checks, graded as "dryrun" and worth nothing,
// whatever points the rubric gives the perf test on a GPU; the report never shows them as GPU figures.
TEST(Rubric, DryRunsEarnNothingAndSayWhatTheyAre) {
  const auto r = rooflab::rubric::parse(R"({"lab": "09", "tests": [
    {"test": "Lab09Kernels.Copy", "kind": "correctness", "points": 2.5, "checks": "copy"},
    {"test": "Lab09Perf.Copy", "kind": "perf", "points": 6, "checks": "copy GB/s"},
    {"test": "Lab09DryRun.Bytes", "kind": "dryrun", "points": 0, "checks": "bytes"}]})", "test");
  const auto dry = declared_tests(r, "dryrun");
  ASSERT_EQ(dry.size(), 2u);
  for (const auto& t : dry) {
    EXPECT_EQ(t.kind, "dryrun") << t.id();
    EXPECT_DOUBLE_EQ(t.points, 0.0) << t.id();
  }
  EXPECT_DOUBLE_EQ(declared_tests(r, "gpu")[1].points, 6.0);  // the GPU binary keeps the perf points
  EXPECT_TRUE(declared_tests(r, "emu").size() == 1u);
  // A student copy's dry run leaves the checks against the reference answers out (labs.json "leaves_out"):
  // its perf tests stay, and its binary, which holds only them, agrees with the rubric only when told so.
  const auto copy = declared_tests(r, "dryrun", {"dryrun"});
  ASSERT_EQ(copy.size(), 1u);
  EXPECT_EQ(copy[0].id(), "Lab09Perf.Copy");
  EXPECT_EQ(rooflab::rubric::mismatch(r, "dryrun", {"Lab09Perf.Copy"}, {"dryrun"}), "");
  EXPECT_NE(rooflab::rubric::mismatch(r, "dryrun", {"Lab09Perf.Copy"}).find("Lab09DryRun.Bytes"), std::string::npos);
  EXPECT_NE(rooflab::rubric::mismatch(r, "dryrun", {"Lab09Perf.Copy", "Lab09DryRun.Bytes"}, {"dryrun"})
                .find("in the binary, not in the rubric: Lab09DryRun.Bytes"), std::string::npos);

  Lab lab;
  lab.id = "09";
  lab.title = "t";
  TestResult passed;
  passed.lab = "09";
  passed.id = "Lab09Perf.Copy";
  passed.kind = "dryrun";
  passed.status = Status::passed;
  const LabResults lr{&lab, "dir", {passed}, ""};
  const std::string table = terminal_table(lr, false);
  EXPECT_NE(table.find("dry run: not GPU figures, no points"), std::string::npos) << table;
  EXPECT_EQ(table.find("full marks"), std::string::npos) << table;
  EXPECT_NE(markdown_report({lr}, "h").find("dry run: not GPU figures"), std::string::npos);
}

// data/test_kinds.json is the one table of kinds: a malformed row is refused with its reason, every kind a
// lab's rubric names is in it, and every binary the build made is one of its binary kinds.
TEST(TestKinds, OneTableForTheRubricsTheBuildAndTheReport) {
  const auto refused = [](const std::string& rows) {
    try {
      rooflab::rubric::parse_kinds(R"({"kinds": [)" + rows + "]}", "kinds");
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const std::string row = R"({"kind": "k", "rubric": ["k"], "binary": "k", "backend": "b", "heading": "h",
    "earns_points": false, "no_points": "hints", "needs_gpu": false, "needs_toolkit": false, "schedules": [],
    "verified": false, "thresholds": false, "opt_in": false, "student_files": "kernels"})";
  EXPECT_EQ(refused(row), "");
  EXPECT_NE(refused(row + "," + row).find("listed twice"), std::string::npos);
  std::string silent = row;
  silent.replace(silent.find("\"hints\""), 7, "\"\"");
  EXPECT_NE(refused(silent).find("no_points"), std::string::npos);
  EXPECT_NE(refused(R"({"kind": "k"})").find("malformed"), std::string::npos);

  // The real table: the report's headings and the no-points reasons come from it.
  const auto* race = rooflab::rubric::find_kind("race");
  ASSERT_NE(race, nullptr);
  EXPECT_FALSE(race->earns_points);
  EXPECT_EQ(rooflab::rubric::graded_kind("gpu", "perf"), "perf");
  EXPECT_EQ(rooflab::rubric::graded_kind("dryrun", "perf"), "dryrun");
  const auto binaries = rooflab::rubric::binary_kinds();
  for (const auto& lab : fs::directory_iterator(fs::path(ROOFLAB_SOURCE_DIR) / "labs")) {
    if (!fs::exists(lab.path() / "rubric.json")) continue;
    EXPECT_NO_THROW(rooflab::rubric::load(lab.path() / "rubric.json")) << lab.path();
  }
  const auto manifest = nlohmann::json::parse(read(fs::path(ROOFLAB_BUILD_DIR) / "rooflab" / "labs.json"));
  std::size_t seen = 0;
  for (const auto& lab : manifest.at("labs")) {
    for (const auto& [variant, v] : lab.at("variants").items()) {
      for (const auto& b : v.at("binaries")) {
        ++seen;
        const auto kind = b.at("kind").get<std::string>();
        EXPECT_NE(std::find(binaries.begin(), binaries.end(), kind), binaries.end())
            << "lab " << lab.at("id") << " variant " << variant << ": binary kind " << kind
            << " is not in data/test_kinds.json";
      }
    }
  }
  EXPECT_GT(seen, 0u);
}

TEST(Labs, HandoutPointsMatchTheRubric) {
  const Manifest m = load_manifest(ROOFLAB_BUILD_DIR);
  ASSERT_FALSE(m.labs.empty());
  static const std::regex number(R"(([0-9]+(?:\.[0-9]+)?))");
  for (const auto& lab : m.labs) {
    const auto rub = rooflab::rubric::load(lab.rubric);
    std::map<std::string, double> points;
    std::map<std::string, std::pair<int, double>> per_kind;
    for (const auto& e : rub.tests) {
      points[e.test] = e.points;
      per_kind[e.kind].first += 1;
      per_kind[e.kind].second += e.points;
    }
    std::istringstream in(read(lab.dir / "README.md"));
    int rows_checked = 0;
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("| ", 0) != 0) continue;
      std::vector<std::string> cells;
      for (std::size_t start = 1, bar; (bar = line.find('|', start)) != std::string::npos; start = bar + 1) {
        cells.push_back(line.substr(start, bar - start));
      }
      if (cells.size() < 3) continue;
      const std::string first = cells[0];
      if (first.find("`Lab") != std::string::npos) {
        // Every test named in the first cell, with "`.Name`" continuing the previous suite.
        std::vector<std::string> ids;
        static const std::regex id(R"(`(Lab\w+)?\.(\w+)`|`(Lab\w+\.\w+)`)");
        std::string suite;
        for (auto it = std::sregex_iterator(first.begin(), first.end(), id); it != std::sregex_iterator(); ++it) {
          if ((*it)[3].matched) {
            ids.push_back((*it)[3]);
            suite = ids.back().substr(0, ids.back().find('.'));
          } else {
            if ((*it)[1].matched) suite = (*it)[1];
            ids.push_back(suite + "." + (*it)[2].str());
          }
        }
        std::smatch pm;
        ASSERT_TRUE(std::regex_search(cells[1], pm, number)) << lab.dir_name() << ": " << line;
        for (const auto& t : ids) {
          ASSERT_TRUE(points.count(t)) << lab.dir_name() << "/README.md names " << t << ", which the rubric lacks";
          EXPECT_DOUBLE_EQ(points[t], std::stod(pm[1])) << lab.dir_name() << "/README.md: " << t;
          ++rows_checked;
        }
      } else {
        // "| analytic | 8 | 30 |", "| static, race | 3 | 0 |", "| perf | 6 graded + 1 plot | 40 |"
        std::vector<std::string> kinds;
        std::istringstream ks(first);
        for (std::string k; std::getline(ks, k, ',');) {
          k.erase(0, k.find_first_not_of(' '));
          k.erase(k.find_last_not_of(' ') + 1);
          kinds.push_back(k);
        }
        if (!std::all_of(kinds.begin(), kinds.end(), [&](const std::string& k) {
              return k == "analytic" || k == "correctness" || k == "perf" || k == "static" || k == "race";
            })) {
          continue;
        }
        int tests = 0;
        double pts = 0;
        for (const auto& k : kinds) {
          tests += per_kind[k].first;
          pts += per_kind[k].second;
        }
        int stated_tests = 0;
        for (auto it = std::sregex_iterator(cells[1].begin(), cells[1].end(), number); it != std::sregex_iterator(); ++it) {
          stated_tests += std::stoi((*it)[1]);
        }
        std::smatch pm;
        ASSERT_TRUE(std::regex_search(cells[2], pm, number)) << line;
        EXPECT_EQ(stated_tests, tests) << lab.dir_name() << "/README.md: " << line;
        EXPECT_DOUBLE_EQ(std::stod(pm[1]), pts) << lab.dir_name() << "/README.md: " << line;
        ++rows_checked;
      }
    }
    EXPECT_GT(rows_checked, 0) << lab.dir_name() << "/README.md has no points table";
  }
}

// A student reads the handout and the stubs without leaving the repository: no web address, no planning
// document, every link to a file that exists; and each handout shows how to launch a kernel.
TEST(Labs, HandoutsAndStubsAreSelfContained) {
  const Manifest m = load_manifest(ROOFLAB_BUILD_DIR);
  ASSERT_FALSE(m.labs.empty());
  static const std::regex link(R"(\]\(([^)#]*)(#[^)]*)?\))");
  for (const auto& lab : m.labs) {
    for (const char* file : {"README.md", "kernels.cu", "answers.cpp"}) {
      const fs::path path = lab.dir / file;
      if (!fs::exists(path)) continue;
      const std::string text = read(path);
      for (const char* outside : {"http://", "https://", "course reference", "www."}) {
        EXPECT_EQ(text.find(outside), std::string::npos) << path << " points outside the repository: " << outside;
      }
      for (auto it = std::sregex_iterator(text.begin(), text.end(), link); it != std::sregex_iterator(); ++it) {
        const std::string target = (*it)[1];
        if (!target.empty()) {
          EXPECT_TRUE(fs::exists(lab.dir / target)) << path << " links to " << target;
        }
      }
    }
    const std::string handout = read(lab.dir / "README.md");
    EXPECT_NE(handout.find("<<<"), std::string::npos) << lab.dir_name() << "/README.md never shows a launch";
    EXPECT_NE(handout.find("ROOFLAB_LAUNCH_CHECK"), std::string::npos)
        << lab.dir_name() << "/README.md never says how to check a launch";
  }
}

// Everything a student or a contributor reads must be in the repository: no citation of planning documents
// that ship elsewhere.
TEST(Labs, NothingCitesAPathOutsideTheRepository) {
  const fs::path root = ROOFLAB_SOURCE_DIR;
  int files = 0;
  for (const char* dir : {"common", "grader", "labs", "solutions", "data", "docs", "cmake"}) {
    for (const auto& e : fs::recursive_directory_iterator(root / dir)) {
      if (!e.is_regular_file() || e.path().string().find("/selftest/") != std::string::npos) continue;
      const std::string text = read(e.path());
      ++files;
      for (const char* outside : {"REFERENCE" ".md", "../" "shared/", "DESIGN" ".md", "STYLE" ".md", "CPU-BACKEND" "-NOTES"}) {
        EXPECT_EQ(text.find(outside), std::string::npos) << e.path() << " cites " << outside << ", which is not in "
                                                         << "the repository (cite docs/ or a public source)";
      }
    }
  }
  for (const char* top : {"CMakeLists.txt", "README.md", "rooflab"}) {
    EXPECT_EQ(read(root / top).find("../" "shared"), std::string::npos) << top;
    ++files;
  }
  EXPECT_GT(files, 50);
}

// The solution file differs from the stub only inside the fences.
TEST(Labs, SolutionsDifferFromStubsOnlyInsideFences) {
  const Manifest m = load_manifest(ROOFLAB_BUILD_DIR);
  ASSERT_FALSE(m.labs.empty());
  for (const auto& lab : m.labs) {
    for (const auto& file : lab.student_files) {
      const fs::path stub = lab.dir / file;
      const fs::path solution = m.source_dir / "solutions" / lab.dir_name() / file;
      ASSERT_TRUE(fs::exists(solution)) << solution;
      std::vector<std::string> stub_ids, solution_ids;
      const std::string a = outside_fences(read(stub), &stub_ids);
      const std::string b = outside_fences(read(solution), &solution_ids);
      EXPECT_FALSE(stub_ids.empty()) << stub << " has no STUDENT BEGIN/END fences";
      EXPECT_EQ(stub_ids, solution_ids) << file << ": the fences differ";
      EXPECT_EQ(a, b) << lab.dir_name() << "/" << file << ": stub and solution differ outside the fences";
      EXPECT_EQ(read(solution).find("ROOFLAB_TODO"), std::string::npos) << solution << " still has a stub step";
    }
  }
}

TEST(ForbiddenSymbols, ALabListsThemInItsRubricAndABadPatternIsItsAuthorsError) {
  const fs::path dir = fs::temp_directory_path() / ("rooflab-forbidden-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  Lab lab;
  lab.id = "09";
  lab.rubric = dir / "rubric.json";
  std::ofstream(lab.rubric) << R"({"lab": "09", "tests": []})";
  EXPECT_TRUE(forbidden_libraries(lab).empty());
  std::ofstream(lab.rubric) << R"({"lab": "09", "forbidden_symbols": [{"library": "cuBLAS", "pattern": "^cublas"}],
                                   "tests": []})";
  const auto libs = forbidden_libraries(lab);
  ASSERT_EQ(libs.size(), 1u);
  EXPECT_EQ(libs[0].library, "cuBLAS");
  std::ofstream(lab.rubric) << R"({"lab": "09", "forbidden_symbols": [{"library": "x", "pattern": "(unclosed"}], "tests": []})";
  EXPECT_THROW(forbidden_libraries(lab), std::runtime_error);
  // Labs 01 and 03 forbid the four libraries; Lab 02 allows cuBLAS (its tensor roof is the student's cuBLAS call).
  const Manifest m = load_manifest(ROOFLAB_BUILD_DIR);
  for (const char* id : {"01", "02", "03"}) {
    std::set<std::string> names;
    for (const auto& l : forbidden_libraries(m.lab(id))) names.insert(l.library);
    std::set<std::string> want{"cuDNN", "CUTLASS", "Thrust"};
    if (std::string(id) != "02") want.insert("cuBLAS");
    EXPECT_EQ(names, want) << "lab " << id;
  }
  fs::remove_all(dir);
}
