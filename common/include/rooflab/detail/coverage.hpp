// Line and branch coverage of the student's .cu files under the correctness tests (issue "Tests whose inputs
// reach every branch"): which lines no test ran and which branch outcomes no test took.
//
// The lab's coverage binary (cmake/RooflabLab.cmake, <lab>_coverage) is the emu binary with the student's
// kernels compiled by GCC with --coverage at -O0 (what gcov reports at -O0 is the source's own branches: at -O1
// and above, inlined header code and vectorized loops add branches no input can take). The process keeps its
// counters in a directory of its own (GCOV_PREFIX), writes them once at the end (__gcov_dump), and reads them
// back through gcov's JSON output. Only files named *.cu or *.cuh are reported: the rewriter starts each student
// file with `#line 1 "<its path>"`, and the course's headers are .hpp.
//
//   - In CI, labNN.emu.coverage runs the reference solutions' coverage binary (ROOFLAB_EMU_COVERAGE=1) and fails
//     on any gap that the solution's coverage.json does not allow, with a reason per entry.
//   - In a grade, the grader runs the student's coverage binary once and shows the gaps as a 0-point hint.
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace rooflab::coverage {

// One stretch of a file that no test reached: lines never run (first..last), or one line that ran with branch
// outcomes never taken (`untaken` of `outcomes`).
struct Gap {
  std::string file;  // as the compiler saw it (absolute)
  int first = 0;
  int last = 0;
  int untaken = 0;   // 0: the lines never ran
  int outcomes = 0;
  std::string text;  // the first line's source, trimmed
  std::string allowed_by;  // non-empty: an allow entry's reason covers it
};

// True when this process carries gcov counters (linked with --coverage).
bool instrumented();

// Points GCOV_PREFIX at a fresh private directory (before any counter is written) and returns it; nullopt
// when the process is not instrumented.
std::optional<std::filesystem::path> begin();

// Writes the counters (once), reads them back with gcov and returns the gaps of the *.cu / *.cuh files, in
// file and line order. Throws std::runtime_error when gcov cannot be run or its output is not understood.
std::vector<Gap> collect(const std::filesystem::path& dir);

// Writes the counters if collect() did not, and removes the directory begin() made.
void end(const std::filesystem::path& dir);

// gcov's JSON (gcov --json-format --stdout --branch-counts) of one object, merged into `files`: what the
// gaps are computed from. Exposed for the tests.
struct LineCounts {
  long long count = 0;
  std::vector<long long> outcomes;  // per non-throw branch outcome, summed position-wise over instances
};
using FileCounts = std::map<int, LineCounts>;
void merge_gcov_json(const nlohmann::json& gcov, std::map<std::string, FileCounts>& files);
std::vector<Gap> gaps_of(const std::map<std::string, FileCounts>& files);

// Marks the gaps an allow list excuses: {"allow": [{"line": "<substring of the source line>", "why": "..."}]}.
// Returns the entries that excused nothing (stale entries: an error in CI). Throws on a malformed list.
std::vector<std::string> apply_allow_list(std::vector<Gap>& gaps, const nlohmann::json& allow);

// "kernels.cu:88-95 never run: `if (n >= kHugeArray) {`" and
// "kernels.cu:176: 1 of 4 branch outcomes never taken: `if (aligned(a) && n % 4 == 0) {`", one per line.
std::string describe(const std::vector<Gap>& gaps);

// The gaps as JSON (the grader's hint reads them from the report channel) and back.
nlohmann::json to_json(const std::vector<Gap>& gaps);
std::vector<Gap> from_json(const nlohmann::json& j);

}  // namespace rooflab::coverage
