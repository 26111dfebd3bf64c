// award(): a perf result -> its threshold -> the ceiling or baseline the threshold names -> a score, and what
// it records. The data are the project's data/ and labs/ plus a pretend lab "99" (a folder of a temporary labs
// directory, beside links to the real labs, made before anything loads them) whose rules name a calibrated
// ceiling, a baseline that caps the result (as a GEMM rung's cuBLAS does) and one to beat.
#include <rooflab/testing/calibration.hpp>
#include <rooflab/testing/grading.hpp>
#include <rooflab/specs.hpp>

#include <gtest/gtest.h>
#include <gtest/gtest-spi.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

namespace fs = std::filesystem;
using rooflab::Ceiling;
using rooflab::grading::judge;

namespace {

nlohmann::json read_json(const fs::path& p) { return nlohmann::json::parse(std::ifstream(p)); }

// A temporary directory (the data, the reports), removed when the tests end.
struct TempDir {
  explicit TempDir(const std::string& what = "data")
      : path(fs::temp_directory_path() / ("rooflab-award-test-" + what + "-" + std::to_string(::getpid()))) {
    fs::create_directories(path);
  }
  fs::path path;
  ~TempDir() { fs::remove_all(path); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

// labs/ with lab 99 added: a calibrated rule and a baseline rule (full at 0.8, none at 0.4), a baseline to
// beat (full at 1.5, none at 0.5) and a ratio rule. Lab 99 declares its baselines in its own folder, as any
// new lab does: nothing in common/ knows their names.
const bool kDataReady = [] {
  static const TempDir temp("labs");
  const fs::path real = ROOFLAB_LABS_DIR;
  for (const auto& e : fs::directory_iterator(real)) {
    if (e.is_directory()) fs::create_directory_symlink(e.path(), temp.path / e.path().filename());
  }
  const nlohmann::json provenance = {{"kind", "analytic estimate"}, {"reasoning", "test"}, {"source", "test"}};
  nlohmann::json t;
  t["stream"] = {{"kind", "ceiling_fraction"}, {"ceiling", "copy_bandwidth"}, {"full_at", 0.8},
                 {"zero_at", 0.4}, {"provenance", provenance}};
  t["rung"] = {{"kind", "ceiling_fraction"},
               {"baseline", {{"name", "pretend_gemm_same_run"}, {"unit", "FLOP/s"}, {"caps", true}, {"what", "a GEMM"}}},
               {"full_at", 0.8}, {"zero_at", 0.4}, {"provenance", provenance}};
  t["tensor_rung"] = {{"kind", "ceiling_fraction"},
                      {"baseline", {{"name", "pretend_gemm_same_run"}, {"unit", "FLOP/s"}, {"caps", true}, {"what", "a GEMM"}}},
                      {"full_at", 0.8}, {"zero_at", 0.4}, {"provenance", provenance},
                      {"by_architecture", {{{"from", "sm_90"}, {"full_at", 0.5}, {"zero_at", 0.2},
                                            {"why", "its instruction reaches less of the baseline there"},
                                            {"provenance", {{"kind", "predicted"}, {"gpu", "Test GPU"},
                                                            {"date", "2026-01-01"}, {"figure", 0.45}}}}}}};
  t["beat"] = {{"kind", "ceiling_fraction"},
               {"baseline", {{"name", "pretend_naive_same_run"}, {"unit", "FLOP/s"}, {"caps", false}, {"what", "a naive path"}}},
               {"full_at", 1.5}, {"zero_at", 0.5}, {"provenance", provenance}};
  t["ratio"] = {{"kind", "ratio_max"}, {"value", 0.5}, {"description", "d"}, {"provenance", provenance}};
  t["own_ratio"] = {{"kind", "ratio_max"}, {"value", 1.3}, {"description", "time of a / time of the student's b"},
                    {"student_baseline", {{"roof_fraction", 0.5}, {"reasoning", "test"}}}, {"provenance", provenance}};
  fs::create_directory(temp.path / "99-pretend");
  std::ofstream(temp.path / "99-pretend" / "thresholds.json") << t.dump();
  ::setenv("ROOFLAB_LABS_DIR", temp.path.c_str(), 1);
  return true;
}();

rooflab::Ceilings calibrated() {
  rooflab::Ceilings c;
  c.device_name = "Test GPU";
  c.measured_at = "2026-01-01T00:00:00Z";
  c.copy_gbps = 1000;  // 1e12 bytes/s
  c.fp32_fma_flops = 20e12;
  return c;
}

}  // namespace

TEST(Award, ResolvesTheCeilingTheThresholdNames) {
  ASSERT_TRUE(kDataReady);
  const auto c = calibrated();
  const auto v = judge("99", "stream", 0.6e12, &c, std::nullopt);
  EXPECT_EQ(v.ceiling.name, "copy_bandwidth");
  EXPECT_EQ(v.ceiling.unit, "B/s");
  EXPECT_DOUBLE_EQ(v.ceiling.value, 1e12);  // GB/s in the calibration, bytes/s here
  EXPECT_NE(v.ceiling.measured.find("Test GPU"), std::string::npos) << v.ceiling.measured;
  EXPECT_DOUBLE_EQ(v.fraction, 0.6);
  EXPECT_NEAR(v.score, 0.5, 1e-12);  // halfway between 0.4 and 0.8
  EXPECT_FALSE(v.implausible);
  // Lab 02's FMA rule names the measured FMA ceiling, not a theoretical peak.
  const auto fma = judge("02", "fma_fp32", 18e12, &c, std::nullopt);
  EXPECT_EQ(fma.ceiling.name, "fp32_fma_peak");
  EXPECT_EQ(fma.ceiling.unit, "FLOP/s");
  EXPECT_DOUBLE_EQ(fma.fraction, 0.9);
  EXPECT_DOUBLE_EQ(fma.score, 1.0);
}

TEST(Award, ScoresFullNoneAndBetweenAndFlagsTheImplausible) {
  const auto c = calibrated();
  EXPECT_DOUBLE_EQ(judge("99", "stream", 0.8e12, &c, std::nullopt).score, 1.0);
  EXPECT_DOUBLE_EQ(judge("99", "stream", 0.95e12, &c, std::nullopt).score, 1.0);
  EXPECT_DOUBLE_EQ(judge("99", "stream", 0.4e12, &c, std::nullopt).score, 0.0);
  EXPECT_DOUBLE_EQ(judge("99", "stream", 0.1e12, &c, std::nullopt).score, 0.0);
  EXPECT_NEAR(judge("99", "stream", 0.7e12, &c, std::nullopt).score, 0.75, 1e-12);
  EXPECT_DOUBLE_EQ(judge("99", "stream", std::nan(""), &c, std::nullopt).score, 0.0);
  EXPECT_FALSE(judge("99", "stream", 1.05e12, &c, std::nullopt).implausible);  // within the 5% margin
  EXPECT_TRUE(judge("99", "stream", 1.06e12, &c, std::nullopt).implausible);
}

TEST(Award, ABaselineComesFromTheTestAndOnlyThere) {
  const auto c = calibrated();
  const auto v = judge("99", "rung", 9e12, nullptr, 10e12);
  EXPECT_EQ(v.ceiling.name, "pretend_gemm_same_run");
  EXPECT_EQ(v.ceiling.unit, "FLOP/s");
  EXPECT_DOUBLE_EQ(v.ceiling.value, 10e12);
  EXPECT_EQ(v.ceiling.measured, "in this test, this run");
  EXPECT_DOUBLE_EQ(v.score, 1.0);
  EXPECT_TRUE(judge("99", "rung", 11e12, nullptr, 10e12).implausible);
  // A baseline rule without the value, a value for a calibrated one, a baseline that is no measurement.
  EXPECT_THROW(judge("99", "rung", 9e12, &c, std::nullopt), std::invalid_argument);
  EXPECT_THROW(judge("99", "stream", 0.6e12, &c, 1e12), std::invalid_argument);
  EXPECT_THROW(judge("99", "rung", 9e12, nullptr, 0.0), std::invalid_argument);
  EXPECT_THROW(judge("99", "stream", 0.6e12, nullptr, std::nullopt), std::invalid_argument);
  // Lab 04's rungs: cuBLAS at the same shape, declared in labs/04-gemm/thresholds.json, caps the result.
  const auto wmma = judge("04", "wmma", 5e12, nullptr, 10e12);
  EXPECT_EQ(wmma.ceiling.name, "cublas_hgemm_same_run");
  EXPECT_DOUBLE_EQ(wmma.score, 1.0);
  EXPECT_TRUE(judge("04", "wmma", 11e12, nullptr, 10e12).implausible);
}

// Lab 08's rule: a quantized GEMV against cuBLAS's FP16 GEMV in the same run, both counted in the layer's FP16
// weight bytes per second (B/s), so the fraction is the speedup.
TEST(Award, Fp16GemvBaselineGradesTheSpeedup) {
  const double fp16_bytes = 2.0 * 8192 * 8192, fp16_s = 50e-6;
  const auto at_speedup = [&](double speedup) {
    return judge("08", "int8_gemv", fp16_bytes / (fp16_s / speedup), nullptr, fp16_bytes / fp16_s);
  };
  EXPECT_EQ(at_speedup(1.6).ceiling.name, "cublas_fp16_gemv_same_run");
  EXPECT_EQ(at_speedup(1.6).ceiling.unit, "B/s");
  EXPECT_NEAR(at_speedup(1.6).score, 1.0, 1e-9);
  EXPECT_NEAR(at_speedup(1.0).score, 0.0, 1e-9);
  EXPECT_NEAR(at_speedup(1.3).score, 0.5, 1e-9);
  // A baseline, not a roof: a quantized GEMV is meant to beat it (Lab 08's test checks it against the copy
  // ceiling instead).
  EXPECT_FALSE(rooflab::threshold("08", "int8_gemv").caps());
  EXPECT_FALSE(at_speedup(2.1).implausible);
  EXPECT_THROW(judge("08", "int8_gemv", 1e12, nullptr, std::nullopt), std::invalid_argument);
}

// A baseline the result should beat (the naive attention path): full points above 1x, and a result at 3x the
// baseline is no cheat.
TEST(Award, ABaselineCeilingIsMeantToBeBeaten) {
  const auto v = judge("99", "beat", 30e12, nullptr, 10e12);
  EXPECT_EQ(v.ceiling.name, "pretend_naive_same_run");
  EXPECT_DOUBLE_EQ(v.fraction, 3.0);
  EXPECT_DOUBLE_EQ(v.score, 1.0);
  EXPECT_FALSE(v.implausible);
  EXPECT_NEAR(judge("99", "beat", 10e12, nullptr, 10e12).score, 0.5, 1e-12);
  EXPECT_DOUBLE_EQ(judge("99", "beat", 4e12, nullptr, 10e12).score, 0.0);
  EXPECT_EQ(judge("05", "flash_vs_naive", 30e12, nullptr, 10e12).ceiling.name, "naive_attention_same_run");
  EXPECT_FALSE(judge("05", "flash_vs_naive", 30e12, nullptr, 10e12).implausible);
}

TEST(Award, RefusesUnknownQuantitiesRulesThatAreNoFractionAndUnknownCeilings) {
  const auto c = calibrated();
  EXPECT_THROW(judge("99", "no_such_quantity", 1, &c, std::nullopt), rooflab::DataError);
  EXPECT_THROW(judge("77", "stream", 1, &c, std::nullopt), rooflab::DataError);
  EXPECT_THROW(judge("99", "ratio", 1, &c, std::nullopt), rooflab::DataError);
  EXPECT_THROW(judge("03", "fusion_speedup", 1, &c, std::nullopt), rooflab::DataError);  // a prediction rule
  // A rule's `ceiling` may name only a calibrated ceiling; what a test times itself is a `baseline`.
  EXPECT_FALSE(rooflab::parse_ceiling("copy_bw"));
  for (const Ceiling k : rooflab::all_ceilings()) EXPECT_EQ(rooflab::parse_ceiling(rooflab::to_string(k)), k);
  nlohmann::json t = read_json(fs::path(ROOFLAB_LABS_DIR) / "01-memory-bandwidth" / "thresholds.json");
  t["copy"]["ceiling"] = "copy_bw";
  const fs::path bad = fs::temp_directory_path() / ("rooflab-award-bad-" + std::to_string(::getpid()) + ".json");
  std::ofstream(bad) << t.dump();
  try {
    rooflab::load_lab_thresholds(bad, "01");
    ADD_FAILURE() << "an unknown ceiling name was accepted";
  } catch (const rooflab::DataError& e) {
    EXPECT_NE(std::string(e.what()).find("copy.ceiling"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("fp32_fma_peak"), std::string::npos) << "lists the known ones";
  }
  fs::remove(bad);
}

namespace {
const rooflab::Ceilings kCalibrated = calibrated();

std::string property(const std::string& key) {
  const ::testing::TestResult* r = ::testing::UnitTest::GetInstance()->current_test_info()->result();
  for (int i = 0; i < r->test_property_count(); ++i) {
    if (r->GetTestProperty(i).key() == key) return r->GetTestProperty(i).value();
  }
  return "";
}
}  // namespace

// What the grader reads: the fraction of the points and the ceiling, as data.
TEST(Award, RecordsTheScoreAndTheCeilingInForce) {
  rooflab::grading::detail::award_resolved("99", "stream", 0.7e12, &kCalibrated, std::nullopt, 0);
  EXPECT_EQ(property("rooflab_fraction"), "0.7500");
  const auto ceiling = nlohmann::json::parse(property("rooflab_ceiling.copy_bandwidth")).get<rooflab::CeilingInForce>();
  EXPECT_EQ(ceiling.name, "copy_bandwidth");
  EXPECT_DOUBLE_EQ(ceiling.value, 1e12);
  EXPECT_EQ(ceiling.unit, "B/s");
  // The measure, as data: what it was, in what unit, against which reference, on which architecture.
  const auto measure = nlohmann::json::parse(property("rooflab_measure.stream"));
  EXPECT_EQ(measure.at("quantity"), "stream");
  EXPECT_DOUBLE_EQ(measure.at("value").get<double>(), 0.7e12);
  EXPECT_EQ(measure.at("unit"), "B/s");
  EXPECT_EQ(measure.at("against"), "copy_bandwidth");
  EXPECT_DOUBLE_EQ(measure.at("fraction").get<double>(), 0.7);
  EXPECT_EQ(measure.at("architecture"), 0);
}

TEST(Award, FailsAResultAboveTheCeilingOrAMismatchedCeiling) {
  EXPECT_FATAL_FAILURE(rooflab::grading::detail::award_resolved("99", "stream", 2e12, &kCalibrated, std::nullopt, 0),
                       "rejected");
  EXPECT_THROW(rooflab::grading::detail::award_resolved("99", "stream", 0.7e12, nullptr, 1e12, 0), std::invalid_argument);
  EXPECT_FATAL_FAILURE(rooflab::grading::detail::award_resolved("99", "rung", -1.0, nullptr, 1e12, 0), "measured");
}

// A rule with numbers of its own on some architectures: the grading GPU's compute capability picks them, the
// figures say which rule and why, and on any other architecture the rule's own numbers grade.
TEST(Award, ARulesNumbersForAnArchitectureGradeOnIt) {
  ASSERT_TRUE(kDataReady);
  const auto at = [](int cc, double fraction) { return judge("99", "tensor_rung", fraction * 1e12, nullptr, 1e12, cc); };
  EXPECT_DOUBLE_EQ(at(90, 0.5).score, 1.0);   // full at 50% on sm_90
  EXPECT_DOUBLE_EQ(at(100, 0.5).score, 1.0);  // and after it
  EXPECT_NEAR(at(90, 0.35).score, 0.5, 1e-12);
  EXPECT_DOUBLE_EQ(at(90, 0.2).score, 0.0);
  EXPECT_NEAR(at(89, 0.5).score, 0.25, 1e-12);  // before sm_90: full at 80%, none at 40%
  EXPECT_NEAR(at(0, 0.6).score, 0.5, 1e-12);    // no architecture known: the rule's own numbers
  const std::string figures = at(90, 0.45).figures;
  EXPECT_NE(figures.find("the rule for sm_90 and later: full at 50%, none at 20%"), std::string::npos) << figures;
  EXPECT_NE(figures.find("its instruction reaches less"), std::string::npos) << figures;
  EXPECT_EQ(at(80, 0.45).figures.find("the rule for"), std::string::npos);
  const rooflab::Threshold& rule = rooflab::threshold("99", "tensor_rung");
  ASSERT_EQ(rule.by_architecture.size(), 1u);
  EXPECT_EQ(rule.by_architecture[0].provenance.kind, "predicted");
  EXPECT_EQ(rule.on_architecture(90).full_at, 0.5);
  EXPECT_EQ(rule.on_architecture(86).full_at, 0.8);
}

// save_plot(): a lab's plot lands in the report folder under a name that starts with the lab, and a name
// that belongs to another lab fails the test that wrote it.
// A ratio against the student's own baseline: the baseline counts as no slower than its roof over the rule's
// share, so a baseline slowed on purpose does not lower the ratio past that.
TEST(Award, AStudentsOwnBaselineIsCappedAtItsRoofOverTheRulesShare) {
  ASSERT_TRUE(kDataReady);
  const rooflab::Threshold& rule = rooflab::threshold("99", "own_ratio");
  ASSERT_TRUE(rule.student_baseline);
  EXPECT_DOUBLE_EQ(rule.student_baseline->roof_fraction, 0.5);
  // An honest baseline at 70% of its roof (1 ms of roof, 1.43 ms taken): counted as measured.
  const auto honest = rooflab::grading::cap_baseline(rule, 1.43e-3, 1e-3);
  EXPECT_FALSE(honest.capped);
  EXPECT_DOUBLE_EQ(honest.used_s, 1.43e-3);
  EXPECT_DOUBLE_EQ(honest.cap_s, 2e-3);
  // Slowed to 5 ms: counted at 2 ms, so a kernel taking 2.9 ms (1.45x the cap) still fails a 1.3x bound that
  // 2.9 / 5 = 0.58 would have passed.
  const auto slowed = rooflab::grading::cap_baseline(rule, 5e-3, 1e-3);
  EXPECT_TRUE(slowed.capped);
  EXPECT_DOUBLE_EQ(slowed.used_s, 2e-3);
  EXPECT_GT(2.9e-3 / slowed.used_s, rule.ratio_max());
  EXPECT_LT(2.9e-3 / 5e-3, rule.ratio_max());
  EXPECT_DOUBLE_EQ(rooflab::grading::capped_baseline_s("99", "own_ratio", 5e-3, 1e-3), 2e-3);
  EXPECT_DOUBLE_EQ(rooflab::grading::capped_baseline_s("99", "own_ratio", 1.5e-3, 1e-3), 1.5e-3);
  // A rule that declares no student baseline cannot be capped by mistake, nor a time that is no measurement.
  EXPECT_THROW(rooflab::grading::capped_baseline_s("99", "ratio", 5e-3, 1e-3), rooflab::DataError);
  EXPECT_THROW(rooflab::grading::cap_baseline(rule, 0.0, 1e-3), std::invalid_argument);
  EXPECT_THROW(rooflab::grading::cap_baseline(rule, 1e-3, std::nan("")), std::invalid_argument);
  // The labs whose ratios have a baseline the student runs declare the cap (Labs 05, 06, 07).
  for (const auto& [lab, quantity] : {std::pair{"05", "flash_vs_naive"}, {"06", "gqa_time_ratio"},
                                      {"07", "batch8_time_ratio"}, {"07", "batch64_time_ratio"}}) {
    const auto& t = rooflab::threshold(lab, quantity);
    ASSERT_TRUE(t.student_baseline) << lab << "/" << quantity;
    EXPECT_FALSE(t.student_baseline->reasoning.empty()) << lab << "/" << quantity;
  }
}

TEST(SavePlot, WritesTheFilesUnderTheLabsName) {
  const TempDir reports("reports");
  ::setenv("ROOFLAB_REPORT_DIR", reports.path.c_str(), 1);
  const fs::path lab01 = fs::path(ROOFLAB_LABS_DIR) / "01-memory-bandwidth" / "rubric.json";
  rooflab::grading::identify_binary(lab01.c_str(), "analytic");
  rooflab::Plot p{.title = "t", .xlabel = "x", .ylabel = "y"};
  p.series.push_back({"s", {{1, 1}, {2, 4}}, "lines"});
  EXPECT_NONFATAL_FAILURE(rooflab::grading::save_plot(p, "lab02-roofline"), "a lab's plots are named lab01-");
  const auto files = rooflab::grading::save_plot(p, "lab01-bandwidth");
  EXPECT_EQ(files.data.parent_path(), reports.path);
  EXPECT_TRUE(fs::exists(files.data));
  rooflab::grading::identify_binary("", "");
  ::unsetenv("ROOFLAB_REPORT_DIR");
}
