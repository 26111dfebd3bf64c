// The grader is tested too: declarations, GoogleTest reports, process isolation, scoring rules, the
// Gradescope output, submission whitelisting, and the stub/solution mirror of every lab.
#include "build.hpp"
#include "manifest.hpp"
#include "process.hpp"
#include "report.hpp"
#include "runner.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <regex>

namespace fs = std::filesystem;
using namespace rooflab::grader;

namespace {

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

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

TEST(Manifest, ScansDeclarationsAndSkipsCommentsAndDefinitions) {
  const auto tests = scan_tests_text(R"(
// ROOFLAB_TEST(Doc, Example, analytic, 4) is how a test is declared
#define X ROOFLAB_TEST(suite, name, kind, 1)
ROOFLAB_TEST(Lab01Analytic, StreamBytes, analytic, 4) { }
ROOFLAB_TEST( Lab01Kernels , Copy , correctness , 2.5 ) { }
)");
  ASSERT_EQ(tests.size(), 2u);
  EXPECT_EQ(tests[0].id(), "Lab01Analytic.StreamBytes");
  EXPECT_EQ(tests[0].kind, "analytic");
  EXPECT_EQ(tests[0].points, 4);
  EXPECT_EQ(tests[1].id(), "Lab01Kernels.Copy");
  EXPECT_EQ(tests[1].kind, "correctness");
  EXPECT_DOUBLE_EQ(tests[1].points, 2.5);
}

TEST(Runner, InterpretsGoogleTestReports) {
  const DeclaredTest t{"S", "T", "perf", 8};
  const auto report = [](const std::string& body) {
    return R"({"testsuites": [{"name": "S", "testsuite": [{"name": "T", "classname": "S", )" + body + "}]}]}";
  };
  auto r = interpret_gtest_json(report(R"("result": "COMPLETED", "rooflab_fraction": "0.2500")"), t);
  EXPECT_EQ(r.status, Status::passed);
  EXPECT_DOUBLE_EQ(r.score, 2.0);
  r = interpret_gtest_json(report(R"("result": "COMPLETED")"), t);
  EXPECT_DOUBLE_EQ(r.score, 8.0);
  r = interpret_gtest_json(report(R"("result": "SKIPPED")"), t);
  EXPECT_EQ(r.status, Status::needs_gpu);
  EXPECT_DOUBLE_EQ(r.score, 0.0);
  r = interpret_gtest_json(report(R"("result": "COMPLETED", "failures": [{"failure": "boom"}])"), t);
  EXPECT_EQ(r.status, Status::failed);
  EXPECT_NE(r.output.find("boom"), std::string::npos);
  r = interpret_gtest_json(R"({"testsuites": []})", t);
  EXPECT_EQ(r.status, Status::failed);
  r = interpret_gtest_json("not json", t);
  EXPECT_EQ(r.status, Status::failed);
}

TEST(Process, CapturesExitCodesSignalsAndHangs) {
  auto r = run_process({"sh", "-c", "echo out; echo err >&2; exit 3"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.output.find("out"), std::string::npos);
  EXPECT_NE(r.output.find("err"), std::string::npos);
  r = run_process({"sh", "-c", "kill -SEGV $$"});
  EXPECT_TRUE(r.signaled);
  EXPECT_EQ(r.signal, SIGSEGV);
  EXPECT_NE(r.describe().find("signal"), std::string::npos);
  r = run_process({"sleep", "30"}, {.timeout_s = 0.5});
  EXPECT_TRUE(r.timed_out);
  EXPECT_LT(r.seconds, 10);
  r = run_process({"/nonexistent/binary"});
  EXPECT_FALSE(r.ok());
  r = run_process({"sh", "-c", "echo $ROOFLAB_X"}, {.env = {{"ROOFLAB_X", "42"}}});
  EXPECT_EQ(r.output, "42\n");
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
  settle_correctness(no_gpu);
  EXPECT_DOUBLE_EQ(no_gpu[0].max_score, 4);
  EXPECT_DOUBLE_EQ(no_gpu[1].max_score, 0);
  EXPECT_EQ(no_gpu[1].status, Status::not_counted);
  EXPECT_DOUBLE_EQ(no_gpu[2].max_score, 4);  // performance points stay owed: "needs a GPU", never passed
  EXPECT_EQ(no_gpu[2].status, Status::needs_gpu);
  // A GPU ran: its result counts, even a failure, and the CPU backend's pass does not add to it.
  std::vector<TestResult> with_gpu = {make("emu", Status::passed, 4), make("gpu", Status::failed, 0)};
  settle_correctness(with_gpu);
  EXPECT_DOUBLE_EQ(with_gpu[0].max_score, 0);
  EXPECT_DOUBLE_EQ(with_gpu[0].score, 0);
  EXPECT_DOUBLE_EQ(with_gpu[1].max_score, 4);
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

TEST(Build, CompileErrorsKeepTheErrorLines) {
  const std::string out = "[1/3] Building\nfoo.cu(12): error: identifier \"x\" is undefined\n   x = 1;\n   ^\n"
                          "noise\nmore noise\n";
  const std::string e = compile_errors(out);
  EXPECT_NE(e.find("foo.cu(12): error"), std::string::npos);
  EXPECT_EQ(e.find("more noise"), std::string::npos);
}

TEST(Build, SubmissionTakesOnlyWhitelistedFiles) {
  const fs::path tmp = fs::temp_directory_path() / ("rooflab-grader-test-" + std::to_string(getpid()));
  fs::remove_all(tmp);
  fs::create_directories(tmp / "labs" / "01-x");
  fs::create_directories(tmp / "sub" / "01-x" / "tests");
  std::ofstream(tmp / "labs" / "01-x" / "answers.cpp") << "stub";
  std::ofstream(tmp / "sub" / "01-x" / "kernels.cu") << "mine";
  std::ofstream(tmp / "sub" / "01-x" / "tests" / "analytic.cpp") << "a student's own 'tests'";
  Lab lab;
  lab.id = "01";
  lab.name = "x";
  lab.dir = tmp / "labs" / "01-x";
  lab.student_files = {"kernels.cu", "answers.cpp"};
  const auto notes = assemble_submission({&lab}, tmp / "sub", tmp / "out").notes;
  EXPECT_EQ(read(tmp / "out" / "01-x" / "kernels.cu"), "mine");
  EXPECT_EQ(read(tmp / "out" / "01-x" / "answers.cpp"), "stub");
  EXPECT_FALSE(fs::exists(tmp / "out" / "01-x" / "tests"));
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("answers.cpp"), std::string::npos);
  fs::remove_all(tmp);
}

// STYLE.md: the solution file differs from the stub only inside the fences.
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

// Without the CUDA toolkit a binary cannot be built: its tests are still listed, owed, with the reason.
TEST(Runner, UnavailableBinariesKeepTheirPointsOwed) {
  const fs::path src = fs::temp_directory_path() / ("rooflab-unavailable-" + std::to_string(getpid()) + ".cpp");
  std::ofstream(src) << "ROOFLAB_TEST(Lab09Kernels, Copy, correctness, 4) {}\nROOFLAB_TEST(Lab09Perf, Copy, perf, 6) {}\n";
  Lab lab;
  lab.id = "09";
  Binary b;
  b.kind = "gpu";
  b.sources = {src};
  b.correctness_as = "gpu";
  b.unavailable = "no CUDA toolkit";
  auto results = run_binary(lab, b, RunOptions{});
  ASSERT_EQ(results.size(), 2u);
  for (const auto& r : results) {
    EXPECT_EQ(r.status, Status::unavailable);
    EXPECT_NE(r.output.find("no CUDA toolkit"), std::string::npos);
  }
  settle_correctness(results);
  EXPECT_DOUBLE_EQ(results[0].max_score, 0);  // correctness: counted on the CPU backend's side instead
  EXPECT_DOUBLE_EQ(results[1].max_score, 6);  // performance: owed
  fs::remove(src);
}
