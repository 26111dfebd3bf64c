// Test-side half of the grading contract: the binary's identity, recorded checks and partial credit.
#include <rooflab/grading.hpp>
#include <rooflab/specs.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace rooflab::grading {

namespace {
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

::testing::AssertionResult speed_verdict(bool ok, std::string_view what) {
  if (ok) return ::testing::AssertionSuccess();
  if (dry_run()) {
    note(fmt::format("speed verdict \"{}\" would fail on a GPU; CPU timings decide nothing", what));
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "speed verdict failed: " << what;
}

void award_against_ceiling(std::string_view lab, std::string_view quantity, double measured, double ceiling,
                           std::string_view unit) {
  const Threshold& t = threshold(lab, quantity);
  ASSERT_GT(ceiling, 0.0) << "no measured ceiling for " << quantity;
  ASSERT_TRUE(std::isfinite(measured) && measured >= 0) << quantity << ": measured " << measured << " " << unit;
  const double fraction = measured / ceiling;
  const std::string figures =
      fmt::format("{}: {:.1f} {} = {:.1f}% of the measured ceiling {:.1f} {}", quantity, measured, unit,
                  100.0 * fraction, ceiling, unit);
  if (dry_run()) {
    // The arithmetic a GPU run does, checked instead of believed: a score in [0, 1].
    const double score = sliding_score(t, fraction);
    ASSERT_TRUE(score >= 0.0 && score <= 1.0) << quantity << ": score " << score << " from " << figures;
    award(score, fmt::format("{} -> score {:.3f}{}", figures, score,
                             fraction > implausible_above() ? " (above the ceiling: a GPU run would reject it)" : ""));
    return;
  }
  if (fraction > implausible_above()) {
    award(0.0, figures);
    FAIL() << "rejected: " << figures << " is more than " << fmt::format("{:.0f}", 100.0 * (implausible_above() - 1))
           << "% above what this GPU measured; a kernel cannot beat the ceiling, so the timing or the work is "
              "wrong (skipped work, cached results, a patched timer)";
  }
  award(sliding_score(t, fraction), figures);
}

}  // namespace rooflab::grading
