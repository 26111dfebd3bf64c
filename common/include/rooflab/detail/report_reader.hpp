// The grader's half of the report channel (rooflab/detail/report.hpp, which says what the grader may believe of
// it): reading a test process's frames and comparing its recorded values with the reference run's.
#pragma once

#include <rooflab/detail/report.hpp>

#include <nlohmann/json.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rooflab::report {

struct Values {
  std::string label;
  double atol = 0;
  double rtol = 0;
  std::vector<double> data;
};

struct Report {
  std::vector<nlohmann::json> started;  // kTestStart frames
  std::vector<nlohmann::json> results;  // kResult frames
  std::vector<Values> values;
  double claimed_kernel_seconds = 0;
  std::optional<nlohmann::json> coverage;  // the kCoverage frame of a coverage binary's run
  std::string error;  // non-empty: the bytes are not a well-formed report (truncated, garbage)
};

Report parse(std::string_view bytes);

struct Verdict {
  bool ok = true;
  std::size_t checked = 0;  // values compared
  std::string message;      // why not ok
};

// Compares the values a student's process recorded with those of the reference run: same number of
// checks, same labels and sizes, every value within the reference run's tolerance (NaN never passes).
Verdict verify(const std::vector<Values>& got, const std::vector<Values>& want);

}  // namespace rooflab::report
