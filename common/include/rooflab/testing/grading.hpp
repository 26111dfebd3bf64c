// Graders are GoogleTest tests that declare their points and kind:
//
//   ROOFLAB_TEST(Lab01Analytic, BytesMoved) { ... }
//   ROOFLAB_TEST(Lab01Kernels, TriadSizes) { ... }
//   ROOFLAB_TEST(Lab01Perf, Triad) { ROOFLAB_REQUIRE_GPU(); ... award(ROOFLAB_LAB_ID, "triad", bytes_per_s); }
//
// Each test's kind and points are in the lab's rubric.json (rooflab/detail/rubric.hpp), read by the grader without
// building (so a lab whose student files fail to compile still shows every test it lost); the outcome
// reaches the grader through the report channel (rooflab/detail/report.hpp). A perf test earns a fraction of its
// points through award(); any other test earns all or nothing.
#pragma once

#include <rooflab/testing/ceiling.hpp>
#include <rooflab/testing/compare.hpp>
#include <rooflab/testing/plot.hpp>
#include <rooflab/detail/report.hpp>

#include <gtest/gtest.h>

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace rooflab {
struct Ceilings;
struct Threshold;
}

namespace rooflab::grading {

// The identity of the running test binary: its lab's rubric and its kind (analytic, emu, gpu, static,
// race). Every ROOFLAB_TEST records it; main() then checks that the binary holds exactly the rubric's tests
// of its kind (rooflab/detail/rubric.hpp) and refuses to run otherwise.
bool identify_binary(const char* rubric_path, const char* binary_kind);
const char* binary_rubric();  // "" when no ROOFLAB_TEST was registered
const char* binary_kind();
// A dry-run binary (the perf tests on the CPU backend, docs/cpu-mode.md "Dry runs"): its timings decide
// nothing, every line it notes says "dry run", and it earns no points.
bool dry_run();

// Another entry point a test binary offers (e.g. the static binaries' --rooflab-inspect): main() hands
// argc/argv to `fn` when `flag` is among the arguments.
void set_extra_main(const char* flag, int (*fn)(int, char**));
int run_extra_main(int argc, char** argv, bool* handled);

// Partial credit in [0, 1] with the reason, recorded into the test's JSON report for the grader.
void award(double fraction, const std::string& detail);
// A line of explanation shown with the test's result (measured figures, hints). On a dry run every line
// starts with "[dry run, CPU timings] ".
void note(const std::string& detail);
// Writes one of the lab's plots into the report folder (`name`.dat, .gp and, with gnuplot, .png), notes where
// it is (or why there is no PNG), and fails the test if a file it reports is missing. Plots are named after
// their lab, "labNN-what" (lab06-kv-cache-size): a name without this binary's lab fails the test too.
PlotFiles save_plot(const Plot& plot, std::string_view name);

// A verdict on measured speed (a ratio of two timings, a point under the roofline):
//   EXPECT_TRUE(speed_verdict(bw32 / bw1 <= limit, "stride-32 / stride-1 bandwidth <= limit")) << ...;
// On a GPU it is `ok`. On a dry run CPU timings decide nothing: it succeeds, noting a verdict that would fail.
::testing::AssertionResult speed_verdict(bool ok, std::string_view what);

// ---- perf scores: ceiling -> threshold -> score, in one call ----

// Grades a perf result with the lab's rule for `quantity` (labs/NN-name/thresholds.json, a ceiling_fraction
// rule) against the ceiling that rule names, read from this GPU's calibration (rooflab::ceilings()): full points at
// full_at x the ceiling, none at or below zero_at, linear between (the rule's numbers for this GPU's
// architecture where it has some: "by_architecture"). `measured_si` is in the ceiling's SI unit
// (bytes/s or FLOP/s). A result more than implausible_above() x the ceiling fails the test as a timing
// error or a cheat. On a dry run the arithmetic runs the same (the score must be in [0, 1]) but no timing
// can fail the test. The ceiling used (name, value, unit, where measured) goes into results.json. The
// running test must list `quantity` in its rubric.json entry's "thresholds". A rule that declares a
// baseline the test times itself fails the test: use the overload below.
void award(std::string_view lab, std::string_view quantity, double measured_si);
// The same against the baseline the rule declares ("baseline": {name, unit, caps, what}), timed by the test
// in this run at the same shape, in the baseline's unit: a rule naming a calibrated ceiling fails the test,
// so a rung cannot be graded against the wrong reference by mistake. A baseline with "caps": false is one
// the result is meant to beat: no implausible-above check (its test checks the result against a roof).
void award(std::string_view lab, std::string_view quantity, double measured_si, double ceiling_measured_here_si);
// A ratio's baseline that the student's own code runs (the naive attention path, batch 1, GQA 1), capped: a
// launcher that slows it on purpose (a spin on the clock, work done twice, only at that shape) would make the
// ratio look better. The rule's "student_baseline" names the share of its roof below which the baseline is
// taken as slowed: the time returned is the measured one, or `roofline_s` / roof_fraction if that is shorter,
// noted with both figures. A passing ratio then also bounds the graded kernel against its own roof. The rule
// must declare "student_baseline" (rooflab::DataError otherwise: a test cannot forget the cap its rule asks for).
double capped_baseline_s(std::string_view lab, std::string_view quantity, double measured_s, double roofline_s);
// What capped_baseline_s() decides, without noting it (unit-tested on its own).
struct BaselineCap {
  double used_s = 0;  // min(measured, cap)
  double cap_s = 0;   // roofline_s / roof_fraction
  bool capped = false;
};
BaselineCap cap_baseline(const Threshold& rule, double measured_s, double roofline_s);
// A calibrated ceiling a test judges by without award() (the intensity sweep's roofline), in SI units,
// recorded into results.json like award()'s.
double ceiling_in_force(Ceiling c);

// What award() decides, before it records anything (unit-tested on its own).
struct CeilingVerdict {
  CeilingInForce ceiling;
  double fraction = 0;       // measured / ceiling
  double score = 0;          // the sliding scale at that fraction, in [0, 1]
  bool implausible = false;  // more than implausible_above() x the ceiling
  std::string figures;       // "triad: 1234.5 GB/s = 91.0% of copy_bandwidth, 1356.0 GB/s"
};
// Resolves lab/quantity's threshold and the reference it names: a calibrated ceiling from `calibrated`
// (nullptr: none available), a declared baseline from `measured_here_si`, which must be given for it and only
// for it. `cc`: the grading GPU's compute capability (90 for sm_90), which picks the rule's numbers where it
// has some for that architecture ("by_architecture"; the figures then say which and why); 0 for its own.
// Throws rooflab::DataError (no such threshold, or not a ceiling_fraction rule) or std::invalid_argument
// (the value given and the threshold's ceiling disagree, or a ceiling that is not positive).
CeilingVerdict judge(std::string_view lab, std::string_view quantity, double measured_si, const Ceilings* calibrated,
                     std::optional<double> measured_here_si, int cc = 0);

namespace detail {
// award()'s body with the calibration and the GPU's architecture given: award(lab, quantity, measured_si) passes
// rooflab::ceilings(), the same-run overload nullptr, both this GPU's compute capability (src/award.cpp, linked
// only into binaries that have the timing harness).
void award_resolved(std::string_view lab, std::string_view quantity, double measured_si, const Ceilings* calibrated,
                    std::optional<double> measured_here_si, int cc);
// Records on the report channel that the running test judged by `c` (results.json's "rooflab_ceilings").
void record_ceiling(const CeilingInForce& c);

// Float-sized floating types (float, __half, __nv_bfloat16) travel as float on the report channel.
template <typename T>
inline constexpr bool kFloatSized = sizeof(T) <= 4 && !std::is_integral_v<T>;

// Records one comparison on the report channel (rooflab/detail/report.hpp): the test process records what it
// got, the grader's reference run what it wants; the grader compares the two outside the student's reach.
template <typename Got, typename Want>
void record_comparison(std::string_view label, std::span<const Got> got, std::span<const Want> want, Tolerance tol) {
  const report::RecordMode mode = report::record_mode();
  if (mode == report::RecordMode::off) return;
  const auto convert = [mode](auto g, auto w, auto& out) {
    if (mode == report::RecordMode::got) {
      out.reserve(g.size());
      for (const auto& x : g) out.push_back(static_cast<typename std::decay_t<decltype(out)>::value_type>(static_cast<double>(x)));
    } else {
      out.reserve(w.size());
      for (const auto& x : w) out.push_back(static_cast<typename std::decay_t<decltype(out)>::value_type>(static_cast<double>(x)));
    }
  };
  if constexpr (kFloatSized<Got> && kFloatSized<Want>) {
    std::vector<float> values;
    convert(got, want, values);
    report::record(label, values, values, tol.atol, tol.rtol);
  } else {
    std::vector<double> values;
    convert(got, want, values);
    report::record(label, values, values, tol.atol, tol.rtol);
  }
}
}  // namespace detail

// gtest adapter for rooflab::compare: EXPECT_TRUE(all_close<float>(got, want, kFp32Tolerance)). The
// comparison is also recorded for the grader's independent check.
template <typename Got, typename Want>
::testing::AssertionResult all_close(std::span<const Got> got, std::span<const Want> want, Tolerance tol) {
  detail::record_comparison("all_close", got, want, tol);
  const CompareResult r = compare(got, want, tol);
  if (r.ok) return ::testing::AssertionSuccess() << r.checked << " elements within tolerance";
  return ::testing::AssertionFailure() << r.report;
}

// One analytic answer: |got - want| <= atol + rtol |want| (NaN never passes), recorded like all_close.
// The failure message shows the student's value and, where one fits, what its ratio to the answer
// suggests (twice: reads and writes? 2^30/10^9: GiB for GB? 1000: a unit prefix?), never the answer:
//   ROOFLAB_EXPECT(near(lab01::achieved_gbps(bytes, s), bytes / s / 1e9, {0, 1e-9})) << "what was asked";
::testing::AssertionResult near(double got, double want, Tolerance tol);
// What the ratio of a wrong answer to the right one suggests (" (twice the answer: ...)"), without the answer.
std::string diagnose(double got, double want);
// An exact answer (counts, booleans, integers): near() with no tolerance.
::testing::AssertionResult same(double got, double want);
// A failure that starts with what ran and where ("gelu_kernel<float> at 31 x 7 (n = 217): 3 of 217 ..."):
// every correctness failure names its kernel and shape first. A success passes through unchanged.
inline ::testing::AssertionResult named(const std::string& who, const ::testing::AssertionResult& result) {
  if (result) return result;
  return ::testing::AssertionFailure() << who << ": " << result.message();
}

// A student's answer that the test checks by its properties (the first batch that reaches the ridge) rather
// than against a computed value: recorded as it is, so that the grader compares it with the reference
// solution's answer to the same question. Use only where the right answer is unique.
void record_answer(std::string_view label, double value, Tolerance tol = kExactTolerance);

}  // namespace rooflab::grading

