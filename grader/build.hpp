// Build orchestration: configure a build tree for a source of student files, build one test binary at a
// time (a student's compile error costs that binary's tests, not the run), assemble a submission.
#pragma once

#include "manifest.hpp"
#include "process.hpp"

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace rooflab::grader {

struct BuildTree {
  std::filesystem::path source_dir;
  std::filesystem::path build_dir;
  std::string preset;                       // configure preset (default, solutions, ...)
  std::map<std::string, std::string> defs;  // extra -D definitions
};

// The harness a grade's trees import instead of compiling common/ again: ROOFLAB_HARNESS names a full build
// of this project (CI's end-to-end tests set it to the build they test; cmake/RooflabHarness.cmake). Empty when
// unset; std::invalid_argument when it names no such build. harness_dirs() is what a build sandbox must read
// and execute then (the libraries and the CPU backend's rewriter); nothing of the build's solutions.
std::optional<std::filesystem::path> shared_harness();
std::vector<std::filesystem::path> harness_dirs();

// Both run in `sandbox` when given (build_sandbox(): the build tree writable, the source tree read-only).
ProcessResult configure(const BuildTree& tree, bool echo, const std::optional<Sandbox>& sandbox = std::nullopt);
ProcessResult build_target(const std::filesystem::path& build_dir, const std::string& target, bool echo,
                           const std::optional<Sandbox>& sandbox = std::nullopt);

// ---- configuring only when what configuration reads has changed ----
// A configure of the whole project costs seconds on every grade; most grades change only student files,
// which the build tracks itself. The stamp (BUILD/.rooflab-configured) holds what a configure read that
// CMake does not track: the preset, the -D options (student files' folder, hidden tests' folder, CUDA
// architectures), the compiler and search-path environment, and the hidden tests' files. CMake's own
// regeneration check (the build.ninja target) covers the CMake files and rubrics it reads.
std::string configure_inputs(const BuildTree& tree);
// Why `tree` must be configured ("never configured", "the options changed"), or nullopt: the stamp matches.
std::optional<std::string> configure_needed(const BuildTree& tree);
void write_configure_stamp(const BuildTree& tree);
// Configures when configure_needed says so (then writes the stamp), else lets CMake rerun itself if a file it
// read changed. `configured` tells which happened.
ProcessResult configure_if_needed(const BuildTree& tree, bool echo, const std::optional<Sandbox>& sandbox,
                                  bool* configured = nullptr);

// What the first build of a tree costs on this machine, in words: "10-20 minutes on 2 cores" (measured: a
// full build of the default preset took 14 minutes on 2 loaded cores; it scales with the cores).
std::string first_build_estimate(unsigned cores);
// Whether `build_dir` has never been built (no test binary yet): the next build compiles the whole harness.
bool first_build(const std::filesystem::path& build_dir);

// One grader at a time in a build tree (an flock on BUILD/.rooflab-lock, held while it lives): two would rebuild
// each other's objects under each other's tests. A second one prints that it waits, then waits.
class TreeLock {
 public:
  explicit TreeLock(const std::filesystem::path& build_dir);
  ~TreeLock();
  TreeLock(const TreeLock&) = delete;
  TreeLock& operator=(const TreeLock&) = delete;

 private:
  int fd_ = -1;
};

// The compiler's error lines with a little context, at most `max_lines`: what a student needs to see.
std::string compile_errors(const std::string& build_output, int max_lines = 40);

// ---- student files: what an upload may be and what it may include ----

inline constexpr std::uintmax_t kMaxStudentFileBytes = 1u << 20;

// Reads `root`/`rel` as an untrusted upload, following no link. Refused (the reason is returned): an
// absolute `rel` or one with a `..` component, a symbolic link anywhere below `root`, anything but a
// regular file, a file with other hard links (they may lie outside the upload), a file over
// kMaxStudentFileBytes.
std::optional<std::string> read_student_file(const std::filesystem::path& root, const std::filesystem::path& rel,
                                             std::string& text);

// The include policy of a student file of the lab in `lab_dir`: "name" only for the lab's own files
// ("lab.hpp", "kernels.hpp"), <name> for <rooflab/...>, system and CUDA headers; never an absolute path, a
// `..` component or solutions/; no #include whose name comes from a macro; no assembler .incbin/.include.
// Comments and line continuations are read as the compiler reads them. Returns the offending line and why.
std::optional<std::string> include_policy_violation(const std::string& text, const std::filesystem::path& lab_dir);

struct RefusedFile {
  std::string lab;   // "01"
  std::string file;  // "kernels.cu"
  std::string reason;
};

struct AssembledSubmission {
  std::vector<std::string> notes;    // for the report's header: missing and refused files
  std::vector<RefusedFile> refused;  // each also in `notes`
};

// Whether `text` is still a stub: between every `STUDENT BEGIN` and `STUDENT END` fence only comments,
// ROOFLAB_TODO(...) and rooflab::unused(...). A labs/ file an instructor has filled in is not.
bool looks_like_stub(const std::string& text);

// The stub of one of a lab's student files, as the course ships it: the committed version (git HEAD) when
// the lab's folder is in a git checkout, else the file in labs/. `why_not` is set (and `text` empty) when
// that text is not a stub (filled in, committed so, or no history to take the stub from).
struct Stub {
  std::string text;
  std::string from;                    // "the committed stub" or "the stub in labs/"
  std::optional<std::string> why_not;  // "labs/01-x/answers.cpp in this checkout is filled in ..."
};
Stub committed_stub(const Lab& lab, const std::string& file);

// Copies the whitelisted student files of `labs` from a submission into `dest` laid out like labs/ (a file
// whose bytes are already there keeps its time, so the build does not compile it again; what `dest` held
// that this submission does not is removed).
// A submission may hold <lab dir>/<file> or, when one lab is graded, the files at its top level. A file
// the submission lacks, or one that read_student_file or include_policy_violation refuses, is graded as the
// stub (committed_stub: never what an instructor wrote into labs/ of the grading checkout) and named in the
// notes; where no stub can be had it is graded as a file that does not compile, saying why.
AssembledSubmission assemble_submission(const std::vector<const Lab*>& labs, const std::filesystem::path& submission,
                                        const std::filesystem::path& dest);

// The same checks on student files graded in place (labs/, or solutions/ with --solutions).
std::vector<RefusedFile> check_student_files(const std::vector<const Lab*>& labs,
                                             const std::filesystem::path& student_dir);

// Whether `binary` is built from `student_file`: .cu files are the kernels (emu, race, gpu and static
// binaries), the others host answers (analytic), as rooflab_add_lab sorts them.
bool binary_uses(const Binary& binary, const std::string& student_file);

}  // namespace rooflab::grader
