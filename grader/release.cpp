#include "release.hpp"

#include "build.hpp"
#include "doctor_tools.hpp"
#include "process.hpp"
#include "util.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>

namespace rooflab::grader {

namespace fs = std::filesystem;

// ---- what a student copy holds ----

std::optional<std::string> withheld(const fs::path& rel, const std::vector<std::string>& shipped) {
  std::vector<std::string> parts;
  for (const auto& p : rel) parts.push_back(p.string());
  if (parts.empty()) return "an empty path";
  const std::string& top = parts[0];
  // The reference solutions, and the known-bad cases beside them (patches of the solutions: they quote them).
  if (top == "solutions") return "the reference solutions and their known-bad cases";
  // new-lab's template scaffolds a solution too; adding a lab is the full course's business.
  if (top == "templates") return "new-lab's template (with its scaffolded solution)";
  // The harness's calibration kernels are close to Lab 01's and Lab 02's answers: a copy carries them compiled
  // (common/prebuilt/, written by write_calibration_binary) and launches them from there.
  if (rel == fs::path(kCalibrationSource)) return "the calibration kernels' source (shipped compiled, common/prebuilt/)";
  // The CPU backend's own tests, conformance files and benchmarks: their kernels (a tiled SGEMM, WMMA GEMMs,
  // tree reductions) come close to the labs' answers, and a copy tests the labs, not the backend.
  if (parts.size() >= 3 && top == "common" && parts[1] == "emu" &&
      (parts[2] == "tests" || parts[2] == "conformance" || parts[2] == "bench")) {
    return "the CPU backend's own tests and benchmarks";
  }
  // The performance model's validation fixtures: the reference solutions of a recorded GPU run.
  if (parts.size() >= 3 && top == "common" && parts[1] == "tests" && parts[2] == "perf_validation") {
    return "the performance model's validation fixtures (reference solutions of a recorded GPU run)";
  }
  // The example hidden tests of the grader's own test, and the test that writes more: hidden tests answer what
  // they test.
  if (parts.size() >= 3 && top == "grader" && parts[1] == "tests" && parts[2].find("hidden") != std::string::npos) {
    return "hidden tests";
  }
  if (top == "labs" && parts.size() >= 3) {
    if (std::find(shipped.begin(), shipped.end(), parts[1]) == shipped.end()) return "a lab not shipped";
    // Known-bad cases left where they used to be (labs/NN/selftest/) are still solutions with a bug in them.
    if (std::find(parts.begin(), parts.end(), "selftest") != parts.end()) return "known-bad cases";
  }
  return std::nullopt;
}

std::string registered_labs_only(const std::string& labs_cmake, const std::vector<std::string>& shipped) {
  std::istringstream in(labs_cmake);
  std::string out;
  for (std::string line; std::getline(in, line);) {
    const std::size_t open = line.find("add_subdirectory(");
    if (open != std::string::npos) {
      const std::size_t from = open + std::string("add_subdirectory(").size();
      const std::string dir = line.substr(from, line.find(')', from) - from);
      if (std::find(shipped.begin(), shipped.end(), dir) == shipped.end()) continue;
    }
    out += line + "\n";
  }
  return out;
}

bool is_student_copy(const fs::path& course) {
  return fs::is_directory(course / "labs") && !fs::exists(course / "solutions");
}

void student_copy_check(const std::string& command, GradeArgs& grade, bool inspect_solutions) {
  if (!is_student_copy(source_dir())) return;
  static const std::set<std::string> full_course_only = {"grade-class", "slurm-script", "gradescope-package",
                                                         "selftest",    "new-lab",      "release"};
  const std::string why = "this is a student copy of the course (./rooflab release): it has no solutions/";
  if (full_course_only.count(command)) {
    throw std::invalid_argument(fmt::format("{}; `{}` belongs to the full course: run it there", why, command));
  }
  if (grade.solutions || inspect_solutions) {
    throw std::invalid_argument(fmt::format("{} to grade or inspect", why));
  }
  // A Gradescope package is such a copy: it verifies against the reference values it recorded.
  if (grade.reference_values) return;
  if (grade.verify.value_or(false)) {
    throw std::invalid_argument(fmt::format("{} for --verify to run (the full course verifies what it grades)", why));
  }
  // Verification builds build/solutions from solutions/; here that would be the stubs: never a reference.
  grade.verify = false;
}

// ---- the calibration kernels, compiled ----

namespace {

// The nvcc a release compiles with: ROOFLAB_NVCC, else the one this build uses (or PATH's).
std::string release_nvcc() {
  if (const char* env = std::getenv("ROOFLAB_NVCC"); env != nullptr && *env != '\0') return env;
  return doctor::nvcc();
}

std::runtime_error no_toolkit(const std::string& nvcc, const ProcessResult& r) {
  return std::runtime_error(fmt::format(
      "a student copy carries the calibration kernels compiled, and `{} --version` {}: install the CUDA toolkit "
      "(nvcc, 12.0 or later; the driver of every student's GPU must be as new as it: docs/instructor-guide.md, "
      "\"release\"), or name its nvcc with ROOFLAB_NVCC=/path/to/nvcc. Nothing was written",
      nvcc, r.failed_to_start ? "could not be run" : r.describe()));
}

// "13.0" from nvcc --version's "Cuda compilation tools, release 13.0, V13.0.88".
std::string toolkit_version(const std::string& version_text) {
  const std::size_t at = version_text.find("release ");
  if (at == std::string::npos) return "unknown";
  const std::size_t from = at + std::string("release ").size();
  return version_text.substr(from, version_text.find_first_of(", \n", from) - from);
}

// The architectures the copy gets SASS for: the "release" preset's (CMakePresets.json, the course's build for
// every GPU), less those this nvcc no longer compiles for.
std::vector<int> release_archs(const fs::path& src, const std::string& nvcc) {
  std::string listed;
  const nlohmann::json presets = read_json(src / "CMakePresets.json");
  for (const auto& p : presets.value("configurePresets", nlohmann::json::array())) {
    if (p.value("name", "") == "release") listed = p["cacheVariables"].value("CMAKE_CUDA_ARCHITECTURES", "");
  }
  const ProcessResult known = run_process({nvcc, "--list-gpu-arch"}, {.timeout_s = 60});
  if (!known.ok()) throw no_toolkit(nvcc, known);
  std::vector<int> archs;
  std::istringstream items(listed);
  for (std::string item; std::getline(items, item, ';');) {
    const int arch = std::atoi(item.c_str());
    if (arch > 0 && known.output.find(fmt::format("compute_{}\n", arch)) != std::string::npos) archs.push_back(arch);
  }
  if (archs.empty()) {
    throw std::runtime_error(fmt::format("CMakePresets.json's \"release\" preset lists no architecture ({}) that {} "
                                         "compiles for", listed.empty() ? "none" : listed, nvcc));
  }
  return archs;
}

}  // namespace

CalibrationBinary make_calibration_binary(const fs::path& src) {
  const std::string nvcc = release_nvcc();
  const ProcessResult version = run_process({nvcc, "--version"}, {.timeout_s = 60});
  if (!version.ok()) throw no_toolkit(nvcc, version);
  const std::vector<int> archs = release_archs(src, nvcc);
  const ScratchRoot scratch;
  const fs::path fatbin = scratch.path() / "calibration_kernels.fatbin";
  // One recipe for the course's own test of the loader and for releases (common/calibration_fatbin.cmake).
  const ProcessResult made = run_process(
      {"cmake", "-DNVCC=" + nvcc, fmt::format("-DARCHS={}", fmt::join(archs, ";")),
       "-DSOURCE=" + (src / kCalibrationSource).string(), "-DINCLUDE=" + (src / "common" / "include").string(),
       "-DOUT=" + fatbin.string(), "-P", (src / "common" / "calibration_fatbin.cmake").string()},
      {.timeout_s = 600});
  if (!made.ok()) {
    throw std::runtime_error(fmt::format("compiling the calibration kernels for the copy failed ({}):\n{}\nNothing "
                                         "was written", made.describe(), made.output));
  }
  CalibrationBinary out;
  out.fatbin = read_all(fatbin);
  out.made["toolkit"] = toolkit_version(version.output);
  out.made["architectures"] = archs;
  out.made["ptx"] = archs.back();
  out.made["nvcc"] = nvcc;
  const ProcessResult head = run_process({"git", "-C", src.string(), "rev-parse", "HEAD"});
  if (head.ok()) {
    out.made["source_commit"] = head.output.substr(0, head.output.find('\n'));
    // Compiled from the working tree: whether that differed from the commit.
    const ProcessResult edited = run_process({"git", "-C", src.string(), "status", "--porcelain", "--",
                                              kCalibrationSource, "common/src/calibration_kernels.hpp"});
    out.made["source_uncommitted_changes"] = edited.ok() && !edited.output.empty();
  }
  out.made["source"] = kCalibrationSource;
  out.made["about"] = "The harness's calibration kernels (copy bandwidth, FP32 FMA peak), compiled by ./rooflab release "
                      "instead of shipped as source: SASS for each architecture, PTX of the newest for newer GPUs. "
                      "A driver older than this toolkit cannot load them (docs/instructor-guide.md, \"release\").";
  return out;
}

void write_calibration_binary(const CalibrationBinary& binary, const fs::path& copy) {
  write_text(copy / "common" / "prebuilt" / "calibration_kernels.fatbin", binary.fatbin);
  write_text(copy / "common" / "prebuilt" / "calibration_kernels.json", binary.made.dump(1) + "\n");
}

// ---- the copy ----

namespace {

// The course's source files, relative to `src`: the files git tracks where this is a checkout (an untracked
// file, a worked answer lying in labs/ say, is no part of the course until it is added), else every file
// outside build*/ and .git. Links are not source files.
std::vector<fs::path> course_files(const fs::path& src) {
  std::vector<fs::path> out;
  if (fs::exists(src / ".git")) {
    const ProcessResult r = run_process({"git", "-C", src.string(), "ls-files", "-z", "--cached"});
    if (r.ok()) {
      std::istringstream names(r.output);
      for (std::string rel; std::getline(names, rel, '\0');) {
        // ls-files lists a tracked file deleted from the working tree (a git mv not yet committed) too.
        if (!rel.empty() && fs::is_regular_file(fs::symlink_status(src / rel))) out.emplace_back(rel);
      }
      return out;
    }
  }
  for (auto it = fs::recursive_directory_iterator(src); it != fs::recursive_directory_iterator(); ++it) {
    const std::string top = it->path().lexically_relative(src).begin()->string();
    if (it->is_directory() && (top == ".git" || top.rfind("build", 0) == 0 || top == "rooflab-report")) {
      it.disable_recursion_pending();
    } else if (fs::is_regular_file(it->symlink_status())) {
      out.push_back(it->path().lexically_relative(src));
    }
  }
  return out;
}

// A student file as a student gets it: the stub. The working copy when it is one (a lab not yet committed),
// else the committed stub (an instructor who tried the lab in labs/ ships the stub all the same).
std::string release_stub(const Lab& lab, const std::string& file) {
  const std::string here = read_all(lab.dir / file);
  if (!here.empty() && looks_like_stub(here)) return here;
  const Stub stub = committed_stub(lab, file);
  if (stub.why_not) throw std::runtime_error(*stub.why_not);
  return stub.text;
}

// The folder the copy goes to: new or empty, and not where the course's files are (a later release would
// copy the copy); a build*/ folder of the course is fine (ignored, as the tests' scratch trees are).
fs::path release_folder(const fs::path& out, const fs::path& src) {
  const fs::path dir = fs::weakly_canonical(fs::absolute(out));
  const fs::path rel = dir.lexically_relative(fs::weakly_canonical(src));
  const bool inside = !rel.empty() && rel.begin()->string() != "..";
  if (inside && (rel == "." || rel.begin()->string().rfind("build", 0) != 0)) {
    throw std::invalid_argument(fmt::format("--out {}: inside the course's sources; give a folder outside it "
                                            "(or under its build/)", out.string()));
  }
  if (fs::exists(dir) && !(fs::is_directory(dir) && fs::is_empty(dir))) {
    throw std::invalid_argument(fmt::format("--out {}: exists and is not an empty folder", out.string()));
  }
  fs::create_directories(dir);
  return dir;
}

void write_like(const fs::path& from, const fs::path& to, const std::string& text) {
  write_text(to, text);
  fs::permissions(to, fs::status(from).permissions());  // ./rooflab stays executable
}

// What the copy was made from, so that an instructor grades its students' work with the same course.
nlohmann::json provenance(const fs::path& src, const std::vector<std::string>& shipped) {
  nlohmann::json j;
  j["made"] = utc_now(true);
  j["labs"] = shipped;
  const ProcessResult head = run_process({"git", "-C", src.string(), "rev-parse", "HEAD"});
  const ProcessResult dirty = run_process({"git", "-C", src.string(), "status", "--porcelain", "--untracked-files=no"});
  if (head.ok()) {
    j["commit"] = head.output.substr(0, head.output.find('\n'));
    j["uncommitted_changes"] = dirty.ok() && !dirty.output.empty();
  }
  j["about"] = "A student copy of the course, written by ./rooflab release: no solutions/, no known-bad cases, no "
               "hidden tests. Grade its students' work in the full course at this commit.";
  return j;
}

}  // namespace

int cmd_release(const ReleaseArgs& a) {
  const fs::path src = source_dir();
  const Manifest m = load_manifest(own_build_dir());
  const std::vector<const Lab*> labs = resolve_labs(m, a.labs);  // an unknown lab: a usage error
  std::vector<std::string> shipped;
  for (const Lab* lab : labs) shipped.push_back(lab->dir_name());
  // Every stub first: a lab without one stops the release before anything is written.
  std::map<fs::path, std::string> stubs;
  for (const Lab* lab : labs) {
    for (const auto& file : lab->student_files) stubs[fs::path("labs") / lab->dir_name() / file] = release_stub(*lab, file);
  }
  // The calibration kernels compiled before anything is written: no toolkit, no copy.
  const CalibrationBinary calibration = make_calibration_binary(src);
  const fs::path out = release_folder(a.out, src);
  std::map<std::string, std::size_t> left_out;  // why -> files
  std::size_t copied = 0;
  for (const fs::path& rel : course_files(src)) {
    if (const auto why = withheld(rel, shipped)) {
      ++left_out[*why];
    } else if (const auto stub = stubs.find(rel); stub != stubs.end()) {
      write_like(src / rel, out / rel, stub->second);
      stubs.erase(stub);
      ++copied;
    } else if (rel == "labs/CMakeLists.txt") {
      write_like(src / rel, out / rel, registered_labs_only(read_all(src / rel), shipped));
      ++copied;
    } else {
      fs::create_directories((out / rel).parent_path());
      fs::copy_file(src / rel, out / rel);
      ++copied;
    }
  }
  for (const auto& [rel, text] : stubs) {  // a student file git does not list (an ignored one) is shipped all the same
    write_text(out / rel, text);
    ++copied;
  }
  write_calibration_binary(calibration, out);
  write_text(out / "release.json", provenance(src, shipped).dump(1) + "\n");
  fmt::print("rooflab: wrote a student copy of the course to {}: {} files, labs {}\n", out.string(), copied,
             fmt::join(shipped, ", "));
  for (const auto& [why, n] : left_out) fmt::print("  left out: {} ({} file{})\n", why, n, n == 1 ? "" : "s");
  fmt::print("  the student files are the stubs. In the copy, ./rooflab grade grades without a reference run to\n"
             "  verify against (there is none); grade its students' work in this course (docs/instructor-guide.md).\n");
  return kExitOk;
}

}  // namespace rooflab::grader