#define ROOFLAB_CAT_IMPL_(a, b) a##b
#define ROOFLAB_CAT_(a, b) ROOFLAB_CAT_IMPL_(a, b)

// A graded test: kind and points come from the lab's rubric.json, not from here. The rubric's path and the
// binary's kind are defined once per lab and kind, in a file the build writes beside the lab's test sources
// (cmake/RooflabLab.cmake), not by macros: this header names none of the macros that differ between labs and
// kinds, so that one precompiled copy of it serves the test sources of every lab.
extern "C" const char rooflab_binary_rubric[];
extern "C" const char rooflab_binary_kind[];
#define ROOFLAB_TEST(suite, name)                                                                   \
  [[maybe_unused]] static const bool ROOFLAB_CAT_(rooflab_identified_, suite##_##name) =            \
      ::rooflab::grading::identify_binary(rooflab_binary_rubric, rooflab_binary_kind);              \
  TEST(suite, name)

// Checks an AssertionResult without printing the checked expression: EXPECT_TRUE(near(f(x), 2 * x * e))
// would show the student the reference formula. Use these for every comparison with a computed answer.
#define ROOFLAB_EXPECT(...)                                          \
  switch (0)                                                          \
  case 0:                                                             \
  default:                                                            \
    if (const ::testing::AssertionResult rooflab_result_ = (__VA_ARGS__)) { \
    } else                                                            \
      ADD_FAILURE() << rooflab_result_.message() << " "
#define ROOFLAB_ASSERT(...)                                          \
  switch (0)                                                          \
  case 0:                                                             \
  default:                                                            \
    if (const ::testing::AssertionResult rooflab_result_ = (__VA_ARGS__)) { \
    } else                                                            \
      return GTEST_MESSAGE_(rooflab_result_.message(), ::testing::TestPartResult::kFatalFailure) << " "

// Skips (never passes) a test that needs a GPU when none is present; the grader shows "needs a GPU".
// (Include <rooflab/testing/device.hpp> where it is used: the analytic binaries need no CUDA at all.)
#define ROOFLAB_REQUIRE_GPU()                                       \
  do {                                                              \
    std::string rooflab_why_;                                       \
    if (!::rooflab::device_available(&rooflab_why_)) {              \
      GTEST_SKIP() << "needs a GPU (" << rooflab_why_ << ")";       \
    }                                                               \
  } while (0)
