// award(): a perf result -> its threshold -> the ceiling the threshold names -> a score, and what it
// records. The data are the project's data/ files plus a pretend lab "99" (written to a temporary data
// directory before anything loads them) with a same-run ceiling, as a GEMM rung names one.
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

// data/ with lab 99 added: a calibrated rule and a same-run rule (full at 0.8, none at 0.4).
const bool kDataReady = [] {
  static const TempDir temp;
  const fs::path real = ROOFLAB_DATA_DIR;
  const fs::path& dir = temp.path;
  fs::copy_file(real / "gpus.json", dir / "gpus.json", fs::copy_options::overwrite_existing);
  fs::copy_file(real / "models.json", dir / "models.json", fs::copy_options::overwrite_existing);
  nlohmann::json t = read_json(real / "thresholds.json");
  const nlohmann::json provenance = {{"kind", "analytic estimate"}, {"reasoning", "test"}, {"source", "test"}};
  t["labs"]["99"]["stream"] = {{"kind", "ceiling_fraction"}, {"ceiling", "copy_bandwidth"}, {"full_at", 0.8},
                               {"zero_at", 0.4}, {"provenance", provenance}};
  t["labs"]["99"]["rung"] = {{"kind", "ceiling_fraction"}, {"ceiling", "cublas_sgemm_same_run"}, {"full_at", 0.8},
                             {"zero_at", 0.4}, {"provenance", provenance}};
  t["labs"]["99"]["beat"] = {{"kind", "ceiling_fraction"}, {"ceiling", "naive_attention_same_run"}, {"full_at", 1.5},
                             {"zero_at", 0.5}, {"provenance", provenance}};
  t["labs"]["99"]["ratio"] = {{"kind", "ratio_max"}, {"value", 0.5}, {"description", "d"}, {"provenance", provenance}};
  std::ofstream(dir / "thresholds.json") << t.dump();
  ::setenv("ROOFLAB_DATA_DIR", dir.c_str(), 1);
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

TEST(Award, SameRunCeilingComesFromTheTestAndOnlyThere) {
  const auto c = calibrated();
  const auto v = judge("99", "rung", 9e12, nullptr, 10e12);
  EXPECT_EQ(v.ceiling.name, "cublas_sgemm_same_run");
  EXPECT_DOUBLE_EQ(v.ceiling.value, 10e12);
  EXPECT_EQ(v.ceiling.measured, "in this test, this run");
  EXPECT_DOUBLE_EQ(v.score, 1.0);
  EXPECT_TRUE(judge("99", "rung", 11e12, nullptr, 10e12).implausible);
  // A same-run threshold without the value, a value for a calibrated one, a ceiling that is no measurement.
  EXPECT_THROW(judge("99", "rung", 9e12, &c, std::nullopt), std::invalid_argument);
  EXPECT_THROW(judge("99", "stream", 0.6e12, &c, 1e12), std::invalid_argument);
  EXPECT_THROW(judge("99", "rung", 9e12, nullptr, 0.0), std::invalid_argument);
  EXPECT_THROW(judge("99", "stream", 0.6e12, nullptr, std::nullopt), std::invalid_argument);
  EXPECT_THROW(c.si(Ceiling::cublas_hgemm_same_run), std::invalid_argument);
}

// Lab 08's rule: a quantized GEMV's weight bytes per second against rooflab's FP16 GEMV's in the same run
// (B/s), so a speedup s over FP16 at b bits per weight is the fraction s x b / 16.
TEST(Award, Fp16GemvSameRunGradesTheSpeedupThroughBytes) {
  EXPECT_EQ(rooflab::si_unit(Ceiling::fp16_gemv_same_run), "B/s");
  EXPECT_TRUE(rooflab::measured_in_the_test(Ceiling::fp16_gemv_same_run));
  EXPECT_THROW(calibrated().si(Ceiling::fp16_gemv_same_run), std::invalid_argument);
  const double fp16_bytes = 2.0 * 8192 * 8192, fp16_s = 50e-6, int8_bytes = fp16_bytes * 8.5 / 16;
  const auto at_speedup = [&](double speedup) {
    return judge("08", "int8_gemv", int8_bytes / (fp16_s / speedup), nullptr, fp16_bytes / fp16_s);
  };
  EXPECT_EQ(at_speedup(1.6).ceiling.name, "fp16_gemv_same_run");
  EXPECT_EQ(at_speedup(1.6).ceiling.unit, "B/s");
  EXPECT_NEAR(at_speedup(1.6).score, 1.0, 1e-9);
  EXPECT_NEAR(at_speedup(1.0).score, 0.0, 1e-9);
  EXPECT_NEAR(at_speedup(1.3).score, 0.5, 1e-9);
  // A baseline, not a roof: a quantized GEMV may stream its bytes faster than the FP16 GEMV streams its own
  // (Lab 08's test checks it against the copy ceiling instead).
  EXPECT_FALSE(rooflab::caps_the_result(Ceiling::fp16_gemv_same_run));
  EXPECT_FALSE(at_speedup(2.1).implausible);
  EXPECT_THROW(judge("08", "int8_gemv", 1e12, nullptr, std::nullopt), std::invalid_argument);
}

// A baseline the result should beat (the naive attention path): full points above 1x, and a result at 3x the
// baseline is no cheat.
TEST(Award, ABaselineCeilingIsMeantToBeBeaten) {
  const auto v = judge("99", "beat", 30e12, nullptr, 10e12);
  EXPECT_EQ(v.ceiling.name, "naive_attention_same_run");
  EXPECT_DOUBLE_EQ(v.fraction, 3.0);
  EXPECT_DOUBLE_EQ(v.score, 1.0);
  EXPECT_FALSE(v.implausible);
  EXPECT_NEAR(judge("99", "beat", 10e12, nullptr, 10e12).score, 0.5, 1e-12);
  EXPECT_DOUBLE_EQ(judge("99", "beat", 4e12, nullptr, 10e12).score, 0.0);
  EXPECT_FALSE(rooflab::caps_the_result(Ceiling::naive_attention_same_run));
  EXPECT_TRUE(rooflab::caps_the_result(Ceiling::cublas_hgemm_same_run));
}

TEST(Award, RefusesUnknownQuantitiesRulesThatAreNoFractionAndUnknownCeilings) {
  const auto c = calibrated();
  EXPECT_THROW(judge("99", "no_such_quantity", 1, &c, std::nullopt), rooflab::DataError);
  EXPECT_THROW(judge("77", "stream", 1, &c, std::nullopt), rooflab::DataError);
  EXPECT_THROW(judge("99", "ratio", 1, &c, std::nullopt), rooflab::DataError);
  EXPECT_THROW(judge("03", "fusion_speedup", 1, &c, std::nullopt), rooflab::DataError);  // a prediction rule
  // thresholds.json may name only a ceiling this project knows.
  EXPECT_FALSE(rooflab::parse_ceiling("copy_bw"));
  for (const Ceiling k : rooflab::all_ceilings()) EXPECT_EQ(rooflab::parse_ceiling(rooflab::to_string(k)), k);
  nlohmann::json t = read_json(fs::path(ROOFLAB_DATA_DIR) / "thresholds.json");
  t["labs"]["01"]["copy"]["ceiling"] = "copy_bw";
  const fs::path bad = fs::temp_directory_path() / ("rooflab-award-bad-" + std::to_string(::getpid()) + ".json");
  std::ofstream(bad) << t.dump();
  try {
    rooflab::load_thresholds(bad);
    ADD_FAILURE() << "an unknown ceiling name was accepted";
  } catch (const rooflab::DataError& e) {
    EXPECT_NE(std::string(e.what()).find("labs.01.copy.ceiling"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("cublas_sgemm_same_run"), std::string::npos) << "lists the known ones";
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
  rooflab::grading::detail::award_resolved("99", "stream", 0.7e12, &kCalibrated, std::nullopt);
  EXPECT_EQ(property("rooflab_fraction"), "0.7500");
  const auto ceiling = nlohmann::json::parse(property("rooflab_ceiling.copy_bandwidth")).get<rooflab::CeilingInForce>();
  EXPECT_EQ(ceiling.name, "copy_bandwidth");
  EXPECT_DOUBLE_EQ(ceiling.value, 1e12);
  EXPECT_EQ(ceiling.unit, "B/s");
}

TEST(Award, FailsAResultAboveTheCeilingOrAMismatchedCeiling) {
  EXPECT_FATAL_FAILURE(rooflab::grading::detail::award_resolved("99", "stream", 2e12, &kCalibrated, std::nullopt),
                       "rejected");
  EXPECT_THROW(rooflab::grading::award("99", "stream", 0.7e12, 1e12), std::invalid_argument);
  EXPECT_FATAL_FAILURE(rooflab::grading::award("99", "rung", -1.0, 1e12), "measured");
}

// save_plot(): a lab's plot lands in the report folder under a name that starts with the lab, and a name
// that belongs to another lab fails the test that wrote it.
TEST(SavePlot, WritesTheFilesUnderTheLabsName) {
  const TempDir reports("reports");
  ::setenv("ROOFLAB_REPORT_DIR", reports.path.c_str(), 1);
  const fs::path lab01 = fs::path(ROOFLAB_DATA_DIR).parent_path() / "labs" / "01-memory-bandwidth" / "rubric.json";
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
