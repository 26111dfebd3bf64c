#include "selftest.hpp"

#include "pipeline.hpp"
#include "symbols.hpp"

#include <rooflab/detail/rubric.hpp>
#include <rooflab/testing/ptx.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <regex>
#include <set>

namespace rooflab::grader {

namespace fs = std::filesystem;

namespace {

// Known-bad submissions are verified against the solutions variant of the same build, as a submission is
// against build/solutions.
void trust_the_solutions(const Lab& lab, RunOptions& options) {
  for (const auto& candidate : lab.variants) {
    if (candidate.expect != "full") continue;
    for (const auto& b : candidate.binaries) {
      if (b.unavailable.empty() && (b.kind == "analytic" || b.kind == "emu" || b.kind == "gpu")) {
        options.trusted[b.kind] = b.path;
      }
    }
  }
}

// The build stage of a selftest: the suite built the variant; what grade would refuse or fail to build is
// marked here, per binary target.
std::map<std::string, std::string> build_errors_of(const SelftestArgs& a, const Manifest& m, const Lab& lab,
                                                   const Variant& v, const nlohmann::json& expect) {
  std::map<std::string, std::string> build_errors;
  // The include policy a submission meets in grade (a case's files that include what a student file may
  // not, such as a solution, are refused: their binaries count as not built, with the reason).
  for (const auto& file : lab.student_files) {
    const fs::path path = v.student_dir / file;
    if (!fs::exists(path)) continue;
    if (const auto why = include_policy_violation(rooflab::ptx::read_file(path), lab.dir)) {
      for (const auto& b : v.binaries) {
        if (binary_uses(b, file)) build_errors[b.target] = fmt::format("{} was refused, so this was not built: {}", file, *why);
      }
    }
  }
  // The libraries the lab forbids (symbols.hpp), read from the objects the suite built.
  for (const auto& b : v.binaries) {
    if (b.unavailable.empty() && !build_errors.count(b.target) && fs::exists(b.path)) {
      if (std::string found = forbidden_symbols_in(m.build_dir, lab, b); !found.empty()) build_errors[b.target] = found;
    }
  }
  // A case that must not compile is built here, as the grader builds a submission.
  if (expect.value("build", "") == "fails") {
    for (const auto& b : v.binaries) {
      if (!b.unavailable.empty()) continue;
      const ProcessResult built = build_target(a.build_dir, b.target, false);
      if (!built.ok()) build_errors[b.target] = "the student files do not compile:\n" + compile_errors(built.output);
    }
  }
  return build_errors;
}

// The solutions must earn every point that can be graded without a GPU.
void full_marks_problems(const std::vector<TestResult>& results, std::vector<std::string>& problems) {
  const auto graded_here = [](const TestResult& r) {
    const auto* row = rooflab::rubric::find_kind(r.kind);
    return row != nullptr && !row->needs_gpu;
  };
  for (const auto& r : results) {
    if (graded_here(r) && r.status != Status::unavailable && !(r.status == Status::passed && r.score >= r.max_score)) {
      problems.push_back(fmt::format("{} should earn full marks: {} {:.1f}/{:.1f}\n{}", r.id, to_string(r.status),
                                     r.score, r.max_score, r.output));
    }
  }
}

// The stubs earn nothing, and fail cleanly saying "not implemented".
void stub_problems(const std::vector<TestResult>& results, std::vector<std::string>& problems) {
  for (const auto& r : results) {
    if (r.kind != "analytic" && r.kind != "emu") continue;
    if (r.score != 0) problems.push_back(fmt::format("stub test {} earned {:.1f} points", r.id, r.score));
    if (r.status == Status::crashed || r.status == Status::timed_out) {
      problems.push_back(fmt::format("stub test {} {} instead of failing cleanly", r.id, to_string(r.status)));
    } else if (r.status == Status::failed && r.output.find("not implemented") == std::string::npos) {
      problems.push_back(fmt::format("stub test {} fails without saying \"not implemented\":\n{}", r.id, r.output));
    }
  }
}

// Every test a known-bad case runs and is not about must keep its points (a grader that fails everything
// would pass a must_fail list alone).
void others_keep_points(const std::vector<TestResult>& results, const nlohmann::json& expect,
                        const std::set<std::string>& lose, std::vector<std::string>& problems) {
  if (!expect.value("others_pass", true)) return;
  for (const auto& r : results) {
    if (lose.count(r.id) || r.status == Status::not_counted || r.max_score == 0) continue;
    if (r.status == Status::needs_gpu || r.status == Status::unavailable) continue;
    if (!(r.status == Status::passed && r.score >= r.max_score)) {
      problems.push_back(fmt::format("{} should keep its points ({} is not about it) but {}: {}", r.id,
                                     expect.value("why", ""), to_string(r.status), r.output));
    }
  }
}

// A failure message must teach without handing out the answer: no expected value of an analytic test may
// appear in it (integers under a million are skipped: sizes and counts are shown as inputs).
void no_leaked_answers(const std::vector<TestResult>& results, const RunOptions& options,
                       std::vector<std::string>& problems) {
  const auto trusted = options.trusted.find("analytic");
  if (trusted == options.trusted.end()) return;
  for (const auto& r : results) {
    if (r.kind != "analytic" || r.status != Status::failed) continue;
    const DeclaredTest t{r.id.substr(0, r.id.find('.')), r.id.substr(r.id.find('.') + 1), r.kind, 0};
    if (const std::string leak = leaked_answer(r.output, expected_values(trusted->second, t, options)); !leak.empty()) {
      problems.push_back(fmt::format("{}: its failure message shows an expected value ({}); a student would copy "
                                     "the answer from it:\n{}", r.id, leak, r.output));
    }
  }
}

// Files a case tried to create outside its sandbox: none may exist (each is removed for the next run).
void nothing_created(const std::vector<fs::path>& must_not_create, std::vector<std::string>& problems) {
  for (const auto& f : must_not_create) {
    if (landlock_support().abi == 0) {  // no sandbox on this kernel: the grade header says so; nothing to prove
      fs::remove(f);
      continue;
    }
    if (fs::exists(f)) {
      problems.push_back(fmt::format("the submission created {} outside its sandbox", f.string()));
      fs::remove(f);
    }
  }
}

// Each test expect.json names must lose: a hint (no points) must fail, a graded test must lose points.
void named_tests_lost(const std::vector<TestResult>& results, const nlohmann::json& expect,
                      std::vector<std::string>& problems) {
  for (const auto& id : expect.at("must_fail")) {
    const std::string want = id.get<std::string>();
    bool found = false;
    for (const auto& r : results) {
      if (r.id != want || r.status == Status::not_counted) continue;
      found = true;
      const bool lost = r.max_score == 0 ? r.status != Status::passed : r.score < r.max_score;
      if (!lost) problems.push_back(fmt::format("{} should fail ({}) but passed", want, expect.value("why", "")));
    }
    if (!found) problems.push_back(fmt::format("expect.json names {}, which this variant does not run", want));
  }
}

// Each test expect.json names in "must_pass" (optional): it must run and pass, hints and dry runs (0 points)
// included, which others_keep_points does not look at. A correct but unusual submission (work on a stream of its
// own, joined back by events) proves with it that no check mistakes it for a cheat.
void named_tests_passed(const std::vector<TestResult>& results, const nlohmann::json& expect,
                        std::vector<std::string>& problems) {
  for (const auto& id : expect.value("must_pass", nlohmann::json::array())) {
    const std::string want = id.get<std::string>();
    const auto ran = [&](const TestResult& r) { return r.id == want && r.status != Status::not_counted; };
    const auto r = std::find_if(results.begin(), results.end(), ran);
    if (r == results.end()) {
      problems.push_back(fmt::format("expect.json names {} in must_pass, which this variant does not run", want));
    } else if (r->status != Status::passed) {
      problems.push_back(fmt::format("{} should pass ({}) but {}: {}", want, expect.value("why", ""),
                                     to_string(r->status), r->output));
    }
  }
}

// A case's "coverage_reports" (a regular expression): what the hint of lines no test ran must say of it.
void coverage_reported(const std::vector<TestResult>& results, const nlohmann::json& expect,
                       std::vector<std::string>& problems) {
  if (!expect.contains("coverage_reports")) return;
  const std::regex want(expect.at("coverage_reports").get<std::string>());
  for (const auto& r : results) {
    if (!r.id.ends_with("Coverage.EveryLineTested")) continue;
    if (!std::regex_search(r.output, want)) {
      problems.push_back(fmt::format("{} should report /{}/ but says: {}", r.id,
                                     expect.at("coverage_reports").get<std::string>(), r.output));
    }
    return;
  }
}

}  // namespace

int cmd_selftest(const SelftestArgs& a) {
  // ---- plan: the variant, its expectation, the options it runs with ----
  const Manifest m = load_manifest(a.build_dir);
  const Lab& lab = m.lab(a.lab);
  const Variant& v = lab.variant(a.variant);
  const bool known_bad = v.expect != "full" && v.expect != "zero";
  const nlohmann::json expect = known_bad ? nlohmann::json::parse(rooflab::ptx::read_file(v.expect)) : nlohmann::json::object();
  RunOptions options;
  options.timeout_s = expect.value("timeout", 300.0);  // a case that hangs on purpose says how long to wait
  if (known_bad) {
    // A known-bad case's named tests run under every thread order (its bug may show in one only); the tests
    // that must keep their points run in the first order. The full-marks variants run every test in every
    // order, so this loses no check of the solutions, and it saves two runs of most tests of every case.
    options.all_schedules = false;
    for (const auto& id : expect.at("must_fail")) options.all_schedules_for.insert(id.get<std::string>());
  }
  // Files a case tries to create outside its sandbox: none may exist before or after.
  std::vector<fs::path> must_not_create;
  for (const auto& f : expect.value("must_not_create", nlohmann::json::array())) {
    must_not_create.push_back(m.source_dir / f.get<std::string>());
    fs::remove(must_not_create.back());
  }
  options.gpu_present = detect_gpu().present;
  if (known_bad) trust_the_solutions(lab, options);  // ---- verify ----
  const auto build_errors = build_errors_of(a, m, lab, v, expect);  // ---- build ----
  // A binary the suite should have built and did not (the tree was not built, or only in part): a test the
  // case must fail would "fail" as not built, which proves nothing of the check the case is about.
  std::vector<std::string> unbuilt;
  if (known_bad && expect.value("build", "") != "fails") {
    for (const auto& b : v.binaries) {
      if (b.unavailable.empty() && !build_errors.count(b.target) && !fs::exists(b.path)) unbuilt.push_back(b.path.string());
    }
  }
  // ---- run: in the sandbox grade uses, so that the suite checks every kind of test binary still passes in it ----
  const ScratchRoot scratch;
  GradingTree tree{m.source_dir, m.build_dir, v.student_dir, {}, scratch.path()};
  // The dry runs' ceilings, measured once as grade measures them (nothing is built here: the tool is the tree's).
  if (std::any_of(v.binaries.begin(), v.binaries.end(), [](const Binary& b) { return b.kind == "dryrun"; })) {
    if (const std::string why = share_dryrun_ceilings(m.build_dir, false, options, tree); !why.empty()) {
      fmt::print("{}\n", why);
    }
  }
  const SandboxScope in_sandbox(test_sandbox(tree));
  auto results = run_variant(lab, v, options, build_errors);
  if (auto check = forbidden_symbols_check(m.build_dir, lab, v.binaries)) results.push_back(*check);
  if (auto hint = untested_kernels_check(lab, results)) results.push_back(*hint);
  // Which lines the tests ran: for a case that must lose that hint (the solutions' own coverage is CI's
  // labNN.emu.coverage), from the coverage binary the build made of it; "coverage_reports" in expect.json is
  // what the hint must say (the line).
  const auto& lose_ids = expect.value("must_fail", nlohmann::json::array());
  const bool lines_case = std::any_of(lose_ids.begin(), lose_ids.end(), [](const nlohmann::json& id) {
    return id.is_string() && id.get<std::string>().ends_with("Coverage.EveryLineTested");
  });
  for (const auto& b : v.binaries) {
    if (!lines_case || b.kind != "emu" || b.coverage_path.empty() || !fs::exists(b.coverage_path)) continue;
    if (auto hint = untested_lines_check(lab, b, options)) results.push_back(*hint);
  }
  // ---- collect: the table, every test's status and points as grade writes them (bench/compare-results) ----
  LabResults lr{&lab, v.student_dir.string(), results, "variant " + v.name};
  std::fputs(terminal_table(lr, false).c_str(), stdout);
  if (a.json) write_text(*a.json, gradescope_json({lr}, fmt::format("selftest lab {} {}", lab.id, v.name)) + "\n");

  std::vector<std::string> problems;
  for (const auto& path : unbuilt) {
    problems.push_back(fmt::format("{} was not built: build the tree first (a case's tests fail for the reason the "
                                   "case names, not for a binary that is missing)", path));
  }
  if (v.expect == "full") {
    full_marks_problems(results, problems);
  } else if (v.expect == "zero") {
    stub_problems(results, problems);
  } else {
    std::set<std::string> lose;
    for (const auto& id : expect.at("must_fail")) lose.insert(id.get<std::string>());
    others_keep_points(results, expect, lose, problems);
    no_leaked_answers(results, options, problems);
    nothing_created(must_not_create, problems);
    named_tests_lost(results, expect, problems);
    named_tests_passed(results, expect, problems);
    coverage_reported(results, expect, problems);
  }
  if (problems.empty()) {
    fmt::print("selftest lab {} {}: as expected ({})\n", lab.id, v.name, v.expect);
    return kExitOk;
  }
  for (const auto& p : problems) fmt::print("selftest problem: {}\n", p);
  return kExitFailed;
}

}  // namespace rooflab::grader
