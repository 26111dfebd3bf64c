// What grade takes from the doctor: whether perf points may be awarded on this GPU. The health measurement
// (doctor_checks.hpp) runs once per machine and its verdict is cached beside the calibration, under the same
// key (GPU UUID, driver, maximum SM clock); `./rooflab doctor` measures again and replaces it.
#pragma once

#include "doctor_checks.hpp"
#include "report.hpp"
#include "runner.hpp"

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace rooflab::grader {

// Everything the doctor found on one run.
struct Examination {
  doctor::Facts facts;
  std::vector<doctor::Finding> findings;
  doctor::Health health;
};
// All the checks, the health measurement last (`seconds` long).
Examination examine(doctor::Tools& tools, double seconds);

// `fit` false: no perf points. `line` is for the grade's header: what was measured and, when unfit, why no
// perf points are awarded and what to do.
struct PerfGate {
  bool fit = true;
  std::string line;
};
PerfGate gate_of(const Examination& e);
// Where the verdict for this GPU is kept (cache_dir() of the calibration).
std::filesystem::path gate_cache_path(const doctor::Facts& facts);
void save_gate(const std::filesystem::path& path, const PerfGate& gate);

// The verdict for the GPU here: cached, or the GPU-state checks and the health measurement run now (about
// 30 s) and cached when a GPU's figures were measured. Every outside fact through doctor::make_tools().
// How long grade's health measurement runs: shorter than the doctor's own, as it holds up a grade once.
inline constexpr double kGateSeconds = 10;
PerfGate perf_gate(double seconds = kGateSeconds);

// Unfit: every perf test keeps its figures in its output but earns nothing; its points stay owed (status
// "needs a GPU", as on a machine without one), with the reason first in its output.
void withhold_perf_points(std::vector<TestResult>& tests, const PerfGate& gate);

// grade's hook (pipeline.cpp, grade_lab, after the lab's tests ran): on a GPU, when a perf test of `lab` ran,
// the verdict (perf_gate(), asked once per process) withholds its perf points if the GPU is unfit, and the
// lab's note says why. Nothing is measured for a lab without perf tests or on a machine without a GPU.
void apply_perf_gate(LabResults& lab, bool gpu_present);
// The same with the verdict from `verdict` (tests), asked only when a perf test ran.
void apply_perf_gate(LabResults& lab, bool gpu_present, const std::function<PerfGate()>& verdict);

}  // namespace rooflab::grader
