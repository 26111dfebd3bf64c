// Build orchestration: configure a build tree for a source of student files, build one test binary at a
// time (a student's compile error costs that binary's tests, not the run), assemble a submission.
#pragma once

#include "manifest.hpp"
#include "process.hpp"

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace rooflab::grader {

struct BuildTree {
  std::filesystem::path source_dir;
  std::filesystem::path build_dir;
  std::string preset;                       // configure preset (default, solutions, ...)
  std::map<std::string, std::string> defs;  // extra -D definitions
};

ProcessResult configure(const BuildTree& tree, bool echo);
ProcessResult build_target(const std::filesystem::path& build_dir, const std::string& target, bool echo);

// The compiler's error lines with a little context, at most `max_lines`: what a student needs to see.
std::string compile_errors(const std::string& build_output, int max_lines = 40);

// Copies the whitelisted student files of `labs` from a submission into `dest` laid out like labs/.
// A submission may hold <lab dir>/<file> or, when one lab is graded, the files at its top level. A file
// the submission lacks is taken from labs/ (the stub) and named in the returned notes.
std::vector<std::string> assemble_submission(const std::vector<const Lab*>& labs,
                                             const std::filesystem::path& submission,
                                             const std::filesystem::path& dest);

}  // namespace rooflab::grader
