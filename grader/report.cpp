#include "report.hpp"

#include <rooflab/detail/rubric.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <regex>
#include <set>
#include <sstream>
#include <string_view>

namespace rooflab::grader {
namespace {

// The report's line for a kind: its heading in the table of kinds (data/test_kinds.json).
std::string kind_label(const std::string& kind) {
  const auto* row = rooflab::rubric::find_kind(kind);
  return row != nullptr ? row->heading : kind;
}

// A kind whose tests earn nothing anywhere (hints, dry runs): its row says why.
const rooflab::rubric::Kind* pointless_kind(const std::string& kind) {
  const auto* row = rooflab::rubric::find_kind(kind);
  return row != nullptr && !row->earns_points ? row : nullptr;
}

// The first lines of a test's output, indented, for the terminal.
std::string first_lines(const std::string& text, int n, const std::string& indent) {
  std::istringstream in(text);
  std::string line, out;
  while (n-- > 0 && std::getline(in, line)) out += indent + line + "\n";
  return out;
}

std::vector<std::string> split_lines(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

bool starts_with(const std::string& s, std::string_view prefix) { return s.rfind(prefix, 0) == 0; }

// A failure as GoogleTest wrote it, taken apart: what the test said (the AssertionResult's message and what
// was streamed after the macro), and the values GoogleTest printed, as "x is 0, want 128".
struct Unwrapped {
  std::string message;
  std::string values;
};

// The lines after "Value of: EXPR": "  Actual: false (why ...", more lines of why, then "Expected: true".
// Returns the why (without the parentheses GoogleTest put round it) and moves `i` past "Expected: ...".
std::string actual_message(const std::vector<std::string>& lines, std::size_t& i) {
  if (i + 1 >= lines.size() || !starts_with(trim(lines[i + 1]), "Actual: ")) return "";
  const std::string first = trim(lines[++i]).substr(8);  // "false (why" or "false"
  const auto paren = first.find(" (");
  std::string why = paren == std::string::npos ? "" : first.substr(paren + 2);
  while (i + 1 < lines.size() && !starts_with(lines[i + 1], "Expected: ")) why += "\n" + lines[++i];
  if (i + 1 < lines.size()) ++i;  // "Expected: true"
  if (paren != std::string::npos && !why.empty() && why.back() == ')') why.pop_back();
  return why;
}

Unwrapped unwrap_gtest(const std::string& failure) {
  static const std::regex compared(R"re(^Expected: \((.*)\) (>=|<=|>|<|!=) \((.*)\), actual: (.*) vs (.*)$)re");
  static const std::regex near(R"re(^The difference between (.*) and (.*) is (.*), which exceeds (.*), where$)re");
  const auto lines = split_lines(failure);
  Unwrapped u;
  std::vector<std::string> kept;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string& l = lines[i];
    std::smatch m;
    if (starts_with(l, "Value of: ")) {  // EXPECT_TRUE / EXPECT_FALSE: the expression is no news to a student
      if (std::string why = actual_message(lines, i); !why.empty()) kept.push_back(why);
    } else if (l == "Expected equality of these values:") {  // EXPECT_EQ: "  a", "    Which is: 0", "  b"
      std::vector<std::pair<std::string, std::string>> sides;
      for (; i + 1 < lines.size() && starts_with(lines[i + 1], "  "); ++i) {
        const std::string side = trim(lines[i + 1]);
        if (starts_with(side, "Which is: ")) {
          if (!sides.empty()) sides.back().second = side.substr(10);
        } else {
          sides.emplace_back(side, "");
        }
      }
      const auto value = [](const auto& s) { return s.second.empty() ? s.first : s.second; };
      if (sides.size() == 2) u.values = fmt::format("{} is {}, want {}", sides[0].first, value(sides[0]), value(sides[1]));
    } else if (std::regex_match(l, m, compared)) {  // EXPECT_GE and friends
      u.values = fmt::format("{} is {}, want {} {}", m[1].str(), m[4].str(), m[2].str(), m[5].str());
    } else if (std::regex_match(l, m, near)) {  // EXPECT_NEAR: "a evaluates to 1," lines follow
      u.values = fmt::format("{} is off by {}, more than {}", m[1].str(), m[3].str(), m[4].str());
      while (i + 1 < lines.size() && lines[i + 1].find(" evaluates to ") != std::string::npos) ++i;
    } else if (l != "Expected: true" && l != "Expected: false") {
      kept.push_back(l);
    }
  }
  for (const auto& k : kept) u.message += k + "\n";
  u.message = trim(u.message);
  return u;
}

// The context a test appended at the end of its message ("(gemv, n = 7, k = 1)": the kernel and a shape, so
// with an '='), or "".
std::string trailing_context(const std::string& text) {
  if (text.empty() || text.back() != ')') return "";
  int depth = 0;
  for (std::size_t i = text.size(); i-- > 0;) {
    if (text[i] == ')') ++depth;
    if (text[i] == '(' && --depth == 0) {
      const std::string inner = text.substr(i + 1, text.size() - i - 2);
      const bool shape = inner.find(" = ") != std::string::npos && inner.find('\n') == std::string::npos;
      return shape && inner.size() <= 120 ? inner : "";
    }
  }
  return "";
}

}  // namespace

std::string what_to_fix(const std::string& failure) {
  constexpr std::size_t kMaxChars = 320;
  const Unwrapped u = unwrap_gtest(failure);
  // Source lines by file name: the race hint's "kernels.cu:47", not a path into the build tree.
  static const std::regex path(R"re((?:/[^\s:/()]+)+/([^\s:/()]+:[0-9]+))re");
  std::string text = std::regex_replace(u.message, path, "$1");
  for (const std::string noise : {"SUMMARY: ThreadSanitizer: "}) {
    for (auto at = text.find(noise); at != std::string::npos; at = text.find(noise)) text.erase(at, noise.size());
  }
  const auto lines = split_lines(text);
  std::string line = lines.empty() ? "" : trim(lines[0]);
  // "...; first ones:" reads on into its first item.
  if (!line.empty() && line.back() == ':' && lines.size() > 1) line += " " + trim(lines[1]);
  if (const std::string context = trailing_context(text); !context.empty() && !starts_with(line, context)) {
    const std::string tail = " (" + context + ")";
    if (line.size() >= tail.size() && line.compare(line.size() - tail.size(), tail.size(), tail) == 0) {
      line.erase(line.size() - tail.size());
    }
    line = context + ": " + line;
  }
  if (!u.values.empty()) line = fmt::format("{}{}({})", line, line.empty() ? "" : " ", u.values);
  if (line.size() > kMaxChars) line = line.substr(0, kMaxChars - 4) + " ...";
  return line;
}

std::vector<KindTotals> totals_by_kind(const std::vector<TestResult>& tests) {
  std::vector<KindTotals> out;
  for (const auto& row : rooflab::rubric::test_kinds()) {
    const std::string& kind = row.kind;
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

namespace {
// A test's lines under "what to fix": each distinct failure in one line (a few; report.md has them all), or
// the start of what the grader said (a crash, a compile error).
std::string fix_lines(const TestResult& r) {
  constexpr std::size_t kShown = 3;
  if (r.failures.empty()) {
    return r.status == Status::build_failed ? first_lines(r.output, 4, "      ") : first_lines(what_to_fix(r.output), 1, "      ");
  }
  std::vector<std::string> distinct;
  for (const auto& f : r.failures) {
    std::string line = what_to_fix(f);
    if (std::find(distinct.begin(), distinct.end(), line) == distinct.end()) distinct.push_back(std::move(line));
  }
  std::string out;
  for (std::size_t i = 0; i < distinct.size() && i < kShown; ++i) out += "      " + distinct[i] + "\n";
  if (r.failures.size() > kShown) {
    out += fmt::format("      ({} failures in all: report.md has each in full)\n", r.failures.size());
  }
  return out;
}
}  // namespace

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
      const auto* row = pointless_kind(t.kind);
      status = row != nullptr ? row->no_points : "not counted (graded on the other backend)";
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
    if (r.max_score == 0 && pointless_kind(r.kind) == nullptr) continue;  // the other backend's
    if (!header) {
      out += "  what to fix:\n";
      header = true;
    }
    out += fmt::format("  - {} [{}] {:.1f}/{:.1f} {}\n", r.id, r.kind, r.score, r.max_score,
                       paint(std::string(to_string(r.status)), r.status == Status::passed ? "33" : "31"));
    const std::string fixes = fix_lines(r);
    out += fixes == previous ? "      (same as above)\n" : fixes;
    previous = fixes;
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
      if (!r.measures.empty()) tests.back()["rooflab_measures"] = r.measures;
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
                        t.needs_gpu == t.tests ? std::string(" (needs a GPU)")
                        : pointless_kind(t.kind) != nullptr ? fmt::format(" ({})", pointless_kind(t.kind)->no_points)
                                                             : std::string());
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

// ---- results.json for Gradescope ----

std::string gradescope_autograder_json(const std::vector<LabResults>& labs, const std::string& header) {
  // Tests that need a GPU are not in `tests`: Gradescope shows an entry without a status as passed, and one
  // marked failed as lost. The top-level output lists them, with their points, as graded later.
  nlohmann::json tests = nlohmann::json::array();
  double score = 0, owed_total = 0;
  std::vector<std::string> owed_by_lab, owed_tests;
  for (const auto& lr : labs) {
    double owed = 0;
    std::set<std::string> listed;
    const auto later = [&](const std::string& kind, const std::string& id, double points, const std::string&) {
      owed += points;
      owed_tests.push_back(fmt::format("  lab{} {}: {} ({:g} points)", lr.lab->id, kind, id, points));
    };
    for (const auto& r : lr.tests) {
      if (r.status == Status::not_counted) continue;  // graded by the other backend; 0 points here
      listed.insert(r.id);
      if (r.status == Status::needs_gpu || r.status == Status::unavailable) {
        later(r.kind, r.id, r.max_score, r.output);
        continue;
      }
      score += r.score;
      tests.push_back({{"name", fmt::format("lab{} {}: {}", r.lab, r.kind, r.id)},
                       {"score", r.score},
                       {"max_score", r.max_score},
                       {"status", r.status == Status::passed && r.score >= r.max_score ? "passed" : "failed"},
                       {"output", results_output(r)},
                       {"tags", {"lab" + r.lab, r.kind, r.backend}},
                       {"visibility", "visible"}});
    }
    // The run left the GPU binary out (no GPU here): its perf tests are still the student's to earn.
    for (const auto& b : lr.lab->variant("main").binaries) {
      for (const auto& t : b.tests()) {
        if (t.kind == "perf" && t.points > 0 && listed.insert(t.id()).second) later(t.kind, t.id(), t.points, "");
      }
    }
    if (owed > 0) owed_by_lab.push_back(fmt::format("lab {}: {:g}", lr.lab->id, owed));
    owed_total += owed;
  }
  std::string output;
  if (owed_total > 0) {
    output = fmt::format("This score counts the points gradable without a GPU (analytic answers, correctness on the "
                         "CPU backend). The {:g} performance points ({}) are graded later on the course's GPU "
                         "cluster (Gradescope's machines have no GPU) and are not in this score:\n{}\n\n",
                         owed_total, fmt::join(owed_by_lab, ", "), fmt::join(owed_tests, "\n"));
  }
  output += header;
  const nlohmann::json j = {{"score", score},
                            {"output", output},
                            {"visibility", "visible"},
                            {"stdout_visibility", "hidden"},  // the grader's log names the image's paths
                            {"tests", tests}};
  return j.dump(2);
}

}  // namespace rooflab::grader
