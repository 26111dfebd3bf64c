// Running a child process with a time limit, capturing its output: how every test binary and build step
// runs, so a crashing or hanging kernel costs one test, never the grader.
#pragma once

#include "sandbox.hpp"

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace rooflab::grader {

struct ProcessResult {
  int exit_code = -1;     // valid when !signaled && !timed_out
  int signal = 0;         // the signal that ended it, if any
  bool signaled = false;
  bool timed_out = false;
  bool failed_to_start = false;
  double seconds = 0;
  std::string output;     // stdout and stderr interleaved; the tail if it was very long
  // Processes it started that were still running when it ended (daemons, setsid or double-forked children),
  // one "pid 123: sleep 600" each: all of them were killed. A test that leaves any fails (runner.cpp).
  std::vector<std::string> left_running{};
  bool ok() const { return !signaled && !timed_out && !failed_to_start && exit_code == 0; }
  std::string describe() const;  // "exit code 1", "killed by SIGSEGV (segmentation fault)", "timed out after 60 s"
};

struct ProcessOptions {
  double timeout_s = 300;
  std::map<std::string, std::string> env{};  // added to (or replacing in) the parent's environment
  std::filesystem::path cwd{};               // empty: the parent's
  std::size_t max_output_bytes = 4u << 20;   // keep the last this many bytes
  bool echo = false;                         // also copy the output to our stdout as it arrives
  // Run it in this sandbox (sandbox.hpp). None: the current SandboxScope's, if any, else unconfined.
  std::optional<Sandbox> sandbox{};
  // A descriptor of ours the child gets as its descriptor 3 (the report channel, rooflab/detail/report.hpp); every
  // other one above 2 is closed in a sandboxed child.
  int pass_fd = -1;
  // Called with each complete line of output as it arrives (progress displays).
  std::function<void(const std::string&)> on_line{};
};

// The child runs in its own process group. The grader makes itself a child subreaper (PR_SET_CHILD_SUBREAPER)
// before the first one starts, so that whatever the child leaves behind, even in a session of its own or after a
// double fork, is re-parented to the grader rather than to init: when the child has ended, every process still
// descending from the grader other than the children of other run_process calls is stopped, listed in
// ProcessResult::left_running, killed and reaped.
ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& options = {});

// Whether leftovers outside the child's process group can be found (the subreaper could be set; Linux 3.4+).
// Without it, only the process group is killed when the child ends, and nothing is reported.
bool leftovers_tracked();

// While one lives, every run_process call whose options name no sandbox runs in this one: how the grade
// command reaches processes started by code that builds its own ProcessOptions (the test runner).
// An empty optional turns sandboxing off for its lifetime. Scopes nest; not thread-safe.
class SandboxScope {
 public:
  explicit SandboxScope(std::optional<Sandbox> sandbox);
  ~SandboxScope();
  SandboxScope(const SandboxScope&) = delete;
  SandboxScope& operator=(const SandboxScope&) = delete;

 private:
  std::optional<Sandbox> previous_;
};

// The last `lines` lines of `text`.
std::string tail_lines(const std::string& text, int lines);

}  // namespace rooflab::grader
