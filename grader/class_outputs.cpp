#include "class_grading.hpp"

#include "util.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <set>

// The outputs of a class: every student's results.json and status.json merged into grades.csv, grades-lms.csv,
// a JUnit XML per student and summary.txt (what an LMS, a CI job and the instructor read).
namespace rooflab::grader {

namespace fs = std::filesystem;

namespace {

// ---- the class files ----

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (const char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string xml_escape(const std::string& s) {
  std::string out;
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        // XML 1.0 has no other control characters (a crash's output may hold any byte).
        if (c < 0x20 && ch != '\n' && ch != '\t' && ch != '\r') {
          out += '?';
        } else {
          out += ch;
        }
    }
  }
  return out;
}

// A test as results.json has it: its lab and kind from the tags.
struct Test {
  std::string lab, kind, id, status;
  double score = 0, max = 0, seconds = 0;
  std::string output;
};

std::vector<Test> tests_of(const nlohmann::json& results) {
  std::vector<Test> out;
  if (!results.is_object() || !results.contains("tests")) return out;
  for (const auto& t : results.at("tests")) {
    Test x;
    const auto tags = t.value("tags", std::vector<std::string>{});
    x.lab = !tags.empty() && tags[0].starts_with("lab") ? tags[0].substr(3) : "?";
    x.kind = tags.size() > 1 ? tags[1] : "?";
    const std::string name = t.value("name", "");
    x.id = name.substr(name.find(": ") == std::string::npos ? 0 : name.find(": ") + 2);
    x.status = t.value("rooflab_status", t.value("status", ""));
    x.score = t.value("score", 0.0);
    x.max = t.value("max_score", 0.0);
    x.seconds = t.value("rooflab_seconds", 0.0);
    x.output = t.value("output", "");
    out.push_back(std::move(x));
  }
  return out;
}

bool skipped_status(const std::string& s) {
  return s == "needs a GPU" || s == "needs the CUDA toolkit" || s == "not counted";
}

}  // namespace

namespace {

// How a test reads in JUnit: a crash or time-out is an error (the code did not finish), lost points a
// failure, a test not graded here or a hint (0 points) that did not pass skipped (neither turns a CI job red).
enum class JunitOutcome { passed, failure, error, skipped };

JunitOutcome junit_outcome(const Test& t) {
  if (t.status == "not graded") return JunitOutcome::error;  // the grading failed: someone must look
  if (skipped_status(t.status)) return JunitOutcome::skipped;
  if (t.status == "passed" && t.score >= t.max) return JunitOutcome::passed;
  if (t.max == 0) return JunitOutcome::skipped;  // a hint: no points at stake
  if (t.status == "crashed" || t.status == "timed out") return JunitOutcome::error;
  return JunitOutcome::failure;
}

struct JunitCounts {
  int tests = 0, failures = 0, errors = 0, skipped = 0;
  double seconds = 0;
  void add(const Test& t) {
    ++tests;
    seconds += t.seconds;
    switch (junit_outcome(t)) {
      case JunitOutcome::failure: ++failures; break;
      case JunitOutcome::error: ++errors; break;
      case JunitOutcome::skipped: ++skipped; break;
      case JunitOutcome::passed: break;
    }
  }
  std::string attributes() const {
    return fmt::format("tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" time=\"{:.3f}\"", tests, failures,
                       errors, skipped, seconds);
  }
};

std::string junit_testcase(const std::string& student, const Test& t) {
  std::string x = fmt::format("    <testcase classname=\"{}.lab{}.{}\" name=\"{}\" time=\"{:.3f}\">\n",
                              xml_escape(student), t.lab, xml_escape(t.kind), xml_escape(t.id), t.seconds);
  switch (junit_outcome(t)) {
    case JunitOutcome::skipped:
      x += fmt::format("      <skipped message=\"{}\"/>\n",
                       xml_escape(skipped_status(t.status) ? t.status : "hint (no points): " + t.status));
      break;
    case JunitOutcome::error:
      x += fmt::format("      <error message=\"{}\" type=\"{}\">{}</error>\n", xml_escape(t.status),
                       xml_escape(t.status), xml_escape(t.output));
      break;
    case JunitOutcome::failure:
      x += fmt::format("      <failure message=\"{}: {:g} of {:g} points\" type=\"{}\">{}</failure>\n",
                       xml_escape(t.status), t.score, t.max, xml_escape(t.status), xml_escape(t.output));
      break;
    case JunitOutcome::passed:
      if (!t.output.empty()) x += fmt::format("      <system-out>{}</system-out>\n", xml_escape(t.output));
      break;
  }
  return x + "    </testcase>\n";
}

std::string junit_document(const std::string& student, const std::vector<Test>& tests) {
  std::map<std::string, std::vector<const Test*>> by_lab;
  JunitCounts all;
  for (const auto& t : tests) {
    by_lab[t.lab].push_back(&t);
    all.add(t);
  }
  std::string x = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  x += fmt::format("<testsuites name=\"rooflab {}\" {}>\n", xml_escape(student), all.attributes());
  for (const auto& [lab, list] : by_lab) {
    JunitCounts c;
    double score = 0, max = 0;
    for (const Test* t : list) {
      c.add(*t);
      score += t->score;
      max += t->max;
    }
    x += fmt::format("  <testsuite name=\"{}.lab{}\" {}>\n", xml_escape(student), lab, c.attributes());
    x += fmt::format("    <properties><property name=\"score\" value=\"{:g}\"/><property name=\"max_score\" "
                     "value=\"{:g}\"/></properties>\n", score, max);
    for (const Test* t : list) x += junit_testcase(student, *t);
    x += "  </testsuite>\n";
  }
  return x + "</testsuites>\n";
}

}  // namespace

