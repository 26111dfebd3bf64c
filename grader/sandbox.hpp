// The sandbox every student process runs in: the build of the student files and every test binary (which
// links student code). Enforced by Landlock in the forked child before exec, with no library and no
// privileges: the filesystem is an allow-list (read and execute the system, read the lab tree but never
// solutions/, write only a private scratch directory, or the build tree while building), TCP bind and
// connect are refused, and signals and abstract unix sockets cannot reach outside the sandbox.
// docs/instructor-guide.md ("What is isolated and what is not") says what this does and does not stop.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace rooflab::grader {

struct Sandbox {
  std::vector<std::filesystem::path> read_exec;  // may read and execute beneath these (system, the build tree)
  std::vector<std::filesystem::path> read;       // may read beneath these (the lab tree, the calibration cache)
  std::vector<std::filesystem::path> write;      // may also create, write and remove beneath these
  std::vector<std::filesystem::path> devices;    // device files it may open for writing, with ioctl
  // Required: each process gets a fresh private directory beneath it, its TMPDIR, HOME and (when the
  // caller gives none) working directory; it is removed when the process ends.
  std::filesystem::path scratch_root;
  // An argument starting with one of these names a file the process is told to write (GoogleTest's
  // report): the grader creates it empty and lets the process write that one file.
  std::vector<std::string> output_arg_prefixes = {"--gtest_output=json:", "--gtest_output=xml:"};
  // Environment variable -> directory: the variable points into the scratch directory, and the regular
  // files the process leaves there (plots) are copied to the directory when it ends.
  std::map<std::string, std::filesystem::path> collect;
  bool unshare_network = true;  // also a new, empty network namespace where the kernel allows it
};

// What this kernel offers. abi 0: no Landlock, and `unavailable` says why.
struct LandlockSupport {
  int abi = 0;
  std::string unavailable;
};
const LandlockSupport& landlock_support();

// The places a grading run involves.
struct GradingTree {
  std::filesystem::path source_dir;    // the project: labs/, common/, data/ ... and solutions/
  std::filesystem::path build_dir;     // the build tree of this run
  std::filesystem::path student_dir;   // labs/, solutions/ (--solutions) or the assembled submission
  std::vector<std::filesystem::path> readable;  // more read-only places (the calibration cache)
  std::filesystem::path scratch_root;  // where the per-process scratch directories go
  std::vector<std::filesystem::path> build_tools = {};  // read and executed by the build only (an imported harness)
};

// `cmake --build` of student targets: writes the build tree; the source tree stays read-only.
Sandbox build_sandbox(const GradingTree& tree);
// A test binary: reads and executes the build tree, writes only its scratch directory.
Sandbox test_sandbox(const GradingTree& tree);

// What of the source tree a student process may read: every top-level entry except solutions/, reference/
// and hidden-tests/ (a Gradescope package's recorded reference values and hidden tests), build/
// (other graders' trees; the run's own tree is added on its own) and .git. The known-bad cases quote the
// solutions in their patches, so they live in solutions/NN/selftest/, unreadable with the rest of it.
std::vector<std::filesystem::path> readable_source_entries(const std::filesystem::path& source_dir);

// The device files a process may write: /dev/null, /dev/zero, /dev/full, /dev/random, /dev/urandom and
// the NVIDIA ones that exist here.
std::vector<std::filesystem::path> default_devices();

// ---- used by run_process ----

// A sandbox made ready in the parent (the ruleset, the scratch directory, the output files), so that the
// forked child only makes async-signal-safe system calls to enter it.
class PreparedSandbox {
 public:
  // Throws std::runtime_error when the scratch directory cannot be made. `argv` is scanned for output
  // arguments; `env` receives TMPDIR, HOME and the collected variables.
  PreparedSandbox(const Sandbox& sandbox, const std::vector<std::string>& argv,
                  std::map<std::string, std::string>& env);
  ~PreparedSandbox();
  PreparedSandbox(const PreparedSandbox&) = delete;
  PreparedSandbox& operator=(const PreparedSandbox&) = delete;

  const std::filesystem::path& scratch() const { return scratch_; }
  // In the child, after fork: no new privileges, no capabilities, a new network namespace where allowed,
  // then the Landlock domain. Returns 0 or the errno of the step that failed (then the child must not exec).
  int enter() const noexcept;
  // In the parent, after the process ended: copies the collected files out and removes the scratch.
  // Returns notes about files that were not copied.
  std::string finish();

 private:
  int ruleset_fd_ = -1;
  std::uint64_t own_proc_rights_ = 0;  // what the program may do in its own /proc/<pid> (enter() adds the rule)
  bool unshare_network_ = true;
  std::filesystem::path scratch_;
  std::map<std::string, std::filesystem::path> collect_;
};

}  // namespace rooflab::grader
