// The rooflab CLI's subcommands. Exit codes (README.md, "Instructors"): 0 ran (whatever the score), 2 usage error,
// 3 the harness itself failed to build; 4 a command that needs a GPU found none.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace rooflab::grader {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitHarness = 3;
inline constexpr int kExitNoGpu = 4;

struct GradeArgs {
  std::vector<std::string> labs;  // empty: all
  bool solutions = false;
  std::optional<std::filesystem::path> submission;
  std::optional<std::filesystem::path> json;
  std::optional<std::filesystem::path> report_dir;
  std::optional<std::filesystem::path> build_dir;  // where to build (parallel graders each need their own)
  std::optional<std::string> seed;
  double timeout_s = 300;
  bool verbose = false;
  bool no_color = false;
  // Check each passing test's values against a run of the reference solutions' binaries (built in
  // build/solutions). Default: on for --submission, off otherwise.
  std::optional<bool> verify;
  bool no_sandbox = false;  // run student processes unconfined (debugging the grader only)
  // The student's loop: only these binary kinds (analytic, emu, gpu, static, race), only tests whose id
  // contains `test`, re-grade on every save. A focused run is not a grade (the summary says so).
  std::vector<std::string> kinds;
  std::string test;
  bool watch = false;
  bool all_kinds = false;  // also build the kinds this machine cannot run (GPU binaries without a GPU)
  // Instructors' hidden tests: DIR/<NN>/rubric.json and DIR/<NN>/<kind>*.cpp, built into lab NN's binaries
  // (and the reference solutions' ones they are verified against) and graded like the public tests.
  std::optional<std::filesystem::path> hidden_tests;
  bool gradescope = false;  // write results.json for Gradescope's autograder (gradescope.hpp)
};

struct SelftestArgs {
  std::filesystem::path build_dir;
  std::string lab;
  std::string variant;
  std::optional<std::filesystem::path> json;  // also write the variant's results.json here
};

struct InspectArgs {
  std::string lab = "01";
  std::string gpu = "a100-80gb-sxm4";
  std::string arch;   // empty: the GPU's own architecture when captured
  double n = 1 << 28;
  bool json = false;
  bool solutions = false;
};

int cmd_grade(const GradeArgs& args);
int cmd_inspect(const InspectArgs& args);
int cmd_list(bool json);
int cmd_calibrate(bool remeasure);
int cmd_selftest(const SelftestArgs& args);

// Throws std::invalid_argument (a usage error) when the seed given, or else ROOFLAB_SEED, is not an unsigned
// integer (rooflab::parse_seed): a mistyped secret seed must not grade a class with seed 0.
void require_numeric_seed(const std::optional<std::string>& seed);

// What a hidden-tests folder holds for `lab_id`: "lab 01: 2 hidden tests (DIR/01)", or why none. Throws
// std::invalid_argument when DIR is not a folder.
std::string hidden_tests_note(const std::filesystem::path& dir, const std::string& lab_id);

// The time now in UTC ("2026-11-23 18:45 UTC", with seconds when asked), for headers and logs.
std::string utc_now(bool seconds = false);
// Writes `text` to `path` whole or not at all (a temporary file renamed into place), making its folder.
void write_text(const std::filesystem::path& path, const std::string& text);

// The build tree this CLI was built in (where labs/ is built by default) and the project's source.
std::filesystem::path own_build_dir();
std::filesystem::path source_dir();

}  // namespace rooflab::grader