std::string junit_xml(const std::string& student, const std::string& results_json) {
  return junit_document(student, tests_of(nlohmann::json::parse(results_json)));
}

std::string junit_not_graded(const std::string& student, const std::vector<std::string>& labs, const std::string& why) {
  std::vector<Test> tests;
  for (const auto& lab : labs) tests.push_back({lab, "grade", "not graded", "not graded", 0, 0, 0, why});
  return junit_document(student, tests);
}

namespace {

// One student's points per lab, as the class files show them.
struct Points {
  double earned = 0, gradable = 0, gpu_owed = 0;  // gradable: the points of the tests graded on this machine
};
struct Row {
  std::string student;
  std::map<std::string, Points> lab;
  std::string not_graded;
  std::string status = "graded";  // or what went wrong, for the LMS file
};

// grades-lms.csv: one row per student, what a gradebook imports. Columns: student, then per lab its points,
// the points gradable on this machine and those a GPU still owes, then the totals and a status. Plain RFC
// 4180 CSV, one header row: Moodle's CSV grade import maps `student` to a user field and each labNN column
// to a grade item; Canvas imports it into a gradebook export's columns (docs/instructor-guide.md).
std::string lms_csv(const std::vector<std::string>& labs, const std::vector<Row>& rows) {
  std::string csv = "student";
  for (const auto& lab : labs) csv += fmt::format(",lab{0},lab{0}_gradable,lab{0}_gpu_owed", lab);
  csv += ",total,total_gradable,total_gpu_owed,status\n";
  for (const auto& r : rows) {
    csv += csv_field(r.student);
    Points total;
    for (const auto& lab : labs) {
      const auto it = r.lab.find(lab);
      const Points p = it == r.lab.end() ? Points{} : it->second;
      csv += fmt::format(",{:g},{:g},{:g}", p.earned, p.gradable, p.gpu_owed);
      total.earned += p.earned;
      total.gradable += p.gradable;
      total.gpu_owed += p.gpu_owed;
    }
    csv += fmt::format(",{:g},{:g},{:g},{}\n", total.earned, total.gradable, total.gpu_owed, csv_field(r.status));
  }
  return csv;
}

}  // namespace

