// A lab's rubric (labs/NN-name/rubric.json): every graded test with its kind, points and what it checks.
// It is the one place a test's points are written. The grader reads it without building anything (so a
// binary that fails to compile still lists every test it lost), each test binary checks at start-up that
// it registers exactly the rubric's tests of its kind, and a CPU test checks the handout's tables against it.
//
// Kinds as a rubric writes them: analytic | correctness | perf | static | race | dryrun. A test binary has a
// kind of its own (analytic, emu, gpu, static, race, dryrun); the table below says which tests each one holds
// and how they are graded ("correctness" tests are graded as "emu" on the CPU backend and as "gpu" under
// nvcc; "perf" tests as "perf" under nvcc and as "dryrun", worth nothing, on the CPU backend).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace rooflab::rubric {

struct Entry {
  std::string test;    // Suite.Name
  std::string kind;    // as written in the rubric
  double points = 0;
  std::string checks;  // one line: what the test checks
  // perf only: the quantities of the lab's thresholds.json the test grades by (award() refuses any other; a
  // CPU test checks them one for one against thresholds.json and the lab's kernel registry)
  std::vector<std::string> thresholds = {};
};

struct Rubric {
  std::string lab;  // "01"
  std::vector<Entry> tests;
};

// Both throw std::runtime_error naming the file and what is wrong (unknown kind, a hint with points,
// a duplicate test, a missing field).
Rubric parse(const std::string& json_text, const std::string& where);
Rubric load(const std::filesystem::path& file);

// ---- the one table of test kinds (data/test_kinds.json; its "about" says what each field means) ----
struct Kind {
  std::string kind;                 // as results.json, the report and the terminal name it: "emu"
  std::vector<std::string> rubric;  // the rubric kinds this row grades: {"correctness"}
  std::string binary;               // the test binary that holds them: "emu"
  std::string backend;              // where it runs, as results.json says
  std::string heading;              // the report's line for the kind
  bool earns_points = true;         // false for hints and dry runs: their rubric entries carry 0 points
  std::string no_points;            // why not, for the terminal table ("hints, no points")
  bool needs_gpu = false;
  bool needs_toolkit = false;
  std::vector<std::string> schedules;  // the CPU backend's thread orders, each a run of its own
  bool verified = false;               // a passing test's values are checked against the reference run
  bool thresholds = false;             // its entries may name thresholds (perf)
  bool opt_in = false;                 // not in class or Gradescope grades unless asked (grade-class --dry-run)
  std::string student_files;           // "answers" or "kernels"
};
// The rows in the report's order, read once; throws std::runtime_error naming the file when it is malformed.
const std::vector<Kind>& test_kinds();
// The row of a graded kind ("emu", "perf", ...), or nullptr.
const Kind* find_kind(std::string_view kind);
// The binary kinds, each once, in the table's order.
std::vector<std::string> binary_kinds();
// Parses a table (exposed for tests).
std::vector<Kind> parse_kinds(const std::string& json_text, const std::string& where);

// Does a binary of `binary_kind` hold tests of `rubric_kind`, and as what kind are they graded there.
bool holds(std::string_view binary_kind, std::string_view rubric_kind);
std::string graded_kind(std::string_view binary_kind, std::string_view rubric_kind);
// The points a test earns in a binary of that kind: its rubric points, except 0 where the kind earns none.
double graded_points(std::string_view binary_kind, const Entry& e);
bool is_binary_kind(std::string_view binary_kind);

// "" when `registered` (Suite.Name ids, as the binary's test framework lists them) is exactly the rubric's
// tests of that binary kind, less the entries of the rubric kinds in `leaves_out` (a student copy's dry run
// leaves out "dryrun", its checks against the reference answers); otherwise which tests are missing from which side.
std::string mismatch(const Rubric& r, std::string_view binary_kind, const std::vector<std::string>& registered,
                     const std::vector<std::string>& leaves_out = {});

}  // namespace rooflab::rubric
