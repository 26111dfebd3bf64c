#include "report.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <sstream>

namespace rooflab::grader {
namespace {

constexpr const char* kKindOrder[] = {"analytic", "emu", "gpu", "perf", "race", "static", "dryrun"};

std::string kind_label(const std::string& kind) {
  if (kind == "analytic") return "analytic (questions)";
  if (kind == "emu") return "emu (correctness, CPU backend)";
  if (kind == "gpu") return "gpu (correctness, GPU)";
  if (kind == "perf") return "perf (speed vs your GPU's roofline)";
  if (kind == "static") return "static (compiled code, hints)";
  if (kind == "race") return "race (data races on the CPU, hints)";
  if (kind == "dryrun") return "dryrun (GPU path on CPU, no points)";
  return kind;
}

// The first lines of a test's output, indented, for the terminal.
std::string first_lines(const std::string& text, int n, const std::string& indent) {
  std::istringstream in(text);
  std::string line, out;
  while (n-- > 0 && std::getline(in, line)) out += indent + line + "\n";
  return out;
}

}  // namespace

std::vector<KindTotals> totals_by_kind(const std::vector<TestResult>& tests) {
  std::vector<KindTotals> out;
  for (const char* kind : kKindOrder) {
    KindTotals t{kind};
    for (const auto& r : tests) {
      if (r.kind != kind) continue;
      ++t.tests;
      if (r.status == Status::passed && r.score >= r.max_score) ++t.passed;
      if (r.status == Status::needs_gpu || r.status == Status::unavailable) ++t.needs_gpu;
      if (r.status == Status::unavailable) ++t.unavailable;
      t.score += r.score;
      t.max_score += r.max_score;
    }
    if (t.tests > 0) out.push_back(t);
  }
  return out;
}

std::string terminal_table(const LabResults& lr, bool color) {
  const auto paint = [&](const std::string& s, const char* code) {
    return color ? fmt::format("\033[{}m{}\033[0m", code, s) : s;
  };
  std::string out = fmt::format("\nLab {}  {}\n", lr.lab->id, lr.lab->title);
  out += fmt::format("  student files: {}\n", lr.student_dir);
  if (!lr.note.empty()) out += "  " + lr.note + "\n";
  out += fmt::format("  {:<38} {:>6} {:>7} {:>15}\n", "kind", "tests", "passed", "points");
  double score = 0, max_score = 0;
  for (const auto& t : totals_by_kind(lr.tests)) {
    std::string points = fmt::format("{:.1f} / {:.1f}", t.score, t.max_score);
    std::string status;
    if (t.needs_gpu == t.tests) {
      const std::string what = t.unavailable == t.tests ? "needs the CUDA toolkit" : "needs a GPU";
      status = paint(t.max_score > 0 ? what : what + " (not counted)", "33");
    } else if (t.max_score == 0) {
      status = t.kind == "static" || t.kind == "race" ? "hints, no points"
               : t.kind == "dryrun"                    ? "dry run: not GPU figures, no points"
                                                       : "not counted (graded on the other backend)";
    } else if (t.score >= t.max_score) {
      status = paint("full marks", "32");
    } else if (t.score == 0) {
      status = paint("no points", "31");
    }
    if (t.needs_gpu > 0 && t.needs_gpu < t.tests) status += paint(fmt::format(" (needs a GPU: {} of {} tests)", t.needs_gpu, t.tests), "33");
    out += fmt::format("  {:<38} {:>6} {:>7} {:>15}  {}\n", kind_label(t.kind), t.tests, t.passed, points, status);
    score += t.score;
    max_score += t.max_score;
  }
  out += fmt::format("  {:<38} {:>6} {:>7} {:>15}\n", "total", "", "", fmt::format("{:.1f} / {:.1f}", score, max_score));
  // What went wrong, test by test (a few lines each; the Markdown report has everything).
  bool header = false;
  std::string previous;
  for (const auto& r : lr.tests) {
    if (r.status == Status::passed && r.score >= r.max_score) continue;
    if (r.status == Status::not_counted || r.status == Status::needs_gpu || r.status == Status::unavailable) continue;
    if (r.max_score == 0 && r.kind != "static" && r.kind != "race" && r.kind != "dryrun") continue;  // the other backend's
    if (!header) {
      out += "  what to fix:\n";
      header = true;
    }
    out += fmt::format("  - {} [{}] {:.1f}/{:.1f} {}\n", r.id, r.kind, r.score, r.max_score,
                       paint(std::string(to_string(r.status)), r.status == Status::passed ? "33" : "31"));
    out += r.output == previous ? "      (same as above)\n" : first_lines(r.output, 4, "      ");
    previous = r.output;
  }
  return out;
}

std::string results_output(const TestResult& r) {
  if (r.status == Status::needs_gpu) return "needs a GPU: not graded on this machine.\n" + r.output;
  if (r.status == Status::crashed || r.status == Status::timed_out || r.status == Status::build_failed) {
    return std::string(to_string(r.status)) + ": " + r.output;
  }
  return r.output;
}

std::string gradescope_json(const std::vector<LabResults>& labs, const std::string& header) {
  nlohmann::json tests = nlohmann::json::array();
  double score = 0;
  // The ceilings in force: each one once, as the first test that used it recorded it.
  std::vector<CeilingInForce> ceilings;
  for (const auto& lr : labs) {
    int number = 1;
    for (const auto& r : lr.tests) {
      score += r.score;
      const std::string output = results_output(r);
      tests.push_back({{"name", fmt::format("lab{} {}: {}", r.lab, r.kind, r.id)},
                       {"number", fmt::format("{}.{}", r.lab, number++)},
                       {"score", r.score},
                       {"max_score", r.max_score},
                       // Gradescope knows only passed/failed; rooflab_status keeps the finer reason.
                       {"status", r.status == Status::passed && r.score >= r.max_score ? "passed" : "failed"},
                       {"rooflab_status", std::string(to_string(r.status))},
                       {"rooflab_seconds", r.seconds},  // JUnit's time
                       {"output", output},
                       {"tags", {"lab" + r.lab, r.kind, r.backend}},
                       {"visibility", "visible"}});
      if (!r.ceilings.empty()) tests.back()["rooflab_ceilings"] = r.ceilings;
      for (const auto& c : r.ceilings) {
        if (std::none_of(ceilings.begin(), ceilings.end(), [&](const auto& k) { return k.name == c.name; })) {
          ceilings.push_back(c);
        }
      }
    }
  }
  nlohmann::json j = {{"score", score}, {"output", header}, {"tests", tests}};
  if (!ceilings.empty()) j["rooflab_ceilings"] = ceilings;
  return j.dump(2);
}

std::string markdown_report(const std::vector<LabResults>& labs, const std::string& header) {
  std::string md = "# rooflab grade report\n\n" + header + "\n";
  for (const auto& lr : labs) {
    md += fmt::format("\n## Lab {}: {}\n\nStudent files: `{}`\n\n", lr.lab->id, lr.lab->title, lr.student_dir);
    if (!lr.note.empty()) md += lr.note + "\n\n";
    md += "| kind | tests | passed | points |\n|---|---|---|---|\n";
    for (const auto& t : totals_by_kind(lr.tests)) {
      md += fmt::format("| {} | {} | {} | {:.1f} / {:.1f}{} |\n", t.kind, t.tests, t.passed, t.score, t.max_score,
                        t.needs_gpu == t.tests ? " (needs a GPU)" : (t.kind == "dryrun" ? " (dry run on the CPU: not GPU figures)" : ""));
    }
    md += "\n| test | kind | backend | status | points |\n|---|---|---|---|---|\n";
    for (const auto& r : lr.tests) {
      md += fmt::format("| `{}` | {} | {} | {} | {:.1f} / {:.1f} |\n", r.id, r.kind, r.backend, to_string(r.status),
                        r.score, r.max_score);
    }
    bool ceiling_header = false;
    for (const auto& r : lr.tests) {
      for (const auto& c : r.ceilings) {
        if (!ceiling_header) md += "\n| test | judged against | value | measured |\n|---|---|---|---|\n";
        ceiling_header = true;
        md += fmt::format("| `{}` | {} | {:.4g} {} | {} |\n", r.id, c.name, c.value, c.unit, c.measured);
      }
    }
    for (const auto& r : lr.tests) {
      if (r.output.empty()) continue;
      md += fmt::format("\n### `{}` ({})\n\n```\n{}\n```\n", r.id, to_string(r.status), r.output);
    }
  }
  return md;
}

}  // namespace rooflab::grader