namespace {

// Problems worth an instructor's look, by what happened: "crashed" -> "alice (lab01 Suite.Name)".
using Problems = std::map<std::string, std::vector<std::string>>;

// A student without results: a row of "not graded" and a JUnit file that says why.
Row not_graded_row(const fs::path& out, const std::string& student, const std::vector<std::string>& labs,
                   const std::string& reason, std::string& csv, Problems& problems) {
  Row row{student, {}, reason};
  for (const auto& lab : labs) csv += fmt::format("{},{},not graded,0,0\n", csv_field(student), lab);
  const std::string why = reason.substr(0, reason.find('\n'));
  problems["not graded"].push_back(fmt::format("{}: {}", student, why));
  row.status = "not graded: " + why;
  write_text(out / "junit" / (student + ".xml"), junit_not_graded(student, labs, reason));
  return row;
}

// Files the upload checks refused, as the report's header names them ("lab 01: kernels.cu was refused (...)").
void refusals_in(const std::string& header, std::vector<std::string>& troubles) {
  for (std::size_t at = header.find(" was refused ("); at != std::string::npos; at = header.find(" was refused (", at + 1)) {
    const std::size_t line = header.rfind('\n', at);
    troubles.push_back("refused: " + header.substr(line == std::string::npos ? 0 : line + 1,
                                                 header.find(';', at) - (line == std::string::npos ? 0 : line + 1)));
  }
}

// A graded student: their points per lab and kind (grades.csv), per lab (the row), what went wrong, and
// their JUnit file.
Row graded_row(const fs::path& out, const std::string& student, const std::string& text, std::string& csv,
               Problems& problems) {
  Row row{student, {}, ""};
  const auto tests = tests_of(nlohmann::json::parse(text));
  std::vector<std::pair<std::string, std::string>> order;  // (lab, kind) as first seen
  std::map<std::pair<std::string, std::string>, std::pair<double, double>> sums;
  std::map<std::string, std::set<std::string>> bad;  // status -> "lab01 ..." entries of this student
  for (const auto& t : tests) {
    const auto key = std::make_pair(t.lab, t.kind);
    if (!sums.count(key)) order.push_back(key);
    sums[key].first += t.score;
    sums[key].second += t.max;
    Points& p = row.lab[t.lab];
    p.earned += t.score;
    (skipped_status(t.status) ? p.gpu_owed : p.gradable) += t.max;
    if (t.status == "crashed" || t.status == "timed out") bad[t.status].insert(fmt::format("lab{} {}", t.lab, t.id));
    if (t.status == "build failed") {
      // A binary refused for a forbidden library (symbols.hpp) compiled: say what it was refused for.
      const bool library = t.output.find("forbids") != std::string::npos && t.output.find("refused:") != std::string::npos;
      bad[library ? "used a forbidden library" : "did not compile"].insert(fmt::format("lab{} {}", t.lab, t.kind));
    }
  }
  for (const auto& key : order) {
    csv += fmt::format("{},{},{},{:g},{:g}\n", csv_field(student), key.first, key.second, sums[key].first,
                       sums[key].second);
  }
  std::vector<std::string> troubles;
  for (const auto& [what, list] : bad) {
    std::string all;
    for (const auto& l : list) all += (all.empty() ? "" : ", ") + l;
    problems[what].push_back(fmt::format("{} ({})", student, all));
    troubles.push_back(fmt::format("{} in {}", what, all));
  }
  refusals_in(nlohmann::json::parse(text).value("output", ""), troubles);
  if (!troubles.empty()) row.status = fmt::format("{}", fmt::join(troubles, "; "));
  write_text(out / "junit" / (student + ".xml"), junit_xml(student, text));
  return row;
}

// The summary's table: one line per student, their points per lab and in all, and what a GPU still owes.
std::string summary_table(const std::vector<std::string>& labs, const std::vector<Row>& rows,
                          std::map<std::string, std::vector<double>>& fractions) {
  std::string s = fmt::format("rooflab grade-class: {} students, labs {}\n\n", rows.size(), fmt::join(labs, " "));
  std::size_t width = 7;
  for (const auto& r : rows) width = std::max(width, r.student.size());
  s += fmt::format("{:<{}}", "student", width + 2);
  for (const auto& lab : labs) s += fmt::format("{:>14}", "lab" + lab);
  s += fmt::format("{:>14}\n", "total");
  std::map<std::string, double> owed;  // per lab: the points that need a GPU (not in the table)
  for (const auto& r : rows) {
    s += fmt::format("{:<{}}", r.student, width + 2);
    double score = 0, max = 0;
    for (const auto& lab : labs) {
      if (!r.not_graded.empty() || !r.lab.count(lab)) {
        s += fmt::format("{:>14}", "-");
        continue;
      }
      const Points& p = r.lab.at(lab);
      score += p.earned;
      max += p.gradable;
      s += fmt::format("{:>14}", fmt::format("{:.1f}/{:g}", p.earned, p.gradable));
      fractions[lab].push_back(p.gradable > 0 ? p.earned / p.gradable : 0);
      owed[lab] = std::max(owed[lab], p.gpu_owed);
    }
    s += r.not_graded.empty() ? fmt::format("{:>14}\n", fmt::format("{:.1f}/{:g}", score, max))
                              : fmt::format("{:>14}\n", "not graded");
  }
  s += "\nPoints are those gradable on the grading machine";
  std::vector<std::string> owed_text;
  for (const auto& [lab, points] : owed) {
    if (points > 0) owed_text.push_back(fmt::format("lab{} {:g}", lab, points));
  }
  s += owed_text.empty() ? ".\n" : fmt::format("; a GPU grades {} more per student (not in these figures).\n",
                                                fmt::join(owed_text, ", "));
  return s;
}

// The distribution per lab: mean, median, extremes and a histogram of the share of gradable points.
std::string distribution(const std::vector<std::string>& labs, std::map<std::string, std::vector<double>>& fractions) {
  std::string s = "\nDistribution per lab (share of the points gradable on the grading machine):\n";
  for (const auto& lab : labs) {
    auto f = fractions[lab];
    if (f.empty()) {
      s += fmt::format("  lab{}: no graded student\n", lab);
      continue;
    }
    std::sort(f.begin(), f.end());
    double mean = 0;
    for (const double x : f) mean += x;
    mean /= static_cast<double>(f.size());
    s += fmt::format("  lab{}: {} graded, mean {:.0f}%, median {:.0f}%, min {:.0f}%, max {:.0f}%\n", lab, f.size(),
                     100 * mean, 50 * (f[(f.size() - 1) / 2] + f[f.size() / 2]), 100 * f.front(), 100 * f.back());
    int bins[5] = {0, 0, 0, 0, 0};
    for (const double x : f) ++bins[std::min(4, static_cast<int>(x * 5))];
    const char* names[5] = {"  0-19%", " 20-39%", " 40-59%", " 60-79%", "80-100%"};
    for (int b = 0; b < 5; ++b) s += fmt::format("    {} {:<3} {}\n", names[b], bins[b], std::string(bins[b], '#'));
  }
  return s;
}

// Students without a result, on a Slurm run: the tasks to resubmit, each alone.
void slurm_resubmits(const fs::path& out, const nlohmann::json& roster, Problems& problems) {
  const int chunk = roster.value("chunk", 1);
  if (!fs::exists(out / "slurm" / "grade.sbatch")) return;
  std::set<int> tasks;
  const auto& students = roster.at("students");
  for (std::size_t i = 0; i < students.size(); ++i) {
    if (!fs::exists(out / "students" / students[i].get<std::string>() / "status.json")) {
      tasks.insert(static_cast<int>(i) / std::max(1, chunk));
    }
  }
  if (tasks.empty()) return;
  problems["not graded"].push_back(fmt::format(
      "resubmit the tasks that left them without a result, then collect again:\n    sbatch --array={} {} && sbatch {}",
      fmt::join(tasks, ","), (out / "slurm" / "grade.sbatch").string(), (out / "slurm" / "collect.sbatch").string()));
}

std::string problems_text(const Problems& problems) {
  if (problems.empty()) {
    return "\nNo submission crashed, timed out, failed to compile, used a forbidden library or was refused.\n";
  }
  std::string s;
  for (const char* what : {"crashed", "timed out", "did not compile", "used a forbidden library", "not graded"}) {
    if (!problems.count(what)) continue;
    s += fmt::format("\n{} ({}):\n", what, problems.at(what).size());
    for (const auto& p : problems.at(what)) s += "  " + p + "\n";
  }
  return s;
}

}  // namespace

