// What the grader knows about the labs: build/rooflab/labs.json (written by CMake: labs, student files,
// variants, test binaries) and each lab's rubric.json (every test's kind and points), so a binary that
// failed to compile still lists every test it lost.
#pragma once

#include <rooflab/detail/rubric.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace rooflab::grader {

struct DeclaredTest {
  std::string suite;
  std::string name;
  std::string kind;  // as graded in its binary: analytic | emu | gpu | perf | static | race
  double points = 0;
  std::string id() const { return suite + "." + name; }
};

struct Binary {
  std::string kind;  // analytic | emu | gpu | static
  std::string target;
  std::filesystem::path path;
  std::string unavailable;     // non-empty: this machine cannot build it (why)
  // Object libraries whose objects it links: the student's kernels compiled once for the CPU backend and
  // shared by the kinds that run them (the symbol rule looks for student objects there too).
  std::vector<std::string> objects_from;
  // emu only, where the build has gcov: the same tests with the student's kernels compiled for coverage
  // (rooflab/detail/coverage.hpp), run once for the hint of lines no test ran. Empty: none.
  std::string coverage_target = {};
  std::filesystem::path coverage_path = {};
  // static only: where the build captured the PTX and ptxas report of the student's kernels (<stem>.sm_XX.ptx).
  std::filesystem::path capture_dir = {};
  // Rubric kinds whose entries this binary does not hold though its kind would (a student copy's dry run has
  // no "dryrun" checks: they compare with the reference answers, which the copy lacks). Not in `declared`.
  std::vector<std::string> leaves_out = {};
  std::vector<DeclaredTest> declared = {};  // the rubric's tests this binary holds, with their graded kind
  const std::vector<DeclaredTest>& tests() const { return declared; }
};

struct Variant {
  std::string name;  // main, stubs, solutions, st-<case>
  std::filesystem::path student_dir;
  std::string expect;  // "", "zero", "full", or the path of a selftest expect.json
  std::vector<Binary> binaries;
};

struct Lab {
  std::string id;     // "01"
  std::string name;   // "memory-bandwidth"
  std::string title;  // "Memory bandwidth"
  std::filesystem::path dir;
  std::filesystem::path rubric;  // labs/NN-name/rubric.json
  std::vector<std::string> student_files;
  std::vector<Variant> variants;
  const Variant& variant(const std::string& name) const;
  std::string dir_name() const { return id + "-" + name; }
};

struct Manifest {
  std::filesystem::path source_dir;
  std::filesystem::path build_dir;
  std::filesystem::path student_dir;
  bool have_cuda = false;
  bool have_emu = false;
  std::vector<Lab> labs;
  const Lab& lab(const std::string& id_or_name) const;  // "01", "1", "memory-bandwidth" or "01-memory-bandwidth"
};

// Throws std::runtime_error naming the file and what is wrong.
Manifest load_manifest(const std::filesystem::path& build_dir);

// The tests of `rubric` that a binary of `binary_kind` holds, with their graded kind, less the entries of the
// rubric kinds in `leaves_out`.
std::vector<DeclaredTest> declared_tests(const rubric::Rubric& rubric, const std::string& binary_kind,
                                         const std::vector<std::string>& leaves_out = {});

// Remaining ROOFLAB_TODO steps in a lab's student files (what `list` shows as progress).
int count_todos(const std::filesystem::path& student_dir, const std::vector<std::string>& files);

}  // namespace rooflab::grader
