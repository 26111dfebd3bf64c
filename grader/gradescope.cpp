#include "gradescope.hpp"

#include "build.hpp"
#include "grade_args.hpp"
#include "pipeline.hpp"
#include "process.hpp"
#include "release.hpp"
#include "runner.hpp"
#include "util.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <iostream>
#include <map>
#include <set>
#include <unistd.h>

namespace rooflab::grader {

namespace fs = std::filesystem;

// ---- the scripts ----

namespace {

std::string words(const std::vector<std::string>& ids) { return fmt::format("{}", fmt::join(ids, " ")); }

// Where the package keeps the reference values it recorded (reference/<lab>/<kind>.json). Student processes
// may not read it (sandbox.cpp: readable_source_entries).
constexpr const char* kReferenceDir = "reference";

// The grade both scripts run: analytic and CPU-backend points of a submission (what Gradescope can grade).
GradeArgs autograder_grade(const std::vector<std::string>& lab_ids) {
  GradeArgs g;
  g.labs = lab_ids;
  g.kinds = {"analytic", "emu"};
  g.no_color = true;
  return g;
}

}  // namespace

std::string autograder_setup_script(const std::vector<std::string>& lab_ids, bool hidden_tests) {
  GradeArgs g = autograder_grade(lab_ids);
  g.submission = "labs";  // the stubs, as a submission that uploaded nothing
  g.build_dir = "build/submission";
  if (hidden_tests) g.hidden_tests = "hidden-tests";
  g.reference_values = kReferenceDir;  // read once here: a malformed record fails the image build
  return fmt::format(R"sh(#!/usr/bin/env bash
# rooflab's Gradescope autograder, set up once: Gradescope runs this as root in /autograder/source (the
# unpacked package) when it builds the assignment's image. It installs the CUDA toolkit (the CPU backend
# compiles the students' .cu files with its headers; no GPU is needed) and the Debian packages rooflab builds
# with, builds the grader, then the harness, once: every lab's tests with the stub files as a submission. A
# submission then rebuilds its own files only, and is verified against the reference values recorded in
# reference/ when the package was made (the package holds no solutions). Written by `rooflab gradescope-package`.
set -euo pipefail
cd "$(dirname "${{BASH_SOURCE[0]}}")"
export DEBIAN_FRONTEND=noninteractive

# ---- the CUDA toolkit: NVIDIA's apt repository (12.4 or later; not a Debian package) ----
if ! command -v nvcc >/dev/null 2>&1 && ! compgen -G "/usr/local/cuda*/bin/nvcc" >/dev/null; then
  . /etc/os-release
  repo="${{ID}}${{VERSION_ID//./}}"  # ubuntu2204, ubuntu2404, debian12
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends ca-certificates wget >/dev/null
  wget -q "https://developer.download.nvidia.com/compute/cuda/repos/$repo/x86_64/cuda-keyring_1.1-1_all.deb"
  dpkg -i cuda-keyring_1.1-1_all.deb
  rm cuda-keyring_1.1-1_all.deb
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends ${{ROOFLAB_CUDA_PACKAGES:-cuda-toolkit-12-6}} >/dev/null
fi

# ---- a compiler and CMake new enough: Ubuntu 22.04 ships g++ 11 and CMake 3.22 (rooflab needs 12 and 3.25) ----
at_least() {{ [[ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" == "$2" ]]; }}
if ! at_least "$(g++ -dumpfullversion 2>/dev/null || echo 0)" 12; then
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends g++-12 >/dev/null
  echo "export CXX=g++-12 CC=gcc-12" >>rooflab-env.sh  # run_autograder's builds use it too
fi
if ! at_least "$(cmake --version 2>/dev/null | grep -oE '[0-9]+\.[0-9]+(\.[0-9]+)?' | head -n1 || echo 0)" 3.25; then
  apt-get install -y -qq --no-install-recommends python3-pip >/dev/null
  python3 -m pip install -q 'cmake>=3.25' || python3 -m pip install -q --break-system-packages 'cmake>=3.25'
  hash -r
fi
touch rooflab-env.sh
. ./rooflab-env.sh

# ---- the Debian packages and the grader (the launcher installs what is missing, then builds rooflab-cli) ----
./rooflab list

# ---- the harness, built once. The stubs fail their tests, as they should; a grader that cannot build or
# run them (exit code 2 or more) fails the image build, here, where the instructor sees it, rather than
# every student's submission later ----
if ! build/default/grader/rooflab-cli {grade} >setup-grade.log 2>&1; then
  echo "rooflab: building the autograder's harness failed; the end of setup-grade.log:" >&2
  tail -n 40 setup-grade.log >&2
  exit 1
fi
echo "rooflab: the autograder is ready"
)sh",
                     fmt::arg("grade", shell_line(to_argv(g))));
}

std::string run_autograder_script(const std::vector<std::string>& lab_ids, bool hidden_tests,
                                  const std::optional<std::string>& seed) {
  GradeArgs g = autograder_grade(lab_ids);
  // Paths the script sets: written as shell expansions ("$build"), not as text.
  g.submission = "$work/submission";
  g.build_dir = "$build";
  g.gradescope = true;
  g.json = "$results";
  g.report_dir = "$work/report";
  if (hidden_tests) g.hidden_tests = "$source/hidden-tests";
  g.reference_values = fmt::format("$source/{}", kReferenceDir);
  g.seed = seed;
  const std::set<std::string> set_by_the_script = {"$work/submission", "$build", "$results", "$work/report",
                                                   "$source/hidden-tests", g.reference_values->string()};
  return fmt::format(R"sh(#!/usr/bin/env bash
# rooflab's Gradescope autograder, run for every submission in a fresh container of setup.sh's image. The
# upload is in $root/submission: a student's files laid out like labs/ (or one lab's files at its top), maybe
# inside one folder. The results go to $root/results/results.json. Gradescope has no GPU: the analytic and
# CPU-backend points are graded here, verified against the reference values the package recorded (reference/;
# the package holds no solutions); the perf tests are named in the output, graded on the GPU cluster.
# Outside Gradescope (the grader's own test): ROOFLAB_AUTOGRADER_ROOT (default /autograder), ROOFLAB_CLI (the
# grader), ROOFLAB_AUTOGRADER_BUILD (its build tree), ROOFLAB_AUTOGRADER_ARGS (more grade options, split on
# blanks). Written by `rooflab gradescope-package`.
set -uo pipefail
root="${{ROOFLAB_AUTOGRADER_ROOT:-/autograder}}"
source="$root/source"
cli="${{ROOFLAB_CLI:-$source/build/default/grader/rooflab-cli}}"
build="${{ROOFLAB_AUTOGRADER_BUILD:-$source/build/submission}}"
results="$root/results/results.json"
# The compiler setup.sh chose (g++-12 on Ubuntu 22.04), for the builds of this submission's files.
[[ -f "$source/rooflab-env.sh" ]] && . "$source/rooflab-env.sh"
mkdir -p "$root/results"
rm -f "$results"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# ---- the submission, copied into place (links stay links: the grader refuses them) ----
upload="$root/submission"
shopt -s nullglob dotglob
entries=()
for e in "$upload"/*; do
  name="$(basename "$e")"
  [[ "$name" == .* || "$name" == __MACOSX ]] || entries+=("$e")  # macOS's zip adds both
done
# One folder that is not a lab's (a zipped folder of the work): grade what is inside it.
if [[ ${{#entries[@]}} -eq 1 && -d "${{entries[0]}}" && ! -L "${{entries[0]}}" &&
      ! "$(basename "${{entries[0]}}")" =~ ^[0-9][0-9]- ]]; then
  upload="${{entries[0]}}"
fi
mkdir -p "$work/submission"
cp -R -P "$upload/." "$work/submission/"

# ---- grade: analytic and CPU-backend points ----
grade=({grade})
# shellcheck disable=SC2086
"$cli" "${{grade[@]}}" ${{ROOFLAB_AUTOGRADER_ARGS:-}}
rc=$?
if [[ ! -s "$results" ]]; then
  why="The autograder could not grade this submission (the grader exited with code $rc). Your course staff"
  printf '{{"score": 0, "output": "%s can read its log.", "tests": []}}\n' "$why" >"$results"
fi
exit 0
)sh",
                     fmt::arg("grade", shell_line(to_argv(g), set_by_the_script)));
}

// ---- the package ----

namespace {

// The project's files to pack, relative to `src`.
std::vector<fs::path> project_files(const fs::path& src) {
  std::vector<fs::path> out;
  if (fs::exists(src / ".git")) {
    const ProcessResult r = run_process({"git", "-C", src.string(), "ls-files", "-z", "--cached", "--others",
                                         "--exclude-standard"});
    if (r.ok()) {
      for (std::size_t at = 0; at < r.output.size();) {
        const std::size_t end = r.output.find('\0', at);
        const std::string rel = r.output.substr(at, end == std::string::npos ? std::string::npos : end - at);
        // ls-files lists a tracked file deleted from the working tree too; a link is packed as what it is not
        if (!rel.empty() && fs::is_regular_file(fs::symlink_status(src / rel))) out.emplace_back(rel);
        if (end == std::string::npos) break;
        at = end + 1;
      }
      return out;
    }
  }
  for (auto it = fs::recursive_directory_iterator(src); it != fs::recursive_directory_iterator(); ++it) {
    const fs::path rel = it->path().lexically_relative(src);
    const std::string top = rel.begin()->string();
    if (it->is_directory() && (top == ".git" || top.rfind("build", 0) == 0 || top == "rooflab-report")) {
      it.disable_recursion_pending();
      continue;
    }
    if (fs::is_regular_file(it->symlink_status())) out.push_back(rel);
  }
  return out;
}

void write_executable(const fs::path& path, const std::string& text) {
  write_text(path, text);
  fs::permissions(path, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                            fs::perms::others_read | fs::perms::others_exec);
}

// The image grades a file a student did not upload as the stub in its labs/: a filled-in one would give
// every such student its answers.
void require_stubs(const std::vector<const Lab*>& labs) {
  for (const Lab* lab : labs) {
    for (const auto& file : lab->student_files) {
      std::ifstream in(lab->dir / file, std::ios::binary);
      const std::string text(std::istreambuf_iterator<char>(in), {});
      const Stub stub = committed_stub(*lab, file);
      if (stub.why_not || text != stub.text) {
        throw std::runtime_error(fmt::format(
            "labs/{}/{} is not the course's stub ({}): the autograder would grade every student who leaves it out "
            "with what it holds. Restore it (git checkout labs/{}/{}) and package again",
            lab->dir_name(), file, stub.why_not ? "it is filled in" : "it differs from the committed one",
            lab->dir_name(), file));
      }
    }
  }
}

struct Staged {
  std::size_t files = 0;
  std::map<std::string, std::size_t> left_out;  // why -> files
};

// The project's files into `stage`, less what a student copy leaves out (release.hpp: withheld): the
// solutions and their known-bad cases, new-lab's template, example hidden tests, the labs not packed.
Staged stage_project(const fs::path& src, const fs::path& stage, const std::vector<std::string>& shipped) {
  Staged out;
  for (const auto& rel : project_files(src)) {
    if (const auto why = withheld(rel, shipped)) {
      ++out.left_out[*why];
      continue;
    }
    fs::create_directories((stage / rel).parent_path());
    if (rel == "labs/CMakeLists.txt") {
      write_text(stage / rel, registered_labs_only(read_all(src / rel), shipped));
    } else {
      fs::copy_file(src / rel, stage / rel);  // with its permissions: ./rooflab stays executable
    }
    ++out.files;
  }
  return out;
}

// What the records were made from (for people; a grade checks only the seed).
nlohmann::json record_provenance(const fs::path& src) {
  nlohmann::json j;
  j["recorded"] = utc_now(true);
  std::ifstream cache(own_build_dir() / "CMakeCache.txt");
  for (std::string line; std::getline(cache, line);) {
    if (line.rfind("CMAKE_PROJECT_VERSION:", 0) == 0) j["rooflab_version"] = line.substr(line.find('=') + 1);
  }
  const ProcessResult head = run_process({"git", "-C", src.string(), "rev-parse", "HEAD"});
  const ProcessResult dirty = run_process({"git", "-C", src.string(), "status", "--porcelain", "--untracked-files=no"});
  if (head.ok()) {
    j["commit"] = head.output.substr(0, head.output.find('\n'));
    j["uncommitted_changes"] = dirty.ok() && !dirty.output.empty();
  }
  return j;
}

// One lab's reference runs, every test of the kinds Gradescope grades (hidden ones included), run as a grade's
// verification runs them: the same seed, environment and thread order. A reference test that does not pass
// stops the packing (no student could be verified on it).
void record_lab(const Lab& lab, const GradescopeArgs& a, const std::optional<std::string>& seed,
                const nlohmann::json& about, const fs::path& out) {
  std::string why;
  const std::string hidden = a.hidden_tests ? fs::absolute(*a.hidden_tests).lexically_normal().string() : "";
  const std::vector<std::string> kinds = autograder_grade({}).kinds;
  const auto binaries = reference_test_binaries(lab, false, hidden, kinds, &why);
  if (binaries.empty()) throw std::runtime_error(fmt::format("lab {}: no reference to record: {}", lab.id, why));
  // A kind Gradescope grades with no reference here would be a kind no student could earn there.
  for (const auto& b : lab.variant("main").binaries) {
    const bool graded = std::find(kinds.begin(), kinds.end(), b.kind) != kinds.end() && !b.tests().empty();
    if (graded && binaries.count(b.kind) == 0) {
      throw std::runtime_error(fmt::format("lab {}: the reference solutions' {} tests cannot be built here{}, so no "
                                           "value of theirs can be recorded", lab.id, b.kind,
                                           b.unavailable.empty() ? "" : " (" + b.unavailable + ")"));
    }
  }
  const ScratchRoot plots;  // where the reference tests' plots go (nobody reads them)
  RunOptions options;
  options.env["ROOFLAB_REPORT_DIR"] = plots.path().string();
  if (seed) options.env["ROOFLAB_SEED"] = *seed;
  for (const auto& [kind, binary] : binaries) {
    RecordedReference rec{lab.id, kind, seed, about, {}};
    std::vector<std::string> failed;
    for (const auto& test : binary.tests()) {
      std::string why_not;
      if (auto report = run_reference(binary.path, test, options, &why_not)) {
        rec.tests.emplace(test.id(), std::move(*report));
      } else {
        failed.push_back(test.id() + ": " + why_not);
      }
    }
    if (!failed.empty()) {
      throw std::runtime_error(fmt::format("lab {}: the reference solutions fail tests they must pass, so no "
                                           "reference values can be recorded for them:\n  {}",
                                           lab.id, fmt::join(failed, "\n  ")));
    }
    write_text(out / lab.id / (kind + ".json"), recorded_json(rec).dump() + "\n");
    fmt::print("rooflab: lab {}: recorded the reference values of {} {} tests\n", lab.id, rec.tests.size(), kind);
    std::fflush(stdout);
  }
}

std::size_t copy_hidden_tests(const fs::path& from, const fs::path& to) {
  std::size_t files = 0;
  for (const auto& e : fs::recursive_directory_iterator(from)) {
    if (!fs::is_regular_file(e.symlink_status())) continue;
    const fs::path dest = to / e.path().lexically_relative(from);
    fs::create_directories(dest.parent_path());
    fs::copy_file(e.path(), dest);
    ++files;
  }
  return files;
}

// Zips `stage` into `out`: an exit code.
int zip_stage(const fs::path& stage, const fs::path& out) {
  if (out.has_parent_path()) fs::create_directories(out.parent_path());
  fs::remove(out);  // zip would add to an archive already there
  const ProcessResult z = run_process({"zip", "-q", "-r", "-X", out.string(), "."}, {.timeout_s = 600, .cwd = stage});
  if (z.failed_to_start) {
    std::cerr << "rooflab gradescope-package: needs the zip program (Debian: apt-get install zip)\n";
    return kExitHarness;
  }
  if (!z.ok()) {
    std::cerr << z.output << "\nrooflab gradescope-package: zip failed (" << z.describe() << ")\n";
    return kExitHarness;
  }
  return kExitOk;
}

class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "rooflab-gradescope-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("cannot make a folder in " + pattern);
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

}  // namespace

int cmd_gradescope_package(const GradescopeArgs& a) {
  require_numeric_seed(a.seed);
  // The seed the records are made with and run_autograder grades with: the one given, else ROOFLAB_SEED's.
  std::optional<std::string> seed = a.seed;
  if (const char* env = std::getenv("ROOFLAB_SEED"); !seed && env != nullptr && *env != '\0') seed = env;
  const Manifest m = load_manifest(own_build_dir());
  const std::vector<const Lab*> labs = resolve_labs(m, a.labs);  // an unknown lab: a usage error
  std::vector<std::string> ids, shipped;  // ids empty: every lab of the image's checkout
  std::vector<std::string> notes;
  for (const Lab* lab : labs) {
    if (!a.labs.empty()) ids.push_back(lab->id);
    shipped.push_back(lab->dir_name());
    if (a.hidden_tests) notes.push_back(hidden_tests_note(*a.hidden_tests, lab->id));
  }
  require_stubs(labs);

  const fs::path src = source_dir();
  const TempDir stage_dir;
  const fs::path& stage = stage_dir.path();
  const Staged staged = stage_project(src, stage, shipped);
  // What a student copy carries instead of the calibration kernels' source, which stage_project left out.
  write_calibration_binary(make_calibration_binary(src), stage);
  for (const char* name : {"setup.sh", "run_autograder", kReferenceDir}) {
    if (fs::exists(stage / name)) throw std::runtime_error(fmt::format("the project has a {} of its own", name));
  }
  write_executable(stage / "setup.sh", autograder_setup_script(ids, a.hidden_tests.has_value()));
  write_executable(stage / "run_autograder", run_autograder_script(ids, a.hidden_tests.has_value(), seed));
  const std::size_t hidden_files = a.hidden_tests ? copy_hidden_tests(*a.hidden_tests, stage / "hidden-tests") : 0;
  const nlohmann::json about = record_provenance(src);
  for (const Lab* lab : labs) record_lab(*lab, a, seed, about, stage / kReferenceDir);

  const fs::path out = fs::absolute(a.out);
  if (const int rc = zip_stage(stage, out); rc != kExitOk) return rc;
  fmt::print("rooflab: wrote {} ({:.1f} MB): the project's {} files, setup.sh, run_autograder and the reference "
             "values{}\n", out.string(), static_cast<double>(fs::file_size(out)) / 1e6, staged.files,
             a.hidden_tests ? fmt::format(", {} hidden-test files", hidden_files) : "");
  for (const auto& [why, n] : staged.left_out) fmt::print("  left out: {} ({} file{})\n", why, n, n == 1 ? "" : "s");
  for (const auto& n : notes) fmt::print("  {}\n", n);
  fmt::print("  labs graded: {}; on Gradescope: analytic and CPU-backend points, verified against the reference\n"
             "  values recorded here{}; the perf tests are named in the output, graded on the GPU cluster\n"
             "  (grade-class). Upload it as the autograder of a programming assignment (base image Ubuntu 24.04, or\n"
             "  22.04, where setup.sh adds g++-12 and CMake from PyPI). setup.sh installs the CUDA toolkit and builds\n"
             "  the harness once; the image build fails if it does not.\n",
             ids.empty() ? "all" : words(ids), seed ? " with the package's seed" : "");
  return kExitOk;
}

}  // namespace rooflab::grader
