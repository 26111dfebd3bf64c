// Test-side half of the grading contract: the binary's identity, recorded checks and partial credit.
#include <rooflab/testing/calibration.hpp>
#include <rooflab/testing/grading.hpp>
#include <rooflab/detail/rubric.hpp>
#include <rooflab/specs.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <stdexcept>

// The seed audit (src/seed_audit_hooks.cpp, linked only into the audit binaries): told the answer every
// check expects, it files it under the answer function that returned last. Absent everywhere else.
extern "C" __attribute__((weak)) void rooflab_seed_audit_check(double want);

namespace rooflab::grading {

namespace {
void seed_audit(double want) {
  if (rooflab_seed_audit_check != nullptr) rooflab_seed_audit_check(want);
}

struct Identity {
  const char* rubric = "";
  const char* kind = "";
};
Identity& identity() {
  static Identity id;
  return id;
}
}  // namespace

bool identify_binary(const char* rubric_path, const char* kind) {
  identity() = {rubric_path, kind};
  return true;
}
const char* binary_rubric() { return identity().rubric; }
const char* binary_kind() { return identity().kind; }
bool dry_run() { return std::string_view(identity().kind) == "dryrun"; }

namespace {
struct ExtraMain {
  const char* flag = nullptr;
  int (*fn)(int, char**) = nullptr;
};
ExtraMain& extra_main() {
  static ExtraMain m;
  return m;
}
}  // namespace

void set_extra_main(const char* flag, int (*fn)(int, char**)) { extra_main() = {flag, fn}; }

int run_extra_main(int argc, char** argv, bool* handled) {
  *handled = false;
  const ExtraMain& m = extra_main();
  if (m.fn == nullptr) return 0;
  for (int i = 1; i < argc; ++i) {
    if (std::string_view(argv[i]) == m.flag) {
      *handled = true;
      return m.fn(argc, argv);
    }
  }
  return 0;
}

::testing::AssertionResult near(double got, double want, Tolerance tol) {
  const double g[1] = {got};
  const double w[1] = {want};
  seed_audit(want);
  detail::record_comparison("near", std::span<const double>(g), std::span<const double>(w), tol);
  if (std::abs(got - want) <= tol.atol + tol.rtol * std::abs(want)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "your answer " << fmt::format("{:.9g}", got) << " is wrong"
                                       << diagnose(got, want) << ";";
}

std::string diagnose(double got, double want) {
  if (std::isnan(got) || std::isinf(got)) return " (not a finite number: a division by zero, or 0 * infinity?)";
  if (want == 0) return got == 0 ? "" : " (the answer is 0)";
  if (got == 0) return " (it is 0: a missing term, or an integer division that truncated?)";
  const double ratio = got / want;
  struct Factor {
    double value;
    const char* hint;
  };
  static const Factor kFactors[] = {
      {-1.0, "the sign is wrong"},
      {2.0, "twice the answer: something counted twice (both reads and writes of the same array? two FLOPs "
            "where an FMA counts as two already?)"},
      {0.5, "half the answer: a factor of 2 missing (reads and writes? 2 FLOPs per FMA? both K and V?)"},
      {1073741824.0 / 1e9, "off by 2^30 / 10^9: binary units (GiB) where decimal (GB) are asked, or the reverse"},
      {1e9 / 1073741824.0, "off by 10^9 / 2^30: decimal units (GB) where binary (GiB) are asked, or the reverse"},
      {1048576.0 / 1e6, "off by 2^20 / 10^6: MiB for MB, or the reverse"},
      {1e6 / 1048576.0, "off by 10^6 / 2^20: MB for MiB, or the reverse"},
      {4.0, "4 times the answer: bytes per FP32 element counted where elements are asked, or the element size "
            "applied twice?"},
      {0.25, "a quarter of the answer: the element size (4 bytes) missing?"},
      {8.0, "8 times the answer: bits where bytes are asked?"},
      {0.125, "an eighth of the answer: bytes where bits are asked?"},
  };
  for (const auto& f : kFactors) {
    if (std::abs(ratio - f.value) <= 1e-6 * std::abs(f.value)) return std::string(" (") + f.hint + ")";
  }
  for (int k : {3, 6, 9, 12, -3, -6, -9, -12}) {
    if (std::abs(ratio - std::pow(10.0, k)) <= 1e-6 * std::pow(10.0, k)) {
      return fmt::format(" (off by a factor of 10^{}: a unit prefix: k, M, G or T?)", k);
    }
  }
  return " (not within the tolerance)";
}

::testing::AssertionResult same(double got, double want) { return near(got, want, kExactTolerance); }

void record_answer(std::string_view label, double value, Tolerance tol) {
  const double v[1] = {value};
  seed_audit(value);  // in the audit only the solution runs: its value is the answer
  detail::record_comparison(label, std::span<const double>(v), std::span<const double>(v), tol);
}

void award(double fraction, const std::string& detail) {
  fraction = std::clamp(fraction, 0.0, 1.0);
  ::testing::Test::RecordProperty("rooflab_fraction", fmt::format("{:.4f}", fraction));
  note(detail);
}

void note(const std::string& detail) {
  std::string text = detail;
  if (dry_run()) {
    // Every line, so that no figure of a dry run can be read, or pasted, as a GPU's.
    constexpr std::string_view kLabel = "[dry run, CPU timings] ";
    text.insert(0, kLabel);
    for (std::size_t at = text.find('\n'); at != std::string::npos && at + 1 < text.size(); at = text.find('\n', at + 1)) {
      text.insert(at + 1, kLabel);
    }
  }
  ::testing::Test::RecordProperty("rooflab_detail", text);
  std::printf("rooflab: %s\n", text.c_str());
}

PlotFiles save_plot(const Plot& plot, std::string_view name) {
  if (*binary_rubric() != '\0') {
    const std::string prefix = "lab" + rubric::load(binary_rubric()).lab + "-";
    EXPECT_TRUE(name.starts_with(prefix)) << "plot \"" << name << "\": a lab's plots are named " << prefix << "...";
  }
  const PlotFiles files = write_plot(plot, report_dir() / std::string(name));
  EXPECT_TRUE(std::filesystem::exists(files.data)) << files.data;
  if (!files.png.empty()) {
    EXPECT_TRUE(std::filesystem::exists(files.png)) << files.png;
  }
  // Named by file, not by path: a sandboxed test writes into a scratch directory that the grader copies into
  // the report directory and then deletes, and a Gradescope run keeps no report for the student at all.
  const std::string drawn = files.png.empty() ? files.data.filename().string() + " (" + files.message + ")"
                                              : files.png.filename().string();
  note("plot: " + drawn + " in the report directory (./rooflab-report unless --report-dir is given; "
       "Gradescope keeps no plots: a local ./rooflab grade draws them)");
  return files;
}

::testing::AssertionResult speed_verdict(bool ok, std::string_view what) {
  if (ok) return ::testing::AssertionSuccess();
  if (dry_run()) {
    note(fmt::format("speed verdict \"{}\" would fail on a GPU; CPU timings decide nothing", what));
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "speed verdict failed: " << what;
}

namespace {

// The reference a ceiling_fraction rule names, with its value: a baseline from the test's own measurement,
// a calibrated ceiling from `calibrated`. Each refuses the other's value, so a rung cannot be graded against
// the wrong reference by mistake.
CeilingInForce reference_in_force(const Threshold& t, const Ceilings* calibrated, std::optional<double> measured_here_si) {
  if (t.baseline) {
    if (!measured_here_si) {
      throw std::invalid_argument(fmt::format("threshold {}/{} grades against the baseline {} ({}), measured by the "
                                              "test in this run: pass its value to award()",
                                              t.lab, t.quantity, t.baseline->name, t.baseline->what));
    }
    return {t.baseline->name, *measured_here_si, t.baseline->unit, "in this test, this run"};
  }
  const Ceiling c = *t.ceiling;
  if (measured_here_si) {
    throw std::invalid_argument(fmt::format("threshold {}/{} grades against {}, which rooflab calibrate measures: "
                                            "a value measured in the test is not what the threshold names",
                                            t.lab, t.quantity, to_string(c)));
  }
  if (calibrated == nullptr) throw std::invalid_argument(fmt::format("no calibration for {}", to_string(c)));
  return {std::string(to_string(c)), calibrated->si(c), std::string(si_unit(c)), calibrated->where()};
}

}  // namespace

CeilingVerdict judge(std::string_view lab, std::string_view quantity, double measured_si, const Ceilings* calibrated,
                     std::optional<double> measured_here_si, int cc) {
  const Threshold& rule = threshold(lab, quantity);
  const Threshold t = rule.on_architecture(cc);
  if (t.kind != "ceiling_fraction" || !(t.ceiling || t.baseline)) {
    throw DataError(fmt::format("threshold {}/{} is a {} rule, not a fraction of a ceiling", lab, quantity, t.kind));
  }
  CeilingVerdict v;
  v.ceiling = reference_in_force(t, calibrated, measured_here_si);
  if (!(v.ceiling.value > 0) || !std::isfinite(v.ceiling.value)) {
    throw std::invalid_argument(fmt::format("{}: the ceiling {} is {} {}, not a positive measurement", quantity,
                                            v.ceiling.name, v.ceiling.value, v.ceiling.unit));
  }
  v.fraction = measured_si / v.ceiling.value;
  v.score = sliding_score(t, v.fraction);
  v.implausible = t.caps() && v.fraction > implausible_above();
  v.figures = fmt::format("{}: {} = {:.1f}% of the ceiling {}, {}", quantity, units::readable(measured_si, v.ceiling.unit),
                          100.0 * v.fraction, v.ceiling.name, units::readable(v.ceiling.value, v.ceiling.unit));
  if (const ArchRule* a = rule.architecture_rule(cc)) {
    v.figures += fmt::format(" (on sm_{}, the rule for {}: full at {:g}%, none at {:g}%; {})", cc, a->range(),
                             100 * a->full_at, 100 * a->zero_at, a->why);
  }
  return v;
}

namespace {

// The running test must declare the thresholds it grades by (rubric.json "thresholds"): what ties a perf
// test to its rule, checked against the lab's thresholds.json and kernel registry by a CPU test.
void check_declared(std::string_view quantity) {
  if (*binary_rubric() == '\0') return;  // outside a lab's binary (the project's own tests)
  static const rubric::Rubric r = rubric::load(binary_rubric());
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string id = info == nullptr ? "" : std::string(info->test_suite_name()) + "." + info->name();
  for (const auto& e : r.tests) {
    if (e.test != id) continue;
    if (std::find(e.thresholds.begin(), e.thresholds.end(), quantity) != e.thresholds.end()) return;
    throw std::logic_error(fmt::format("{} grades by the threshold \"{}\", which its entry in {} does not list under "
                                       "\"thresholds\"", id, quantity, binary_rubric()));
  }
  throw std::logic_error(fmt::format("{} calls award() but is not in {}", id, binary_rubric()));
}

}  // namespace

void detail::record_ceiling(const CeilingInForce& c) {
  // One property per ceiling: a test that judges by two (the sweep's roofline) records both.
  ::testing::Test::RecordProperty("rooflab_ceiling." + c.name, nlohmann::json(c).dump());
}

void detail::award_resolved(std::string_view lab, std::string_view quantity, double measured_si,
                            const Ceilings* calibrated, std::optional<double> measured_here_si, int cc) {
  ASSERT_TRUE(std::isfinite(measured_si) && measured_si >= 0) << quantity << ": measured " << measured_si;
  check_declared(quantity);
  const CeilingVerdict v = judge(lab, quantity, measured_si, calibrated, measured_here_si, cc);
  detail::record_ceiling(v.ceiling);
  if (dry_run()) {
    // The arithmetic a GPU run does, checked instead of believed: a score in [0, 1].
    ASSERT_TRUE(v.score >= 0.0 && v.score <= 1.0) << quantity << ": score " << v.score << " from " << v.figures;
    award(v.score, fmt::format("{} -> score {:.3f}{}", v.figures, v.score,
                               v.implausible ? " (above the ceiling: a GPU run would reject it)" : ""));
    return;
  }
  // The measure itself, as data (results.json's "rooflab_measures"): what a GPU run's results are read from to hold
  // the performance model against them, without parsing notes. A dry run (above) records none: its timings are the
  // CPU's.
  ::testing::Test::RecordProperty(
      "rooflab_measure." + std::string(quantity),
      nlohmann::json(Measure{std::string(quantity), measured_si, v.ceiling.unit, v.ceiling.name, v.ceiling.value,
                             v.fraction, cc})
          .dump());
  if (v.implausible) {
    award(0.0, v.figures);
    FAIL() << "rejected: " << v.figures << " is more than "
           << fmt::format("{:.0f}", 100.0 * (implausible_above() - 1))
           << "% above what this GPU measured; a kernel cannot beat the ceiling, so the timing or the work is "
              "wrong (skipped work, cached results, a patched timer)";
  }
  award(v.score, v.figures);
}

BaselineCap cap_baseline(const Threshold& rule, double measured_s, double roofline_s) {
  if (!rule.student_baseline) {
    throw DataError(fmt::format("threshold {}/{} declares no \"student_baseline\" (the share of its roof below which "
                                "the student's own baseline is taken as slowed)", rule.lab, rule.quantity));
  }
  if (!(measured_s > 0) || !std::isfinite(measured_s) || !(roofline_s > 0) || !std::isfinite(roofline_s)) {
    throw std::invalid_argument(fmt::format("{}: a baseline of {} s against a roofline time of {} s", rule.quantity,
                                            measured_s, roofline_s));
  }
  BaselineCap c;
  c.cap_s = roofline_s / rule.student_baseline->roof_fraction;
  c.capped = measured_s > c.cap_s;
  c.used_s = c.capped ? c.cap_s : measured_s;
  return c;
}

double capped_baseline_s(std::string_view lab, std::string_view quantity, double measured_s, double roofline_s) {
  const Threshold& t = threshold(lab, quantity);
  const BaselineCap c = cap_baseline(t, measured_s, roofline_s);
  if (c.capped) {
    note(fmt::format("{}: the baseline (your own code) took {:.3f} ms, more than {:.3f} ms, its roofline time over "
                     "{:.2f}; the ratio counts it at {:.3f} ms, so slowing it does not help the ratio",
                     quantity, measured_s * 1e3, c.cap_s * 1e3, t.student_baseline->roof_fraction, c.used_s * 1e3));
  }
  return c.used_s;
}


}  // namespace rooflab::grading
