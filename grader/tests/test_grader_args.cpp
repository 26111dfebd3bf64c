// Grade options written back as command lines (grade_args.cpp, cli.cpp) for class grading, Slurm and Gradescope; seeds.
// The grader is tested too: declarations, test reports and their verification, process isolation, scoring rules, the
// Gradescope output, submission whitelisting, and the stub/solution mirror of every lab.
#include "build.hpp"
#include "cli.hpp"
#include "grade_args.hpp"
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

TEST(Gradescope, ScriptsCarryTheLabsTheHiddenTestsAndTheSeed) {
  const std::string run = run_autograder_script({"01", "03"}, true, "4242");
  // The script's own paths are expansions (double quotes), the rest as to_argv writes them.
  EXPECT_NE(run.find(R"(grade=(grade 01 03 --submission "$work/submission" --build-dir "$build" --json "$results" )"
                     R"(--report-dir "$work/report" --gradescope --kind analytic --kind emu --no-color --seed 4242 )"
                     R"(--hidden-tests "$source/hidden-tests" --reference-values "$source/reference"))"),
            std::string::npos) << run;
  EXPECT_EQ(run_autograder_script({}, false, std::nullopt).find("--hidden-tests"), std::string::npos);
  EXPECT_NE(autograder_setup_script({"01"}, true).find("--hidden-tests hidden-tests --reference-values reference"),
            std::string::npos);
  for (const std::string& script : {run, autograder_setup_script({"01"}, true)}) {
    const ProcessResult parsed = run_process({"bash", "-n", "-c", script});
    EXPECT_TRUE(parsed.ok()) << parsed.output;
  }
  // What bash makes of the line is what the grader's own parser reads back.
  const std::string line = run.substr(run.find("grade=("), run.find('\n', run.find("grade=(")) - run.find("grade=("));
  const ProcessResult words = run_process(
      {"bash", "-c", "work=/w; build=/b; results=/r.json; source=/s; " + line + "; printf '%s\\n' \"${grade[@]}\""});
  ASSERT_TRUE(words.ok()) << words.output;
  std::vector<std::string> argv;
  std::istringstream in(words.output);
  for (std::string w; std::getline(in, w);) argv.push_back(w);
  ASSERT_FALSE(argv.empty());
  EXPECT_EQ(argv[argv.size() - 3], "/s/hidden-tests");
  EXPECT_EQ(argv[argv.size() - 1], "/s/reference");
  // The package verifies against what it recorded, never without: --reference-values and --no-verify exclude.
  const std::string tmp = fs::temp_directory_path().string();
  EXPECT_THROW(parse_grade_argv({"grade", "--reference-values", tmp, "--no-verify"}), CLI::ParseError);
  EXPECT_THROW(parse_grade_argv({"grade", "--reference-values", tmp, "--solutions"}), CLI::ParseError);
  EXPECT_EQ(argv[4], "/w/submission");
}

TEST(Slurm, EveryTaskGradesWithTheHiddenTests) {
  SlurmArgs a;
  a.grading.submissions = "/shared/subs";
  a.grading.out = "/shared/out";
  a.grading.hidden_tests = "/shared/hidden";
  EXPECT_NE(slurm_array_script(a, 3, "/opt/rooflab-cli").find("--hidden-tests /shared/hidden"), std::string::npos);
  a.grading.hidden_tests.reset();
  EXPECT_EQ(slurm_array_script(a, 3, "/opt/rooflab-cli").find("--hidden-tests"), std::string::npos);
}

TEST(Slurm, ATaskLineIsTheClassOptionsWithTheTaskAndTheTreeOfTheScript) {
  SlurmArgs a;
  a.grading.submissions = "/shared/subs dir";
  a.grading.out = "/shared/out";
  a.grading.labs = {"01"};
  a.grading.seed = "77";
  a.grading.kinds = {"analytic", "emu"};
  a.grading.chunk = 4;
  a.grading.verify = false;
  const std::string script = slurm_array_script(a, 3, "/opt/rooflab-cli");
  EXPECT_NE(script.find("/opt/rooflab-cli grade-class '/shared/subs dir' 01 --out /shared/out --chunk 4 --build-dir "
                        "\"$build\" --seed 77 --kind analytic --kind emu --no-verify --require-gpu --task "
                        "\"$SLURM_ARRAY_TASK_ID\"\n"),
            std::string::npos) << script;
}

// to_argv writes what the CLI reads: every option set away from its default comes back as it was.
TEST(GradeArgs, ToArgvRoundTripsThroughTheParser) {
  const fs::path dir = fs::temp_directory_path();  // --submission and --hidden-tests must be folders
  std::vector<GradeArgs> cases(4);
  cases[1].labs = {"01", "memory-bandwidth"};
  cases[1].submission = dir;
  cases[1].build_dir = "/b";
  cases[1].json = "/r/results.json";
  cases[1].report_dir = "/r";
  cases[1].seed = "918273";
  cases[1].timeout_s = 0.25;
  cases[1].verify = false;
  cases[1].kinds = {"analytic", "dryrun"};
  cases[1].test = "Lab01 Copy";
  cases[1].no_color = true;
  cases[1].hidden_tests = dir;
  cases[1].gradescope = true;
  cases[2].solutions = true;
  cases[2].verify = true;
  cases[2].verbose = true;
  cases[2].watch = true;
  cases[2].all_kinds = true;
  cases[2].no_sandbox = true;
  cases[2].dry_run = false;
  cases[3].timeout_s = 1e-5;
  cases[3].reference_values = dir;
  for (const auto& want : cases) {
    const auto argv = to_argv(want);
    EXPECT_EQ(parse_grade_argv(argv), want) << shell_line(argv);
  }
  EXPECT_EQ(to_argv(GradeArgs{}), std::vector<std::string>{"grade"});
}

TEST(GradeArgs, ClassArgsRoundTripThroughTheParser) {
  const fs::path dir = fs::temp_directory_path();
  std::vector<ClassArgs> cases(3);
  for (auto& c : cases) c.out = "/out";
  cases[1].submissions = "/subs";
  cases[1].labs = {"02"};
  cases[1].seed = "5";
  cases[1].timeout_s = 90;
  cases[1].kinds = {"gpu"};
  cases[1].force = true;
  cases[1].verify = false;
  cases[1].build_dir = "/b";
  cases[1].task = 3;
  cases[1].chunk = 7;
  cases[1].require_gpu = true;
  cases[1].hidden_tests = dir;
  cases[2].collect_only = true;
  cases[2].dry_run = true;
  for (const auto& want : cases) {
    const auto argv = to_argv(want);
    EXPECT_EQ(parse_class_argv(argv), want) << shell_line(argv);
  }
}

// A word is quoted when the shell would split or expand it; an expansion the script sets is double-quoted.
TEST(GradeArgs, ShellLineQuotesWhatTheShellWouldTouch) {
  EXPECT_EQ(shell_line({"grade", "01", "--seed", "42", "/a/b.json"}), "grade 01 --seed 42 /a/b.json");
  EXPECT_EQ(shell_line({"a b", "it's", "$HOME", ""}), R"('a b' 'it'\''s' '$HOME' '')");
  EXPECT_EQ(shell_line({"--build-dir", "$build"}, {"$build"}), R"(--build-dir "$build")");
  const ProcessResult echoed = run_process({"bash", "-c", "printf '%s|' " + shell_line({"a b", "it's", "$HOME", "x;y"})});
  EXPECT_EQ(echoed.output, "a b|it's|$HOME|x;y|");
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
