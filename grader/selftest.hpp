// `selftest` (used by the test suite): grade a built variant of a lab (its stubs, its solutions, or a
// known-bad case patched from the solution) and check it scores as its expectation says.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace rooflab::grader {

struct SelftestArgs {
  std::filesystem::path build_dir;
  std::string lab;
  std::string variant;
  std::optional<std::filesystem::path> json;  // also write the variant's results.json here
};

int cmd_selftest(const SelftestArgs& args);

}  // namespace rooflab::grader
