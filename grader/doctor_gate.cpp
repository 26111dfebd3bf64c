// The doctor's verdict for grade (doctor_gate.hpp).
#include "doctor_gate.hpp"

#include "util.hpp"

#if defined(ROOFLAB_HAVE_CUDA)
#include <rooflab/testing/calibration.hpp>
#endif

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>

namespace rooflab::grader {

namespace fs = std::filesystem;
using namespace doctor;

Examination examine(Tools& tools, double seconds) {
  Examination e;
  e.facts = gather(tools);
  for (auto&& group : {toolchain_checks(e.facts), sandbox_checks(e.facts, tools), state_checks(e.facts)}) {
    e.findings.insert(e.findings.end(), group.begin(), group.end());
  }
  e.health = health_check(e.facts, tools, seconds);
  e.findings.push_back(e.health.finding);
  if (auto jit = home_jit_cache_check(e.health)) e.findings.push_back(*jit);
  return e;
}

fs::path gate_cache_path(const Facts& f) {
#if defined(ROOFLAB_HAVE_CUDA)
  const fs::path dir = rooflab::cache_dir();
#else
  const fs::path dir = fs::temp_directory_path() / "rooflab";
#endif
  const auto clock = number(f.field("clocks.max.sm"));
  return dir / fmt::format("doctor-{}-driver{}-{:.0f}MHz.json", f.field("uuid").empty() ? "unknown" : f.field("uuid"),
                           f.field("driver_version"), clock.value_or(0));
}

PerfGate gate_of(const Examination& e) {
  PerfGate g;
  g.fit = e.health.fit;
  const Finding& h = e.health.finding;
  if (g.fit) {
    g.line = fmt::format("GPU health (rooflab doctor, {}): {}.", utc_now(), h.message);
  } else {
    g.line = fmt::format("NO PERF POINTS on this GPU (rooflab doctor, {}): {}. Fix: {}. The perf tests still ran and "
                         "show their figures.", utc_now(), h.message, h.fix);
  }
  std::vector<std::string> warned;
  for (const auto& f : e.findings) {
    if (f.level == Level::warning || f.level == Level::error) warned.push_back(f.check);
  }
  if (!warned.empty()) g.line += fmt::format(" Also: {} (./rooflab doctor says more).", fmt::join(warned, ", "));
  return g;
}

void save_gate(const fs::path& path, const PerfGate& g) {
  write_text(path, nlohmann::json{{"fit", g.fit}, {"line", g.line}}.dump(2) + "\n");
}

namespace {

std::optional<PerfGate> cached_gate(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  try {
    const auto j = nlohmann::json::parse(in);
    return PerfGate{j.at("fit").get<bool>(), j.at("line").get<std::string>()};
  } catch (const std::exception&) {
    return std::nullopt;  // measured again
  }
}

}  // namespace

PerfGate perf_gate(double seconds) {
  const auto tools = make_tools();
  const Facts facts = gather(*tools);
  if (!facts.has_gpu()) return {true, "GPU health not checked: nvidia-smi reports no GPU (./rooflab doctor says why)."};
  const fs::path cache = gate_cache_path(facts);
  if (auto cached = cached_gate(cache)) return *cached;
  fmt::print("rooflab: checking this GPU's health before grading its perf tests (once per machine; ./rooflab doctor "
             "measures again) ...\n");
  std::fflush(stdout);
  Examination e;
  e.facts = facts;
  const auto state = state_checks(facts);
  e.findings.assign(state.begin(), state.end());
  e.health = health_check(facts, *tools, seconds);
  e.findings.push_back(e.health.finding);
  const PerfGate g = gate_of(e);
  if (e.health.measured) save_gate(cache, g);
  return g;
}

void withhold_perf_points(std::vector<TestResult>& tests, const PerfGate& gate) {
  if (gate.fit) return;
  for (auto& t : tests) {
    if (t.kind != "perf" || t.status == Status::needs_gpu || t.status == Status::unavailable) continue;
    t.output = fmt::format("Perf points are not awarded on this GPU: it failed rooflab doctor's health measurement. {}\n"
                           "What this test measured (not graded): {}", gate.line, t.output);
    t.score = 0;
    t.status = Status::needs_gpu;  // owed, as on a machine without a GPU: the student's kernel is not blamed
  }
}

void apply_perf_gate(LabResults& lab, bool gpu_present, const std::function<PerfGate()>& verdict) {
  if (!gpu_present) return;
  const bool perf_ran = std::any_of(lab.tests.begin(), lab.tests.end(), [](const TestResult& t) {
    return t.kind == "perf" && t.status != Status::needs_gpu && t.status != Status::unavailable;
  });
  if (!perf_ran) return;
  const PerfGate gate = verdict();
  withhold_perf_points(lab.tests, gate);
  if (!gate.fit) lab.note += (lab.note.empty() ? "" : "; ") + std::string("perf points withheld: ") + gate.line;
}

void apply_perf_gate(LabResults& lab, bool gpu_present) {
  // Asked once per process: a grade of eight labs measures once (and the cache spares the next grade).
  apply_perf_gate(lab, gpu_present, [] {
    static const PerfGate gate = perf_gate();
    return gate;
  });
}

}  // namespace rooflab::grader
