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
  // perf only: the data/thresholds.json quantities the test grades by (award() refuses any other; a CPU
  // test checks them one for one against thresholds.json and the lab's kernel registry)
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

// The one table of kinds: does a binary of `binary_kind` hold tests of `rubric_kind`, and as what kind
// are they graded there.
bool holds(std::string_view binary_kind, std::string_view rubric_kind);
std::string graded_kind(std::string_view binary_kind, std::string_view rubric_kind);
// The points a test earns in a binary of that kind: its rubric points, except 0 for every dry run.
double graded_points(std::string_view binary_kind, const Entry& e);
bool is_binary_kind(std::string_view binary_kind);

// "" when `registered` (Suite.Name ids, as the binary's test framework lists them) is exactly the rubric's
// tests of that binary kind; otherwise which tests are missing from which side.
std::string mismatch(const Rubric& r, std::string_view binary_kind, const std::vector<std::string>& registered);

}  // namespace rooflab::rubric
