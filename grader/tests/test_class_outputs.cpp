// What an instructor imports from grade-class: the LMS file (one row per student, totals that are
// results.json's, a status), JUnit as Jenkins and GitLab read it, and a summary whose percentages count
// only the points gradable on the grading machine.
#include "class_grading.hpp"
#include "util.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <sstream>

namespace fs = std::filesystem;
using namespace rooflab::grader;

namespace {


constexpr const char* kResults = R"({"score": 5, "output": "lab 01: kernels.cu was refused (line 3: an include); graded as missing", "tests": [
  {"name": "lab01 analytic: Lab01Analytic.A", "score": 4, "max_score": 4, "rooflab_status": "passed", "output": "",
   "rooflab_seconds": 0.25, "tags": ["lab01", "analytic", "host"]},
  {"name": "lab01 emu: Lab01Kernels.B", "score": 0, "max_score": 4, "rooflab_status": "crashed",
   "output": "crashed: a <wild> store & \u0001 more", "rooflab_seconds": 1.5, "tags": ["lab01", "emu", "CPU backend"]},
  {"name": "lab01 emu: Lab01Kernels.C", "score": 1, "max_score": 2, "rooflab_status": "failed", "output": "3 of 9 wrong",
   "rooflab_seconds": 0.5, "tags": ["lab01", "emu", "CPU backend"]},
  {"name": "lab01 race: Lab01Race.D", "score": 0, "max_score": 0, "rooflab_status": "failed", "output": "a race",
   "rooflab_seconds": 2, "tags": ["lab01", "race", "CPU backend"]},
  {"name": "lab01 perf: Lab01Perf.E", "score": 0, "max_score": 8, "rooflab_status": "needs a GPU", "output": "",
   "tags": ["lab01", "perf", "GPU"]}]})";

// The counts a JUnit reader trusts, checked against the elements they count: every <testsuite> and the
// <testsuites> root carry tests, failures, errors, skipped and time; every <testcase> a classname, a name and
// a time, and at most one of <failure>, <error>, <skipped> (the JUnit XSD that Jenkins and GitLab read).
void expect_consistent_junit(const std::string& x) {
  const std::regex suite(
      R"re(<testsuite name="[^"]*" tests="(\d+)" failures="(\d+)" errors="(\d+)" skipped="(\d+)" time="[0-9.]+">([\s\S]*?)</testsuite>)re");
  int suites = 0;
  for (auto it = std::sregex_iterator(x.begin(), x.end(), suite); it != std::sregex_iterator(); ++it, ++suites) {
    const std::string body = (*it)[5];
    const auto count = [&](const std::string& what) {
      int n = 0;
      for (std::size_t at = body.find(what); at != std::string::npos; at = body.find(what, at + 1)) ++n;
      return n;
    };
    EXPECT_EQ(std::stoi((*it)[1]), count("<testcase ")) << body;
    EXPECT_EQ(std::stoi((*it)[2]), count("<failure ")) << body;
    EXPECT_EQ(std::stoi((*it)[3]), count("<error ")) << body;
    EXPECT_EQ(std::stoi((*it)[4]), count("<skipped ")) << body;
    const std::regex testcase(R"re(<testcase classname="[^"]+" name="[^"]+" time="[0-9.]+">([\s\S]*?)</testcase>)re");
    int cases = 0;
    for (auto c = std::sregex_iterator(body.begin(), body.end(), testcase); c != std::sregex_iterator(); ++c, ++cases) {
      const std::string inner = (*c)[1];
      const int outcomes = (inner.find("<failure ") != std::string::npos) + (inner.find("<error ") != std::string::npos) +
                           (inner.find("<skipped ") != std::string::npos);
      EXPECT_LE(outcomes, 1) << inner;
    }
    EXPECT_EQ(cases, count("<testcase ")) << "a testcase without classname, name or time:\n" << body;
  }
  EXPECT_GT(suites, 0) << x;
  EXPECT_NE(x.find("<testsuites name="), std::string::npos);
}

struct ClassDir {
  fs::path out = fs::temp_directory_path() / ("rooflab-class-outputs-" + std::to_string(getpid()));
  ClassDir() {
    fs::remove_all(out);
    fs::create_directories(out / "students" / "alice");
    fs::create_directories(out / "students" / "bob");
    std::ofstream(out / "roster.json") << R"({"labs": ["01"], "students": ["alice", "bob"]})";
    std::ofstream(out / "students" / "alice" / "status.json") << R"({"graded": true})";
    std::ofstream(out / "students" / "alice" / "results.json") << kResults;
    std::ofstream(out / "students" / "bob" / "status.json") << R"({"graded": false, "reason": "refused: a path with .."})";
  }
  ~ClassDir() { fs::remove_all(out); }
};

}  // namespace

