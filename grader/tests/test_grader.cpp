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
  EXPECT_NE(markdown_report({lr}, "h").find("dry run on the CPU: not GPU figures"), std::string::npos);
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

// A report as a test process writes it: frames (rooflab/detail/report.hpp).
std::string frame(char type, const std::string& payload) {
  std::string out(1, type);
  for (int i = 0; i < 8; ++i) out += static_cast<char>((static_cast<std::uint64_t>(payload.size()) >> (8 * i)) & 0xff);
  return out + payload;
}
std::string started(const std::string& suite, const std::string& name) {
  return frame('S', nlohmann::json{{"suite", suite}, {"name", name}}.dump());
}
std::string result(const std::string& suite, const std::string& name, const std::string& outcome,
                   nlohmann::json properties = nlohmann::json::object(), nlohmann::json failures = nlohmann::json::array()) {
  return frame('J', nlohmann::json{{"suite", suite}, {"name", name}, {"result", outcome}, {"failures", failures},
                                   {"skip", ""}, {"properties", properties}}.dump());
}

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

namespace {
// Whether a process whose command line contains `text` is running (a zombie is not).
bool running(const std::string& text) {
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmd = read(e.path() / "cmdline"), stat = read(e.path() / "stat");
    std::replace(cmd.begin(), cmd.end(), '\0', ' ');
    const auto paren = stat.rfind(')');
    const bool zombie = paren == std::string::npos || stat.substr(paren + 2, 1) == "Z";
    if (cmd.find(text) != std::string::npos && !zombie) return true;
  }
  return false;
}
}  // namespace

// What a process leaves running when it ends, in a session of its own (setsid) or after a double fork (out of
// its process group's reach either way): listed, and killed.
TEST(Process, ListsAndKillsWhatAChildLeavesRunning) {
  ASSERT_TRUE(leftovers_tracked()) << "PR_SET_CHILD_SUBREAPER is not available here";
  auto r = run_process({"sh", "-c", "setsid sleep 3171 & (setsid sleep 3172 &); echo started"}, {.timeout_s = 30});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.output, "started\n");
  ASSERT_EQ(r.left_running.size(), 2u) << fmt::format("{}", fmt::join(r.left_running, "; "));
  const std::string listed = r.left_running[0] + "; " + r.left_running[1];
  EXPECT_NE(listed.find("sleep 3171"), std::string::npos) << listed;
  EXPECT_NE(listed.find("sleep 3172"), std::string::npos) << listed;
  EXPECT_FALSE(running("sleep 3171"));
  EXPECT_FALSE(running("sleep 3172"));
  // A process that waits for its children leaves nothing; one that ended by itself is not a leftover.
  r = run_process({"sh", "-c", "sleep 0.2 & (true &); wait"}, {.timeout_s = 30});
  EXPECT_TRUE(r.ok());
  EXPECT_TRUE(r.left_running.empty()) << fmt::format("{}", fmt::join(r.left_running, "; "));
  // A leftover that writes without a pause does not keep the grader reading after its parent has ended.
  r = run_process({"sh", "-c", "(setsid yes rooflab-3175 &); exit 0"}, {.timeout_s = 20, .max_output_bytes = 1u << 16});
  EXPECT_FALSE(r.timed_out);
  EXPECT_LT(r.seconds, 10);
  ASSERT_EQ(r.left_running.size(), 1u);
  EXPECT_NE(r.left_running[0].find("yes rooflab-3175"), std::string::npos) << r.left_running[0];
  EXPECT_FALSE(running("yes rooflab-3175"));
  // A timed-out process's detached children go too.
  r = run_process({"sh", "-c", "setsid sleep 3173 & sleep 30"}, {.timeout_s = 0.5});
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.left_running.size(), 1u);
  EXPECT_FALSE(running("sleep 3173"));
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
  // The build tool's echo of the failing command (it contains -Werror) is not the error.
  const std::string nvcc = "FAILED: x.o\n/usr/local/cuda/bin/nvcc -Werror all-warnings -c k.cu -o x.o\n"
                           "k.cu(7): error: expected a \";\"\n  int x\n  ^\n";
  const std::string e2 = compile_errors(nvcc);
  EXPECT_EQ(e2.rfind("k.cu(7): error", 0), 0u) << e2;
  EXPECT_EQ(e2.find("nvcc -Werror"), std::string::npos) << e2;
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

TEST(Gradescope, ScriptsCarryTheLabsTheHiddenTestsAndTheSeed) {
  const std::string run = run_autograder_script({"01", "03"}, true, "4242");
  EXPECT_NE(run.find("labs=(01 03)"), std::string::npos);
  EXPECT_NE(run.find(R"(options=(--hidden-tests "$source/hidden-tests" --seed 4242))"), std::string::npos);
  EXPECT_NE(run_autograder_script({}, false, std::nullopt).find("options=()"), std::string::npos);
  EXPECT_NE(autograder_setup_script({"01"}, true).find("--hidden-tests hidden-tests"), std::string::npos);
  for (const std::string& script : {run, autograder_setup_script({"01"}, true)}) {
    const ProcessResult parsed = run_process({"bash", "-n", "-c", script});
    EXPECT_TRUE(parsed.ok()) << parsed.output;
  }
}

TEST(Slurm, EveryTaskGradesWithTheHiddenTests) {
  SlurmArgs a;
  a.grading.submissions = "/shared/subs";
  a.grading.out = "/shared/out";
  a.grading.hidden_tests = "/shared/hidden";
  EXPECT_NE(slurm_array_script(a, 3, "/opt/rooflab-cli").find("--hidden-tests '/shared/hidden'"), std::string::npos);
  a.grading.hidden_tests.reset();
  EXPECT_EQ(slurm_array_script(a, 3, "/opt/rooflab-cli").find("--hidden-tests"), std::string::npos);
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

TEST(Seeds, OnlyAnUnsignedIntegerIsASeed) {
  EXPECT_EQ(rooflab::parse_seed("918273"), 918273u);
  EXPECT_EQ(rooflab::parse_seed("0x10"), 16u);
  for (const char* bad : {"", "abc", "12ab", "-1", "1.5", " 7", "7 ", "99999999999999999999999"}) {
    EXPECT_FALSE(rooflab::parse_seed(bad).has_value()) << bad;
  }
  ::setenv("ROOFLAB_SEED", "secret", 1);
  EXPECT_THROW(rooflab::test_seed(), std::invalid_argument);
  EXPECT_THROW(require_numeric_seed(std::nullopt), std::invalid_argument);
  EXPECT_NO_THROW(require_numeric_seed(std::string("42")));
  ::setenv("ROOFLAB_SEED", "42", 1);
  EXPECT_EQ(rooflab::test_seed(), 42u);
  EXPECT_THROW(require_numeric_seed(std::string("4x2")), std::invalid_argument);
  ::unsetenv("ROOFLAB_SEED");
}

TEST(ClassGrading, InputHashSeesEveryByteAndWhereFilesEnd) {
  InputHash a, b, c;
  a.add_file_named("kernels.cu", "ab");
  b.add_file_named("kernels.cu", "ac");
  c.add_file_named("kernels.cua", "b");
  EXPECT_NE(a.hex(), b.hex());
  EXPECT_NE(a.hex(), c.hex());
  EXPECT_EQ(a.hex().size(), 16u);
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
