#include "grade_args.hpp"

#include <fmt/format.h>

namespace rooflab::grader {

namespace {

void add(std::vector<std::string>& argv, const char* option, const std::optional<std::filesystem::path>& p) {
  if (p) argv.insert(argv.end(), {option, p->string()});
}

void add(std::vector<std::string>& argv, const char* option, const std::optional<std::string>& s) {
  if (s) argv.insert(argv.end(), {option, *s});
}

void add(std::vector<std::string>& argv, const char* flag, bool on) {
  if (on) argv.emplace_back(flag);
}

void add_kinds(std::vector<std::string>& argv, const std::vector<std::string>& kinds) {
  for (const auto& k : kinds) argv.insert(argv.end(), {"--kind", k});
}

// A double as the parser reads it back exactly (fmt's shortest round-trip form: 300, 0.5, 1e-05).
std::string decimal(double x) { return fmt::format("{}", x); }

}  // namespace

std::vector<std::string> to_argv(const GradeArgs& a) {
  std::vector<std::string> argv = {"grade"};
  argv.insert(argv.end(), a.labs.begin(), a.labs.end());
  add(argv, "--solutions", a.solutions);
  add(argv, "--submission", a.submission);
  add(argv, "--build-dir", a.build_dir);
  add(argv, "--json", a.json);
  add(argv, "--report-dir", a.report_dir);
  add(argv, "--gradescope", a.gradescope);
  add_kinds(argv, a.kinds);
  if (!a.test.empty()) argv.insert(argv.end(), {"--test", a.test});
  add(argv, "--no-color", a.no_color);
  if (a.timeout_s != GradeArgs{}.timeout_s) argv.insert(argv.end(), {"--timeout", decimal(a.timeout_s)});
  if (a.verify) argv.emplace_back(*a.verify ? "--verify" : "--no-verify");
  add(argv, "--seed", a.seed);
  add(argv, "--hidden-tests", a.hidden_tests);
  add(argv, "--reference-values", a.reference_values);
  add(argv, "-v", a.verbose);
  add(argv, "--watch", a.watch);
  add(argv, "--all-kinds", a.all_kinds);
  add(argv, "--no-coverage", !a.coverage);
  add(argv, "--no-dry-run", !a.dry_run);
  add(argv, "--no-sandbox", a.no_sandbox);
  return argv;
}

std::vector<std::string> to_argv(const ClassArgs& a) {
  std::vector<std::string> argv = {"grade-class"};
  if (!a.submissions.empty()) argv.push_back(a.submissions.string());
  argv.insert(argv.end(), a.labs.begin(), a.labs.end());
  argv.insert(argv.end(), {"--out", a.out.string()});
  if (a.task) argv.insert(argv.end(), {"--task", std::to_string(*a.task)});
  if (a.chunk != 1 || a.task) argv.insert(argv.end(), {"--chunk", std::to_string(a.chunk)});
  add(argv, "--build-dir", a.build_dir);
  if (a.timeout_s != ClassArgs{}.timeout_s) argv.insert(argv.end(), {"--timeout", decimal(a.timeout_s)});
  add(argv, "--seed", a.seed);
  add_kinds(argv, a.kinds);
  add(argv, "--no-verify", !a.verify);
  add(argv, "--coverage", a.coverage);
  add(argv, "--dry-run", a.dry_run);
  add(argv, "--hidden-tests", a.hidden_tests);
  add(argv, "--force", a.force);
  add(argv, "--collect", a.collect_only);
  add(argv, "--require-gpu", a.require_gpu);
  return argv;
}

std::string shell_line(const std::vector<std::string>& argv, const std::set<std::string>& expansions) {
  std::string line;
  for (const auto& w : argv) {
    if (!line.empty()) line += ' ';
    if (expansions.count(w)) {
      line += '"' + w + '"';
      continue;
    }
    const bool plain = !w.empty() && w.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                          "0123456789-_./:=,+@%") == std::string::npos;
    if (plain) {
      line += w;
      continue;
    }
    line += '\'';
    for (const char c : w) line += c == '\'' ? std::string("'\\''") : std::string(1, c);
    line += '\'';
  }
  return line;
}

}  // namespace rooflab::grader