TEST(ClassOutputs, JunitErrorsFailuresSkipsAndTimes) {
  const std::string x = junit_xml("o'brien <3", kResults);
  expect_consistent_junit(x);
  EXPECT_NE(x.find(R"(<testsuites name="rooflab o&apos;brien &lt;3" tests="5" failures="1" errors="1" skipped="2" time="4.250">)"),
            std::string::npos) << x;
  EXPECT_NE(x.find(R"(<error message="crashed" type="crashed">crashed: a &lt;wild&gt; store &amp; ? more</error>)"),
            std::string::npos) << x;
  EXPECT_NE(x.find(R"(<failure message="failed: 1 of 2 points")"), std::string::npos) << x;
  EXPECT_NE(x.find(R"(<skipped message="needs a GPU"/>)"), std::string::npos) << x;
  EXPECT_NE(x.find(R"(<skipped message="hint (no points): failed"/>)"), std::string::npos) << "a hint is no failure:\n" << x;
  EXPECT_NE(x.find(R"(classname="o&apos;brien &lt;3.lab01.emu" name="Lab01Kernels.B" time="1.500")"), std::string::npos) << x;
}

TEST(ClassOutputs, AStudentNotGradedHasAJunitFileWithAnError) {
  const std::string x = junit_not_graded("bob", {"01", "07"}, "refused: a path with ..");
  expect_consistent_junit(x);
  EXPECT_NE(x.find(R"(tests="2" failures="0" errors="2")"), std::string::npos) << x;
  EXPECT_NE(x.find("refused: a path with .."), std::string::npos) << x;
}

TEST(ClassOutputs, TheLmsFileHasOneRowPerStudentWithTotalsAndStatus) {
  const ClassDir c;
  const std::string summary = collect_class(c.out);
  std::istringstream csv(read_all(c.out / "grades-lms.csv"));
  std::string header, alice, bob, extra;
  std::getline(csv, header);
  std::getline(csv, alice);
  std::getline(csv, bob);
  EXPECT_FALSE(std::getline(csv, extra)) << "one row per student";
  EXPECT_EQ(header, "student,lab01,lab01_gradable,lab01_gpu_owed,total,total_gradable,total_gpu_owed,status");
  // 5 points of the 10 gradable here (the hint counts 0 of 0); the GPU owes 8; the total is results.json's score.
  const double score = nlohmann::json::parse(kResults)["score"].get<double>();
  EXPECT_EQ(alice.rfind(fmt::format("alice,{0:g},10,8,{0:g},10,8,", score), 0), 0u) << alice;
  EXPECT_NE(alice.find("crashed in lab01 Lab01Kernels.B"), std::string::npos) << alice;
  EXPECT_NE(alice.find("refused: lab 01: kernels.cu was refused (line 3: an include)"), std::string::npos) << alice;
  EXPECT_EQ(bob, "bob,0,0,0,0,0,0,not graded: refused: a path with ..");
  EXPECT_TRUE(fs::exists(c.out / "junit" / "bob.xml")) << "a student who was not graded still has a JUnit file";
  // The summary divides by what was gradable, and names the GPU's points apart.
  EXPECT_NE(summary.find("5.0/10"), std::string::npos) << summary;
  EXPECT_NE(summary.find("mean 50%"), std::string::npos) << summary;
  EXPECT_NE(summary.find("a GPU grades lab01 8 more per student"), std::string::npos) << summary;
}
