#include "class_grading.hpp"

#include "build.hpp"
#include "process.hpp"
#include "util.hpp"

#if defined(ROOFLAB_HAVE_CUDA)
#include <rooflab/testing/device.hpp>
#endif

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

// The intake of a class: the submissions found, archives unpacked (only the whitelisted files), what a grade
// depends on hashed (a rerun grades only what changed), one `grade --submission` per student, and the
// command itself, which ends by merging the results (class_outputs.cpp).
namespace rooflab::grader {

namespace fs = std::filesystem;

namespace {


std::vector<std::string> split_ws(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  for (std::string t; in >> t;) out.push_back(t);
  return out;
}

// The text of `line` after its first `n` whitespace-separated fields and the one blank after them: the name
// in a listing of tar -tv or unzip -Z (a name may hold blanks of its own).
std::string after_fields(const std::string& line, int n) {
  std::size_t i = 0;
  for (int f = 0; f < n; ++f) {
    while (i < line.size() && line[i] == ' ') ++i;
    while (i < line.size() && line[i] != ' ') ++i;
  }
  return i < line.size() ? line.substr(i + 1) : "";
}

std::string format_duration(double s) {
  const long t = static_cast<long>(s + 0.5);
  if (t >= 3600) return fmt::format("{}h{:02}m", t / 3600, t / 60 % 60);
  if (t >= 60) return fmt::format("{}m{:02}s", t / 60, t % 60);
  return fmt::format("{}s", t);
}

}  // namespace

std::string class_eta(double grading_seconds, int graded, int to_grade_left) {
  if (graded <= 0 || to_grade_left <= 0) return "";
  return fmt::format(", ETA {}", format_duration(grading_seconds / graded * to_grade_left));
}

namespace {

// The whitelisted paths a submission may hold its files at: <lab dir>/<file>, or <file> when one lab is
// graded (assemble_submission's rule).
std::vector<fs::path> student_paths(const std::vector<const Lab*>& labs) {
  std::vector<fs::path> out;
  for (const Lab* lab : labs) {
    for (const auto& f : lab->student_files) {
      out.push_back(fs::path(lab->dir_name()) / f);
      if (labs.size() == 1) out.push_back(f);
    }
  }
  return out;
}

// ---- archives ----

struct Entry {
  char type = '-';   // '-' file, 'd' folder, anything else refused
  std::uintmax_t size = 0;
  std::string name;  // as the archive spells it
};

bool is_zip(const fs::path& p) { return p.extension() == ".zip"; }
bool is_tar_gz(const fs::path& p) {
  const std::string n = p.filename().string();
  return n.size() > 7 && (n.ends_with(".tar.gz") || n.ends_with(".tgz"));
}

std::string too_big(std::uintmax_t size) {
  return fmt::format("it is {:.1f} MiB, over the limit of {} MiB for an upload", static_cast<double>(size) / 1048576.0,
                     kMaxArchiveBytes >> 20);
}

std::optional<std::string> list_archive(const fs::path& archive, std::vector<Entry>& entries) {
  ProcessOptions o;
  o.timeout_s = 120;
  o.env["LC_ALL"] = "C";
  const bool zip = is_zip(archive);
  const ProcessResult r =
      zip ? run_process({"unzip", "-Z", archive.string()}, o)
          : run_process({"tar", "--quoting-style=escape", "-tvzf", archive.string()}, o);
  if (r.failed_to_start) return fmt::format("cannot run {} to read it", zip ? "unzip" : "tar");
  if (!r.ok()) return fmt::format("not a readable {} archive: {}", zip ? ".zip" : ".tar.gz", tail_lines(r.output, 2));
  std::istringstream in(r.output);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  static const std::regex zip_version(R"(^[0-9]+\.[0-9]+$)");
  for (const auto& line : lines) {
    const auto f = split_ws(line);
    const int name_at = zip ? 8 : 5;  // perms version os size tx method date time | perms owner size date time
    // unzip -Z also prints header lines ("Archive: ...", "Zip file size: ...") and a closing "N files, ...":
    // an entry's line has the zip version ("3.0") second.
    if (zip && (f.size() <= 8 || !std::regex_match(f[1], zip_version))) continue;
    if (static_cast<int>(f.size()) <= name_at) return fmt::format("cannot understand its listing: {}", line);
    Entry e;
    // '?': a zip entry written without a Unix mode (Python's zipfile, Windows tools): unzip makes a file of it.
    e.type = f[0][0] == '?' ? '-' : f[0][0];
    try {
      e.size = std::stoull(f[zip ? 3 : 2]);
    } catch (const std::exception&) {
      return fmt::format("cannot understand its listing: {}", line);
    }
    e.name = after_fields(line, name_at);
    entries.push_back(e);
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> unpack_archive(const fs::path& archive, const std::vector<const Lab*>& labs,
                                          const fs::path& dest, fs::path& root) {
  std::error_code ec;
  const auto size = fs::file_size(archive, ec);
  if (ec) return fmt::format("cannot read it: {}", ec.message());
  if (size > kMaxArchiveBytes) return too_big(size);
  std::vector<Entry> entries;
  if (auto why = list_archive(archive, entries)) return why;
  if (entries.size() > 10000) return fmt::format("it holds {} entries (at most 10000)", entries.size());
  // Every entry is checked, not only the ones taken: an archive built to attack an unpacker is refused whole.
  std::set<std::string> tops;
  for (const auto& e : entries) {
    if (e.type == 'l' || e.type == 'h') return fmt::format("it holds a link ({})", e.name);
    if (e.type != '-' && e.type != 'd') return fmt::format("it holds {}, which is not a file or a folder", e.name);
    if (e.name.empty() || e.name.front() == '/') return fmt::format("it holds an absolute path ({})", e.name);
    if (e.name.find('\\') != std::string::npos) return fmt::format("it holds a name with a backslash ({})", e.name);
    fs::path p(e.name);
    for (const auto& part : p) {
      if (part == "..") return fmt::format("it holds a path with `..` ({})", e.name);
    }
    std::string rel = e.name;
    while (rel.starts_with("./")) rel = rel.substr(2);
    if (!rel.empty()) tops.insert(rel.substr(0, rel.find('/')));
  }
  const auto wanted = student_paths(labs);
  // One folder holding everything (alice/01-memory-bandwidth/kernels.cu) is looked through.
  const auto pick = [&](const std::string& prefix) {
    std::vector<const Entry*> picked;
    for (const auto& e : entries) {
      std::string rel = e.name;
      while (rel.starts_with("./")) rel = rel.substr(2);
      if (e.type != '-' || !rel.starts_with(prefix)) continue;
      const fs::path r = rel.substr(prefix.size());
      if (std::find(wanted.begin(), wanted.end(), r) != wanted.end()) picked.push_back(&e);
    }
    return picked;
  };
  std::string prefix;
  auto picked = pick("");
  if (picked.empty() && tops.size() == 1) {
    prefix = *tops.begin() + "/";
    picked = pick(prefix);
  }
  fs::create_directories(dest);
  root = dest / prefix;
  fs::create_directories(root);
  if (picked.empty()) return std::nullopt;  // an empty submission: the caller says so
  std::vector<std::string> names;
  for (const Entry* e : picked) {
    if (e->size > kMaxStudentFileBytes) {
      return fmt::format("{} is {} bytes, over the limit of {} KiB per file", e->name, e->size, kMaxStudentFileBytes >> 10);
    }
    // unzip reads member names as patterns: a name with one of these characters cannot be asked for exactly.
    if (is_zip(archive) && e->name.find_first_of("[]*?") != std::string::npos) {
      return fmt::format("{} has a character ([, ], * or ?) that cannot be unpacked safely", e->name);
    }
    names.push_back(e->name);
  }
  // The sizes above are what the archive claims: a file limit holds the unpacker to them whatever it finds.
  std::vector<std::string> argv = {"sh", "-c", "ulimit -f 4096; exec \"$@\"", "sh"};
  if (is_zip(archive)) {
    argv.insert(argv.end(), {"unzip", "-qq", "-o", archive.string()});
    argv.insert(argv.end(), names.begin(), names.end());
    argv.insert(argv.end(), {"-d", dest.string()});
  } else {
    argv.insert(argv.end(), {"tar", "-xzf", archive.string(), "-C", dest.string(), "--no-same-owner",
                             "--no-same-permissions", "--"});
    argv.insert(argv.end(), names.begin(), names.end());
  }
  const ProcessResult r = run_process(argv, {.timeout_s = 120});
  if (!r.ok()) return fmt::format("unpacking it failed ({}): {}", r.describe(), tail_lines(r.output, 3));
  return std::nullopt;
}

std::vector<Submission> find_submissions(const fs::path& dir, std::vector<std::string>& ignored) {
  std::map<std::string, std::vector<Submission>> by_name;
  std::vector<fs::path> paths;
  for (const auto& e : fs::directory_iterator(dir)) paths.push_back(e.path());
  std::sort(paths.begin(), paths.end());
  for (const auto& p : paths) {
    const std::string file = p.filename().string();
    if (file.starts_with(".")) continue;  // .DS_Store, editors' files
    std::error_code ec;
    const auto st = fs::symlink_status(p, ec);
    Submission s{file, p, ""};
    if (fs::is_symlink(st)) {
      s.refused = "it is a symbolic link (a submission must be a folder or an archive of its own, never a link)";
    } else if (fs::is_directory(st)) {
    } else if (fs::is_regular_file(st) && (is_zip(p) || is_tar_gz(p))) {
      s.student = file.substr(0, file.size() - (file.ends_with(".tar.gz") ? 7 : 4));
    } else {
      ignored.push_back(fmt::format("{}: ignored, not a folder, .zip or .tar.gz", file));
      continue;
    }
    by_name[s.student].push_back(s);
  }
  std::vector<Submission> out;
  for (auto& [name, list] : by_name) {
    if (list.size() > 1) {
      std::string all;
      for (const auto& s : list) all += (all.empty() ? "" : " and ") + s.source.filename().string();
      for (auto& s : list) {
        s.refused = fmt::format("two submissions are named {} ({}): neither is graded; keep one", name, all);
      }
    }
    out.insert(out.end(), list.begin(), list.end());
  }
  return out;
}

void InputHash::add(std::string_view bytes) {
  for (const unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  // The length after the bytes: ("ab", "c") and ("a", "bc") hash differently.
  const std::string n = fmt::format("#{};", bytes.size());
  for (const unsigned char c : n) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
}

void InputHash::add_file_named(const std::string& name, std::string_view bytes) {
  add(name);
  add(bytes);
}

std::string InputHash::hex() const { return fmt::format("{:016x}", h); }

namespace {

// ---- what a grade depends on besides the student's files ----

// Every file of a hidden-tests folder, by name and content.
std::string hidden_tests_hash(const fs::path& dir) {
  InputHash h;
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file()) files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) h.add_file_named(f.lexically_relative(dir).string(), read_all(f));
  return h.hex();
}

// The grader itself and every file of the tree a grade reads: the CLI, common/, cmake/, data/, the top-level
// build files and the graded labs' files other than the student files and handouts.
std::string grader_hash(const std::vector<const Lab*>& labs) {
  InputHash h;
  h.add(read_all("/proc/self/exe"));
  const fs::path src = source_dir();
  const auto add_tree = [&](const fs::path& dir, const std::set<std::string>& skip) {
    if (!fs::exists(dir)) return;
    std::vector<fs::path> files;
    for (auto it = fs::recursive_directory_iterator(dir); it != fs::recursive_directory_iterator(); ++it) {
      const std::string rel = it->path().lexically_relative(dir).string();
      if (it->is_directory() && skip.count(rel)) {
        it.disable_recursion_pending();
        continue;
      }
      if (it->is_regular_file() && !skip.count(rel)) files.push_back(it->path());
    }
    std::sort(files.begin(), files.end());
    for (const auto& f : files) h.add_file_named(f.lexically_relative(src).string(), read_all(f));
  };
  for (const char* d : {"common", "cmake", "data"}) add_tree(src / d, {});
  for (const char* f : {"CMakeLists.txt", "CMakePresets.json"}) h.add_file_named(f, read_all(src / f));
  for (const Lab* lab : labs) {
    std::set<std::string> skip(lab->student_files.begin(), lab->student_files.end());
    skip.insert("README.md");
    add_tree(lab->dir, skip);
  }
  return h.hex();
}

// ---- one student ----

struct Outcome {
  enum { graded, unchanged, not_graded, grader_failed } kind = graded;
  std::string reason;
  double score = 0, max = 0;
};

class ClassGrader {
 public:
  ClassGrader(const ClassArgs& a, std::vector<const Lab*> labs)
      : a_(a), labs_(std::move(labs)), build_(fs::absolute(a.build_dir.value_or(a.out / "build"))) {
    grader_ = grader_hash(labs_);
    if (a.hidden_tests) hidden_ = hidden_tests_hash(*a.hidden_tests);
  }

  // Whether grading `s` now runs a grade (the ETA counts only these): not refused before it is read, not
  // graded before with the same inputs.
  bool will_grade(const Submission& s) const {
    std::string refusal;
    const auto inputs = s.refused.empty() ? inputs_of(s, refusal) : std::nullopt;
    return inputs && !graded_before(s, *inputs);
  }

  Outcome grade(const Submission& s) {
    const fs::path dir = a_.out / "students" / s.student;
    fs::create_directories(dir);
    nlohmann::json status = {{"student", s.student}, {"source", fs::absolute(s.source).string()},
                             {"graded", false}, {"at", utc_now(true)}};
    const auto refuse = [&](const std::string& why) {
      status["reason"] = why;
      fs::remove(dir / "results.json");
      write_text(dir / "status.json", status.dump(2) + "\n");
      return Outcome{Outcome::not_graded, why};
    };
    if (!s.refused.empty()) return refuse(s.refused);
    std::string refusal;
    const auto hashed = inputs_of(s, refusal);
    if (!hashed) return refuse(refusal);
    const std::string inputs = *hashed;
    if (graded_before(s, inputs)) return Outcome{Outcome::unchanged, "", 0, 0};
    const bool archive = !fs::is_directory(fs::symlink_status(s.source));
    fs::path root = s.source;
    if (archive) {
      fs::remove_all(dir / "upload");
      if (auto why = unpack_archive(s.source, labs_, dir / "upload", root)) {
        return refuse(fmt::format("{} was refused: {}", s.source.filename().string(), *why));
      }
      bool any = false;
      for (const auto& rel : student_paths(labs_)) any = any || fs::exists(root / rel);
      if (!any) return refuse(empty_message());
    }

    std::vector<std::string> argv = to_argv(grade_of(root, dir));
    argv.insert(argv.begin(), fs::read_symlink("/proc/self/exe").string());
    fs::remove(dir / "results.json");
    fs::remove_all(dir / "report");
    const auto t0 = std::chrono::steady_clock::now();
    // Each test process has its own time limit; this one only stops a grader that never ends.
    const ProcessResult r = run_process(argv, {.timeout_s = 24 * 3600.0, .max_output_bytes = 16u << 20});
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    write_text(dir / "log.txt", r.output);
    status["seconds"] = seconds;
    const nlohmann::json results = read_json(dir / "results.json");
    if (!r.ok() || !results.is_object()) {
      const std::string why = fmt::format("the grader itself failed ({}); see {}:\n{}", r.describe(),
                                          (dir / "log.txt").string(), tail_lines(r.output, 8));
      status["reason"] = why;
      write_text(dir / "status.json", status.dump(2) + "\n");
      return Outcome{Outcome::grader_failed, why};
    }
    Outcome o{Outcome::graded, "", results.value("score", 0.0), 0};
    for (const auto& t : results.at("tests")) o.max += t.value("max_score", 0.0);
    status["graded"] = true;
    status["inputs"] = inputs;
    write_text(dir / "status.json", status.dump(2) + "\n");
    return o;
  }

 private:
  // The grade of one student: their upload, graded in the class's tree, its files in the student's folder.
  GradeArgs grade_of(const fs::path& root, const fs::path& dir) const {
    GradeArgs g;
    for (const Lab* lab : labs_) g.labs.push_back(lab->id);
    g.submission = fs::absolute(root);
    g.build_dir = build_;
    g.json = fs::absolute(dir / "results.json");
    g.report_dir = fs::absolute(dir / "report");
    g.no_color = true;
    g.timeout_s = a_.timeout_s;
    g.verify = a_.verify;
    g.coverage = a_.coverage;
    g.dry_run = a_.dry_run;
    g.seed = a_.seed;
    if (a_.hidden_tests) g.hidden_tests = fs::absolute(*a_.hidden_tests);
    g.kinds = a_.kinds;
    return g;
  }

  // What grading `s` reads, hashed: the upload (an archive's bytes, or a folder's student files) and what
  // grades it. nullopt, with `refusal` set, for an upload refused before it is read.
  std::optional<std::string> inputs_of(const Submission& s, std::string& refusal) const {
    const auto refused = [](std::string& out, const std::string& why) -> std::optional<std::string> {
      out = why;
      return std::nullopt;
    };
    InputHash h;
    h.add(grader_);
    for (const Lab* lab : labs_) h.add(lab->id);
    const char* env_seed = std::getenv("ROOFLAB_SEED");  // what each grade reads when --seed is not given
    h.add(a_.seed.value_or(env_seed != nullptr ? env_seed : "(default seed)"));
    for (const auto& k : a_.kinds) h.add(k);
    h.add(fmt::format("timeout {} verify {}", a_.timeout_s, a_.verify));
    h.add(hidden_);  // the hidden tests are part of the grader: editing one regrades the class
    if (!fs::is_directory(fs::symlink_status(s.source))) {  // an archive
      std::error_code ec;
      const auto size = fs::file_size(s.source, ec);
      if (ec || size > kMaxArchiveBytes) {  // refused before a byte of it is read
        return refused(refusal, fmt::format("{} was refused: {}", s.source.filename().string(),
                                            ec ? "cannot read it: " + ec.message() : too_big(size)));
      }
      h.add(read_all(s.source));
    } else {
      std::error_code ec;
      fs::directory_iterator probe(s.source, ec);
      if (ec) return refused(refusal, fmt::format("the folder cannot be read: {}", ec.message()));
      bool any = false;
      for (const auto& rel : student_paths(labs_)) {
        std::string text;
        const auto why = read_student_file(s.source, rel, text);
        h.add_file_named(rel.string(), why ? "refused: " + *why : text);
        any = any || fs::symlink_status(s.source / rel, ec).type() != fs::file_type::not_found;
      }
      if (!any) return refused(refusal, empty_message());
    }
    return h.hex();
  }

  bool graded_before(const Submission& s, const std::string& inputs) const {
    const fs::path dir = a_.out / "students" / s.student;
    const nlohmann::json before = read_json(dir / "status.json");
    return !a_.force && before.is_object() && before.value("graded", false) && before.value("inputs", "") == inputs &&
           fs::exists(dir / "results.json");
  }

  std::string empty_message() const {
    std::string files;
    for (const Lab* lab : labs_) {
      for (const auto& f : lab->student_files) files += (files.empty() ? "" : ", ") + lab->dir_name() + "/" + f;
    }
    return "empty submission: none of the student files is in it (" + files +
           (labs_.size() == 1 ? ", or the same files at its top level)" : ")");
  }

  const ClassArgs& a_;
  std::vector<const Lab*> labs_;
  fs::path build_;
  std::string grader_;
  std::string hidden_;  // hash of the hidden tests' files, "" without
};

bool gpu_here(std::string& why) {
#if defined(ROOFLAB_HAVE_CUDA)
  return rooflab::device_available(&why);
#else
  why = "this build has no CUDA support";
  return false;
#endif
}

}  // namespace

void write_roster(const fs::path& out, const std::vector<const Lab*>& labs, const std::vector<Submission>& subs,
                  int chunk) {
  nlohmann::json roster = {{"labs", nlohmann::json::array()}, {"students", nlohmann::json::array()}, {"chunk", chunk}};
  for (const Lab* lab : labs) roster["labs"].push_back(lab->id);
  std::set<std::string> seen;  // two entries of one name are one (refused) student
  for (const auto& s : subs) {
    if (seen.insert(s.student).second) roster["students"].push_back(s.student);
  }
  write_text(out / "roster.json", roster.dump(2) + "\n");
}

int cmd_grade_class(const ClassArgs& a) {
  const fs::path out = fs::absolute(a.out);
  if (a.collect_only) {
    std::fputs(collect_class(out).c_str(), stdout);
    return kExitOk;
  }
  require_numeric_seed(a.seed);
  if (!fs::is_directory(a.submissions)) {
    throw std::invalid_argument(fmt::format("{} is not a folder of submissions", a.submissions.string()));
  }
  const Manifest base = load_manifest(own_build_dir());
  const auto labs = resolve_labs(base, a.labs);
  std::vector<std::string> ignored;
  const auto subs = find_submissions(a.submissions, ignored);
  for (const auto& i : ignored) fmt::print("rooflab grade-class: {}\n", i);
  if (subs.empty()) throw std::invalid_argument(fmt::format("{} holds no submission", a.submissions.string()));

  std::vector<const Submission*> mine;
  for (std::size_t i = 0; i < subs.size(); ++i) {
    if (!a.task || static_cast<int>(i) / std::max(1, a.chunk) == *a.task) mine.push_back(&subs[i]);
  }
  // The roster: who is in the class, for the collection step (a Slurm task's is written by slurm-script).
  if (!a.task) write_roster(out, labs, subs, 1);

  std::string why;
  if (a.require_gpu && !gpu_here(why)) {
    // Perf was asked: grading here would mark every perf test "needs a GPU". Nothing is written, so the
    // collection step lists these students as without a result, and this task can be resubmitted alone.
    std::string names;
    for (const auto* s : mine) names += " " + s->student;
    std::cerr << fmt::format("rooflab grade-class: this node has no GPU ({}), and the class is graded with perf: "
                             "not grading{}. Resubmit this task on a GPU node.\n", why, names);
    return kExitNoGpu;
  }
  // Slurm tasks given one shared tree take turns; every grade below runs in it.
  const TreeLock lock(fs::absolute(a.build_dir.value_or(out / "build")));
  ClassGrader grader(a, labs);
  const fs::path build_dir = fs::absolute(a.build_dir.value_or(out / "build"));
  // Who will be graded: the others (unchanged since their last grade, refused) take no time and no ETA.
  std::vector<bool> grading(mine.size());
  int to_grade = 0;
  for (std::size_t i = 0; i < mine.size(); ++i) {
    grading[i] = grader.will_grade(*mine[i]);
    if (grading[i]) ++to_grade;
  }
  fmt::print("rooflab grade-class: {} of {} submissions to consider, {} to grade (the others unchanged since their "
             "last grade, or refused); build tree {}\n", mine.size(), subs.size(), to_grade, build_dir.string());
  if (to_grade > 0 && first_build(build_dir)) {
    fmt::print("rooflab grade-class: the first student's grade builds the harness and the labs' tests first: expect "
               "{}; the students after it take seconds to minutes each.\n",
               first_build_estimate(std::thread::hardware_concurrency()));
  }
  std::fflush(stdout);
  const auto t0 = std::chrono::steady_clock::now();
  int done = 0, graded = 0, failed = 0, left = to_grade;
  double grading_seconds = 0;
  for (std::size_t i = 0; i < mine.size(); ++i) {
    const Submission* s = mine[i];
    if (grading[i]) {
      fmt::print("[{}/{}] {}: grading ...\n", done + 1, mine.size(), s->student);
      std::fflush(stdout);
    }
    const auto started = std::chrono::steady_clock::now();
    const Outcome o = grader.grade(*s);
    ++done;
    const auto now = std::chrono::steady_clock::now();
    const double elapsed = std::chrono::duration<double>(now - t0).count();
    if (o.kind == Outcome::graded || o.kind == Outcome::grader_failed) {
      ++graded;
      grading_seconds += std::chrono::duration<double>(now - started).count();
    }
    if (o.kind == Outcome::grader_failed) ++failed;
    if (grading[i]) --left;
    std::string what;
    switch (o.kind) {
      case Outcome::graded: what = fmt::format("{:.1f} / {:g}", o.score, o.max); break;
      case Outcome::unchanged: what = "unchanged since its last grade (--force regrades)"; break;
      case Outcome::not_graded: what = "NOT GRADED: " + o.reason; break;
      case Outcome::grader_failed: what = "GRADER FAILED: " + o.reason; break;
    }
    fmt::print("[{}/{}] {}: {} ({} elapsed{})\n", done, mine.size(), s->student, what, format_duration(elapsed),
               class_eta(grading_seconds, graded, left));
    std::fflush(stdout);
  }
  // A task whose grader failed ends in failure, so that Slurm reports it and it can be resubmitted alone; the
  // collection step merges when every task has ended.
  if (a.task) return failed > 0 ? kExitHarness : kExitOk;
  fmt::print("\n{}", collect_class(out));
  return kExitOk;
}

}  // namespace rooflab::grader
