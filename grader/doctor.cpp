// `./rooflab doctor` (doctor.hpp): runs the checks, prints one line each, writes the Markdown report, and
// keeps the health verdict that grade's perf points depend on.
#include "doctor.hpp"

#include "doctor_gate.hpp"
#include "doctor_tools.hpp"
#include "process.hpp"
#include "util.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <rooflab/specs.hpp>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>

namespace rooflab::grader {

namespace fs = std::filesystem;
using namespace doctor;

namespace {

int exit_code(const Examination& e) {
  const auto any = [&](Level l) {
    return std::any_of(e.findings.begin(), e.findings.end(), [&](const Finding& f) { return f.level == l; });
  };
  if (any(Level::error)) return kExitFailed;
  return e.facts.has_gpu() ? kExitOk : kExitNoGpu;
}

// One line a check: its level, its name, what it found and, where there is one, the fix.
std::string terminal_line(const Finding& f) {
  return fmt::format("  {:<8} {:<16} {}{}", to_string(f.level), f.check, f.message, f.fix.empty() ? "" : ". Fix: " + f.fix);
}

std::string cell(std::string text) {
  for (std::size_t at = 0; (at = text.find('|', at)) != std::string::npos; at += 2) text.replace(at, 1, "\\|");
  return text;
}

std::string markdown(const Examination& e, int rc) {
  std::string md = fmt::format("# rooflab doctor\n\n{}{}. Exit code {} ({}).\n\n", utc_now(),
                               e.facts.has_gpu() ? ", GPU " + e.facts.field("name") : ", no GPU found", rc,
                               rc == kExitOk ? "fit to grade" : rc == kExitFailed ? "an error to fix first" : "no GPU here");
  if (!e.facts.fixtures.empty()) md += fmt::format("Canned tool outputs from `{}` (a test, not this machine).\n\n", e.facts.fixtures);
  md += "| check | status | finding | fix |\n|---|---|---|---|\n";
  for (const auto& f : e.findings) {
    md += fmt::format("| {} | {} | {} | {} |\n", f.check, to_string(f.level), cell(f.message), cell(f.fix));
  }
  md += fmt::format("\nHealth: perf points are withheld when copy bandwidth is under {:.0f}% of the datasheet's, or FP32 "
                    "FMA under {:.0f}% (docs/doctor.md).\n\n## What was read\n\n", 100 * kHealthyCopyFraction,
                    100 * kHealthyFmaFraction);
  for (const auto& s : sources()) md += fmt::format("- `{}`: {}\n", s.name, s.what);
  if (e.facts.has_gpu()) {
    md += "\n## The GPU as nvidia-smi reports it\n\n| field | value |\n|---|---|\n";
    for (const auto& [k, v] : e.facts.gpu) md += fmt::format("| {} | {} |\n", k, cell(v));
  }
  return md;
}

// ---- --record: the block docs/measurements.md asks for ----

// A perf test's figure in its output: "87.3% of the ceiling copy_bandwidth" (grading.cpp's wording), or the
// first line when it has none.
std::string figure_of(const std::string& output) {
  std::smatch m;
  if (std::regex_search(output, m, std::regex(R"(([\d.]+)% of the ceiling (\w+))"))) return m[1].str() + "% of " + m[2].str();
  return output.substr(0, output.find('\n'));
}

// The test `id` (Suite.Name) in results.json, whose names read "lab01 perf: Lab01Perf.Copy".
const nlohmann::json* test_named(const nlohmann::json& results, const std::string& id) {
  const std::string suffix = ": " + id;
  const auto tests = results.find("tests");  // by reference: value() would return a copy
  if (tests == results.end() || !tests->is_array()) return nullptr;
  for (const auto& t : *tests) {
    const std::string name = t.value("name", "");
    if (name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) return &t;
  }
  return nullptr;
}

// The Log's Lab 01 columns: each STREAM kernel's share of the copy ceiling, and the stride ratio.
std::pair<std::string, std::string> lab01_columns(const nlohmann::json& results) {
  std::vector<std::string> shares;
  for (const char* name : {"Lab01Perf.Copy", "Lab01Perf.Scale", "Lab01Perf.Add", "Lab01Perf.Triad", "Lab01Perf.TriadVec4"}) {
    const nlohmann::json* t = test_named(results, name);
    std::smatch m;
    const std::string out = t != nullptr ? t->value("output", "") : "";
    shares.push_back(std::regex_search(out, m, std::regex(R"(([\d.]+)% of the ceiling)")) ? m[1].str() : "?");
  }
  const nlohmann::json* strided = test_named(results, "Lab01Perf.StridedCollapse");
  const std::string out = strided != nullptr ? strided->value("output", "") : "";
  std::smatch m;
  return {fmt::format("{}", fmt::join(shares, " / ")),
          std::regex_search(out, m, std::regex(R"(ratio ([\d.]+))")) ? m[1].str() : "?"};
}

// Every perf test of the reference solutions: its points and the share of its ceiling or baseline it reached.
std::string perf_lines(const nlohmann::json& results) {
  std::string out;
  for (const auto& t : results.value("tests", nlohmann::json::array())) {
    const auto tags = t.value("tags", nlohmann::json::array());
    if (std::find(tags.begin(), tags.end(), "perf") == tags.end()) continue;
    out += fmt::format("- `{}` {:.1f}/{:.1f}: {}\n", t.value("name", "?"), t.value("score", 0.0),
                       t.value("max_score", 0.0), figure_of(t.value("output", "")));
  }
  return out.empty() ? "- (no perf test in the results)\n" : out;
}

// The Log's row: the ceilings from calibrate's cache (ceilings.json), the datasheet from data/gpus.json.
std::string log_row(const Facts& f, const nlohmann::json& c, const nlohmann::json& results) {
  const auto num = [&](const char* key, double scale, const char* format) {
    return c.contains(key) ? fmt::format(fmt::runtime(format), c[key].get<double>() / scale) : std::string("?");
  };
  const GpuSpec* spec = find_gpu_by_cuda_name(f.field("name"));
  const std::string copy_pct = spec != nullptr && c.contains("copy_gbps")
                                   ? fmt::format("{:.0f}%", 100 * c["copy_gbps"].get<double>() / spec->bandwidth_gbps)
                                   : "?";
  const auto [lab01, stride] = lab01_columns(results);
  const auto max_clock = number(f.field("clocks.max.sm"));
  return fmt::format("| {} | {} | {} / {} | {} / {} | {} | {} ({}) | {} | {} | {} / {} | {} | {} | rooflab doctor --record |\n",
                     utc_now().substr(0, 10), f.field("name"), f.field("driver_version"),
                     f.driver_cuda ? f.driver_cuda->str() : "?", max_clock ? fmt::format("{:.0f}", *max_clock) : "?",
                     num("sm_clock_during_fma_mhz", 1, "{:.0f}"), f.field("ecc.mode.current"), num("copy_gbps", 1, "{:.0f}"),
                     copy_pct, num("fp32_fma_flops", 1e12, "{:.1f}"), num("sgemm_flops", 1e12, "{:.1f}"),
                     num("fp16_tensor_flops", 1e12, "{:.0f}"), num("bf16_tensor_flops", 1e12, "{:.0f}"), lab01, stride);
}

std::string record_block(const Examination& e, const std::string& calibrate, const nlohmann::json& ceilings,
                         const nlohmann::json& results) {
  const Facts& f = e.facts;
  std::string md = "Row for the Log table:\n\n" + log_row(f, ceilings, results);
  md += fmt::format("\n### {} {}\n\nHealth (rooflab doctor): {}\n\nThe reference solutions' perf tests (points, "
                    "and the share of the ceiling or baseline each reached):\n\n{}\n",
                    utc_now().substr(0, 10), f.field("name"), e.health.finding.message, perf_lines(results));
  md += "<details><summary>rooflab calibrate --remeasure</summary>\n\n```\n" + calibrate + "\n```\n</details>\n";
  return md;
}

int record(const Examination& e, Tools& tools, const DoctorArgs& a) {
  if (!e.facts.has_gpu()) {
    std::cerr << "rooflab doctor --record: needs a GPU, and none is here.\n";
    return kExitNoGpu;
  }
  fmt::print("\nrooflab doctor --record: calibrating, then grading the reference solutions (plots in {}) ...\n",
             a.report_dir.string());
  const ToolOutput calibrate = tools.get("calibrate");
  const ToolOutput graded = tools.get("grade-solutions", {a.report_dir.string()});
  nlohmann::json results;
  try {
    results = nlohmann::json::parse(graded.text);
  } catch (const std::exception&) {
    std::cerr << "rooflab doctor --record: the grade of the reference solutions wrote no results: "
              << tail_lines(graded.text, 10) << "\n";
    return kExitHarness;
  }
  nlohmann::json ceilings = nlohmann::json::object();
  if (const ToolOutput c = tools.get("ceilings", {e.facts.field("uuid")}); c.found) {
    ceilings = nlohmann::json::parse(c.text, nullptr, false);
    if (ceilings.is_discarded()) ceilings = nlohmann::json::object();
  }
  const std::string block = record_block(e, calibrate.text, ceilings, results);
  const fs::path out = a.report_dir / "measurements-block.md";
  write_text(out, block);
  fmt::print("\n{}\nrooflab: the block above is in {}: paste it into docs/measurements.md (the table row under the "
             "Log's header, the rest below it).\n", block, out.string());
  return kExitOk;
}

}  // namespace

int cmd_doctor(const DoctorArgs& a) {
  const auto tools = make_tools();
  if (a.gate) {
    const PerfGate g = perf_gate();
    fmt::print("{}\n{}\n", g.fit ? "perf points: awarded" : "perf points: WITHHELD", g.line);
    return g.fit ? kExitOk : kExitFailed;
  }
  fmt::print("rooflab doctor: checking this machine (on a GPU, the health measurement takes about {:g} s) ...\n", a.seconds);
  if (!tools->fixtures().empty()) fmt::print("rooflab doctor: canned answers from {} (ROOFLAB_DOCTOR_FIXTURES)\n", tools->fixtures());
  std::fflush(stdout);
  const Examination e = examine(*tools, a.seconds);
  for (const auto& f : e.findings) fmt::print("{}\n", terminal_line(f));
  const int rc = exit_code(e);
  const fs::path report = a.report.value_or(a.report_dir / "doctor.md");
  write_text(report, markdown(e, rc));
  if (e.health.measured) save_gate(gate_cache_path(e.facts), gate_of(e));  // grade uses this verdict
  fmt::print("\nrooflab doctor: {}. Report: {}\n",
             rc == kExitOk ? "nothing stands in the way of grading here" :
             rc == kExitFailed ? "fix the errors above first" : "no GPU here: analytic and CPU-backend grading only",
             report.string());
  if (a.record) {
    const int rrc = record(e, *tools, a);
    if (rrc != kExitOk) return rrc;
  }
  return rc;
}

}  // namespace rooflab::grader
