// Grading a whole class: a folder of submissions (one subfolder, .zip or .tar.gz per student) graded one by
// one with `grade --submission` in one shared build tree (the harness is built once; each student rebuilds
// only the objects of their own files), then merged into class files: grades.csv, a JUnit XML per student
// and a summary table. Each student's inputs and the grader are hashed, so a rerun grades only what changed.
// A Slurm job array runs the same command per chunk of students (slurm.hpp) and a last step merges.
// class_intake.cpp takes the submissions in (archives, hashes, one `grade` per student); class_outputs.cpp
// merges their results into the class files.
#pragma once

#include "grade_args.hpp"
#include "manifest.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace rooflab::grader {

int cmd_grade_class(const ClassArgs& args);

// ---- the parts, shared with slurm.hpp ----

struct Submission;
// OUT/roster.json: the labs and every student of the class, and the chunk of a Slurm task (what the
// collection step merges, and how it names a task to resubmit).
void write_roster(const std::filesystem::path& out, const std::vector<const Lab*>& labs,
                  const std::vector<Submission>& submissions, int chunk);

// ---- the parts, exposed for the grader's tests ----

// Uploads larger than this are refused before they are read.
inline constexpr std::uintmax_t kMaxArchiveBytes = 64u << 20;

struct Submission {
  std::string student;          // the folder's name, or the archive's without .zip/.tar.gz/.tgz
  std::filesystem::path source; // the folder or the archive
  std::string refused;          // non-empty: why it is not graded (a duplicate name, a link, ...)
};

// The submissions in `dir`, sorted by student. Entries that are neither folders nor archives are reported in
// `ignored`; two entries naming the same student are both refused.
std::vector<Submission> find_submissions(const std::filesystem::path& dir, std::vector<std::string>& ignored);

// Unpacks the whitelisted files of `labs` from an archive into `dest` (only those: nothing else is
// written). Refused, with the reason: an archive over kMaxArchiveBytes, an entry with an absolute path or a
// `..` component, a link of any kind, a device or fifo, a student file over kMaxStudentFileBytes. One
// top-level folder holding everything is looked through. Returns the reason, or nullopt.
// `root` receives the folder to grade as the submission (dest, or the top-level folder inside it).
std::optional<std::string> unpack_archive(const std::filesystem::path& archive, const std::vector<const Lab*>& labs,
                                          const std::filesystem::path& dest, std::filesystem::path& root);

// The ETA of a class's grading (", ETA 4m 10s", or ""): the seconds the students graded so far took, on
// average, times the students left to grade (those unchanged since their last grade take none: not counted).
std::string class_eta(double grading_seconds, int graded, int to_grade_left);

// 64-bit FNV-1a: change detection of a class's inputs (not a defence: the instructor chooses the grader).
struct InputHash {
  std::uint64_t h = 0xcbf29ce484222325ull;
  void add(std::string_view bytes);
  void add_file_named(const std::string& name, std::string_view bytes);
  std::string hex() const;
};

// Merges OUT/students/*/ (status.json, results.json) into OUT/grades.csv, OUT/junit/<student>.xml and
// OUT/summary.txt; returns the summary table.
std::string collect_class(const std::filesystem::path& out);

// A results.json as JUnit XML, the dialect Jenkins and GitLab read: one testsuite per lab, a testcase per
// test with its time and a classname that starts with the student (jobs that merge junit/*.xml keep students
// apart); lost points are failures, crashes and time-outs errors, tests not graded here and 0-point hints
// that did not pass skipped (a hint never turns a CI job red).
std::string junit_xml(const std::string& student, const std::string& results_json);
// The JUnit file of a student who was not graded: one error per lab, with the reason.
std::string junit_not_graded(const std::string& student, const std::vector<std::string>& labs, const std::string& why);

}  // namespace rooflab::grader