std::string collect_class(const fs::path& out) {
  const nlohmann::json roster = read_json(out / "roster.json");
  if (!roster.is_object()) throw std::runtime_error(fmt::format("{} is missing: grade the class first", (out / "roster.json").string()));
  const auto labs = roster.at("labs").get<std::vector<std::string>>();
  std::string csv = "student,lab,kind,points,max\n";
  std::vector<Row> rows;
  Problems problems;
  fs::remove_all(out / "junit");
  for (const auto& st : roster.at("students")) {
    const std::string student = st.get<std::string>();
    const fs::path dir = out / "students" / student;
    const nlohmann::json status = read_json(dir / "status.json");
    if (!status.is_object()) {
      rows.push_back(not_graded_row(out, student, labs, "no result: its grading did not run or did not finish (a "
                                    "failed Slurm task? resubmit it)", csv, problems));
    } else if (!status.value("graded", false)) {
      rows.push_back(not_graded_row(out, student, labs, status.value("reason", "not graded"), csv, problems));
    } else {
      rows.push_back(graded_row(out, student, read_all(dir / "results.json"), csv, problems));
    }
  }
  write_text(out / "grades.csv", csv);
  write_text(out / "grades-lms.csv", lms_csv(labs, rows));

  // The summary: one line per student, then the distribution per lab, then who needs a look.
  std::map<std::string, std::vector<double>> fractions;
  std::string s = summary_table(labs, rows, fractions);
  s += distribution(labs, fractions);
  slurm_resubmits(out, roster, problems);
  s += problems_text(problems);
  s += fmt::format("\nFiles: {} (one row per student, for an LMS), {} (student,lab,kind,points,max), "
                   "{}/<student>.xml (JUnit), students/<student>/ (results.json, report/, log.txt)\n",
                   (out / "grades-lms.csv").string(), (out / "grades.csv").string(), (out / "junit").string());
  write_text(out / "summary.txt", s);
  return s;
}
}  // namespace rooflab::grader
