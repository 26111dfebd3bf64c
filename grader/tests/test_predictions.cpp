// The performance model beside the perf tests a grade without a GPU leaves owed (predictions.hpp): which
// tests get a line, what it says, and that nothing else changes.
#include "predictions.hpp"

#include <rooflab/specs.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

using namespace rooflab::grader;

namespace {

// What `labNN_static --rooflab-inspect --json` prints, cut to the fields read, after a note of the backend's.
const char* kInspect = R"(rooflab emu: a note before the object
{
  "gpu": "h100-sxm",
  "gpu_name": "NVIDIA H100 SXM5",
  "kernels": [
    {"kernel": "lab01::copy_kernel", "graded_by": ["copy"],
     "prediction": {"fraction": 0.971, "roof": "copy ceiling", "limiter": "loads in flight", "time_s": 1.909e-4}},
    {"kernel": "lab01::strided_read_kernel", "graded_by": [], "prediction": null, "prediction_error": "none"},
    {"kernel": "lab01::triad_kernel", "graded_by": ["triad"],
     "prediction": {"fraction": 0.9, "roof": "copy ceiling", "limiter": "issue"}}
  ]
})";

TestResult owed(const std::string& id, const std::string& kind = "perf", Status status = Status::needs_gpu) {
  TestResult t;
  t.lab = "01";
  t.id = id;
  t.kind = kind;
  t.status = status;
  t.max_score = 6;
  t.output = "not built: no GPU on this machine";
  return t;
}

rooflab::rubric::Rubric rubric() {
  rooflab::rubric::Rubric r;
  r.lab = "01";
  r.tests = {{"Lab01Perf.Copy", "perf", 6, "copy GB/s: full points at 90% of the copy ceiling", {"copy"}},
             {"Lab01Perf.Scale", "perf", 6, "scale GB/s", {"scale"}},
             {"Lab01Perf.Triad", "perf", 6, "triad GB/s", {"triad"}},
             {"Lab01Kernels.Copy", "correctness", 4, "copy", {}}};
  return r;
}

TEST(Predictions, ReadsThePredictedKernelsFromInspectsJson) {
  const Predictions p = parse_predictions(kInspect);
  EXPECT_EQ(p.gpu, "NVIDIA H100 SXM5");
  ASSERT_EQ(p.kernels.size(), 2u) << "a kernel without a prediction is left out";
  EXPECT_EQ(p.kernels[0].kernel, "lab01::copy_kernel");
  EXPECT_EQ(p.kernels[0].graded_by, std::vector<std::string>{"copy"});
  EXPECT_DOUBLE_EQ(p.kernels[0].fraction, 0.971);
  EXPECT_EQ(p.kernels[1].limiter, "issue");
  EXPECT_THROW(parse_predictions("no object here"), std::runtime_error);
  EXPECT_THROW(parse_predictions("{\n \"kernels\": 3}"), std::runtime_error);
}

TEST(Predictions, EachOwedOrMeasuredPerfTestGetsItsKernelsPredictionAndNothingElseChanges) {
  std::vector<TestResult> tests = {owed("Lab01Perf.Copy"), owed("Lab01Perf.Scale"),
                                   owed("Lab01Perf.Triad", "perf", Status::passed),
                                   owed("Lab01Kernels.Copy", "emu", Status::passed)};
  const auto before = tests;
  add_predictions(rubric(), parse_predictions(kInspect), tests);
  EXPECT_EQ(tests[0].output,
            "not built: no GPU on this machine\nprediction on NVIDIA H100 SXM5 (the performance model, not a "
            "measurement; no points): lab01::copy_kernel 97% of the copy ceiling (190.90 us), limited by loads in flight. The "
            "test: copy GB/s: full points at 90% of the copy ceiling. Evidence: ./rooflab inspect 01\n");
  EXPECT_EQ(tests[1].output, before[1].output) << "no kernel is graded by scale";
  EXPECT_NE(tests[2].output.find("\nbeside this measurement, the prediction on NVIDIA H100 SXM5 (the performance "
                                 "model, not a measurement; no points): lab01::triad_kernel 90% of the copy ceiling, "
                                 "limited by issue. The test: triad GB/s."),
            std::string::npos)
      << "a perf test measured on a GPU gets the prediction beside it: " << tests[2].output;
  EXPECT_EQ(tests[3].output, before[3].output) << "not a perf test";
  for (std::size_t i = 0; i < tests.size(); ++i) {
    EXPECT_EQ(tests[i].status, before[i].status);
    EXPECT_EQ(tests[i].score, before[i].score);
    EXPECT_EQ(tests[i].max_score, before[i].max_score);
  }
}

}  // namespace

// Without a GPU the predictions are for the H100 SXM; on a GPU, for that GPU, or none when data/gpus.json does
// not know it (a prediction for another GPU says nothing beside its measurements).
TEST(Predictions, ForTheGradesGpuElseTheH100) {
  EXPECT_EQ(prediction_gpu(false, ""), "h100-sxm");
  EXPECT_EQ(prediction_gpu(true, "NVIDIA H200"), "h200-sxm");
  EXPECT_EQ(prediction_gpu(true, "NVIDIA Imaginary 9000"), "");
}

namespace {

// The lab's roofline of predictions (model_roofline): each kernel that does math at its declared intensity and its
// predicted TFLOP/s, hollow, labelled with its registry id, on the datasheet roofs of the GPU predicted for; a
// kernel without math (a copy) or without a prediction is left out, and a lab with none has no plot.
TEST(Predictions, TheLabsRooflineOfPredictionsHasEachKernelThatDoesMath) {
  const char* inspect = R"({
  "gpu": "h100-sxm",
  "gpu_name": "NVIDIA H100 SXM5",
  "kernels": [
    {"kernel": "lab04::sgemm_smem_kernel", "variant": "3 shared-memory tiles", "graded_by": ["smem"], "flops": 1.2e11,
     "bytes": 1.2e9, "prediction": {"fraction": 0.12, "roof": "FP32 peak", "limiter": "shared memory", "time_s": 0.02}},
    {"kernel": "lab04::copy_kernel", "variant": "copy", "graded_by": [], "flops": 0, "bytes": 1e9,
     "prediction": {"fraction": 0.9, "roof": "copy ceiling", "limiter": "loads in flight", "time_s": 0.0004}},
    {"kernel": "lab04::stub_kernel", "variant": "stub", "graded_by": [], "flops": 1e9, "bytes": 1e6, "prediction": null}
  ]
})";
  const Predictions p = parse_predictions(inspect);
  ASSERT_EQ(p.gpu_id, "h100-sxm");
  ASSERT_EQ(p.kernels.size(), 2u);
  EXPECT_EQ(p.kernels[0].variant, "3 shared-memory tiles");
  EXPECT_DOUBLE_EQ(p.kernels[0].time_s, 0.02);
  const auto plot = model_roofline("04", p);
  ASSERT_TRUE(plot.has_value());
  ASSERT_EQ(plot->series.size(), 1u) << "the copy does no math";
  EXPECT_EQ(plot->series[0].title, "3 shared-memory tiles");
  EXPECT_EQ(plot->series[0].points[0], (std::pair<double, double>{100, 6}));  // 1.2e11 FLOP / 1.2e9 B; 0.02 s: 6 TFLOP/s
  EXPECT_NE(plot->series[0].style.find("pt 6"), std::string::npos) << "hollow: a prediction";
  EXPECT_NE(plot->title.find("NVIDIA H100 SXM5"), std::string::npos);
  EXPECT_NE(plot->note.find("a model, not a measurement"), std::string::npos);
  EXPECT_FALSE(plot->roofs.empty()) << "the datasheet roofs";
  Predictions copy_only = p;
  copy_only.kernels.erase(copy_only.kernels.begin());
  EXPECT_FALSE(model_roofline("04", copy_only).has_value());
  Predictions unknown = p;
  unknown.gpu_id = "imaginary-9000";
  EXPECT_FALSE(model_roofline("04", unknown).has_value());
}

}  // namespace

namespace {

TestResult owed_in(const std::string& lab, const std::string& id) {
  TestResult t = owed(id);
  t.lab = lab;
  return t;
}

// A perf test that compares with a baseline timed in the same run (cuBLAS, the naive path, cuBLAS's FP16 GEMV) gets
// the prediction in its own terms, against what the course's run on the GPU measured of that baseline: "100% of the
// copy ceiling" says nothing about "50% of cuBLAS". The figures are the rules' own (thresholds.json): a baseline that
// caps as a share of it, one to beat as a speedup, from a FLOP rate, a time, or bytes at a share of the copy ceiling.
TEST(Predictions, ATestAgainstASameRunBaselineGetsThePredictionInItsTerms) {
  Predictions p;
  p.gpu = "NVIDIA H100 SXM5";
  p.gpu_id = "h100-sxm";
  const double gemm = 2.0 * 4096 * 4096 * 4096;
  const double copy = 2978e9, weights_int8 = 8192.0 * 8192;
  p.kernels = {{"lab04::hgemm_wmma_kernel", "wmma", {"wmma"}, 1.0, "copy ceiling", "loads in flight", gemm, 2.21e9,
                746.53e-6, 743.61e-6},
               {"lab05::flash_mma_kernel<64, 64>", "flash", {"flash_vs_naive"}, 0.46, "FP16 tensor peak",
                "shared memory", 6.872e10, 3.4e7, 150e-6, 69e-6},
               {"lab08::gemv_int8_kernel", "int8", {"int8_gemv"}, 0.9, "copy ceiling", "loads in flight", 1.3e8,
                weights_int8, weights_int8 / copy / 0.9, weights_int8 / copy}};
  p.references = {{"cublas_hgemm_same_run", "cuBLAS's FP16 GEMM", "NVIDIA H100 SXM5 run of 2026-11-24", 729e12},
                  {"naive_attention_same_run", "the naive attention path", "NVIDIA H100 SXM5 run of 2026-11-24", 0,
                   740e-6},
                  {"cublas_fp16_gemv_same_run", "cuBLAS's FP16 GEMV", "NVIDIA H100 SXM5 run of 2026-11-24", 0, 0,
                   134217728, 0.77}};
  const auto rubric_of = [](const std::string& lab, const std::string& test, const std::string& quantity) {
    rooflab::rubric::Rubric r;
    r.lab = lab;
    r.tests = {{test, "perf", 10, "the rule", {quantity}}};
    return r;
  };
  std::vector<TestResult> wmma = {owed_in("04", "Lab04Perf.WmmaAgainstCublasHgemm")};
  add_predictions(rubric_of("04", "Lab04Perf.WmmaAgainstCublasHgemm", "wmma"), p, wmma);
  // 1.37e11 FLOP in 746.53 us: 184.1 TFLOP/s; cuBLAS's 729 TFLOP/s does it in 188.5 us: 25%.
  EXPECT_NE(wmma[0].output.find("lab04::hgemm_wmma_kernel 100% of the copy ceiling (746.53 us), limited by loads in "
                                "flight (in the test's terms: 184.1 TFLOP/s, 25% of cuBLAS's FP16 GEMM as the course's "
                                "NVIDIA H100 SXM5 run of 2026-11-24 measured it (729.0 TFLOP/s)). The test: the rule."),
            std::string::npos)
      << wmma[0].output;
  std::vector<TestResult> flash = {owed_in("05", "Lab05Perf.FlashAgainstNaiveSameRun")};
  add_predictions(rubric_of("05", "Lab05Perf.FlashAgainstNaiveSameRun", "flash_vs_naive"), p, flash);
  EXPECT_NE(flash[0].output.find("(in the test's terms: 458.1 TFLOP/s, 4.93x the speed of the naive attention path as "
                                 "the course's NVIDIA H100 SXM5 run of 2026-11-24 timed it (740.00 us))"),
            std::string::npos)
      << flash[0].output;
  // The FP16 GEMV's 134 MB at 77% of the copy ceiling (58.5 us) over the int8 kernel's 67 MB at 90% (25.0 us).
  std::vector<TestResult> gemv = {owed_in("08", "Lab08Perf.Int8Gemv")};
  add_predictions(rubric_of("08", "Lab08Perf.Int8Gemv", "int8_gemv"), p, gemv);
  EXPECT_NE(gemv[0].output.find("(in the test's terms: 2.34x the speed of cuBLAS's FP16 GEMV as the course's NVIDIA "
                                "H100 SXM5 run of 2026-11-24 timed it (77% of the copy ceiling))"),
            std::string::npos)
      << gemv[0].output;
  // On a GPU no course run has been on: the rate, and what the test will time in the same run.
  Predictions elsewhere = p;
  elsewhere.references.clear();
  std::vector<TestResult> unmeasured = {owed_in("04", "Lab04Perf.WmmaAgainstCublasHgemm")};
  add_predictions(rubric_of("04", "Lab04Perf.WmmaAgainstCublasHgemm", "wmma"), elsewhere, unmeasured);
  EXPECT_NE(unmeasured[0].output.find("(in the test's terms: 184.1 TFLOP/s; no course run has measured the test's "
                                      "baseline on this GPU: " +
                                      rooflab::threshold("04", "wmma").baseline->what + ")"),
            std::string::npos)
      << unmeasured[0].output;
}

// A references file that cannot be read leaves the predictions against their roofs, states no test's terms (it
// would say no run measured the baseline), and says so once, on the first perf test.
TEST(Predictions, UnreadableReferencesLeaveThePredictionsAndSaySo) {
  ModelRun model;
  model.predictions = Predictions{};
  model.predictions->gpu = "NVIDIA H100 SXM5";
  model.predictions->kernels = {{"lab04::hgemm_wmma_kernel", "wmma", {"wmma"}, 1.0, "copy ceiling", "loads in flight",
                                 1.37e11, 2.21e9, 746.53e-6, 743.61e-6}};
  model.predictions->references_read = false;
  model.references_error = "data/references.json: cannot be read";
  Lab lab;
  lab.id = "04";
  lab.rubric = std::filesystem::path(ROOFLAB_SOURCE_DIR) / "labs" / "04-gemm" / "rubric.json";
  std::vector<TestResult> tests = {owed_in("04", "Lab04Perf.SmemTiledAgainstCublas"),
                                   owed_in("04", "Lab04Perf.WmmaAgainstCublasHgemm")};
  predict_perf_tests(lab, model, tests);
  EXPECT_NE(tests[1].output.find("lab04::hgemm_wmma_kernel 100% of the copy ceiling (746.53 us), limited by loads in "
                                 "flight. The test:"),
            std::string::npos)
      << tests[1].output;
  EXPECT_EQ(tests[1].output.find("in the test's terms"), std::string::npos) << tests[1].output;
  EXPECT_NE(tests[0].output.find("the course runs' references could not be read, so no prediction is stated in a "
                                 "test's terms: data/references.json: cannot be read"),
            std::string::npos)
      << tests[0].output;
  EXPECT_EQ(tests[1].output.find("could not be read"), std::string::npos) << "said once, on the first perf test";
}

// data/references.json: the newest run on the GPU asked for, its test baselines only (not the FMA ceiling); none on
// a GPU no run was on; a file that cannot be read, or a reference without a figure, is an error naming the file.
TEST(Predictions, TheCourseRunsReferencesAreTheNewestOnTheGpu) {
  const auto file = rooflab::data_dir() / "references.json";
  const auto h200 = load_references(file, "h200-sxm");
  ASSERT_EQ(h200.size(), 4u);
  for (const auto& r : h200) {
    EXPECT_EQ(r.run, "NVIDIA H200 SXM run of 2026-12-04");
    EXPECT_NE(r.baseline.find("_same_run"), std::string::npos) << r.baseline;
  }
  EXPECT_TRUE(load_references(file, "a100-80gb-sxm4").empty());
  const auto dir = std::filesystem::temp_directory_path() / "rooflab-references-test";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "references.json")
      << R"({"runs": [{"id": "x", "gpu": "h100-sxm", "date": "2026-01-01", "references": {"cublas_sgemm": )"
      << R"({"baseline": "cublas_sgemm_same_run", "name": "cuBLAS SGEMM"}}}]})";
  EXPECT_THROW(load_references(dir / "references.json", "h100-sxm"), std::runtime_error);
  EXPECT_THROW(load_references(dir / "missing.json", "h100-sxm"), std::runtime_error);
  std::filesystem::remove_all(dir);
  // Every baseline a rule of any lab names is one the H100 and the H200 runs measured (so the hint can state it): read
  // from the labs' thresholds.json, so a new rule with a new baseline fails here until a run measures it.
  std::vector<rooflab::Baseline> baselines;
  for (const auto& lab : std::filesystem::directory_iterator(std::filesystem::path(ROOFLAB_SOURCE_DIR) / "labs")) {
    if (!std::filesystem::exists(lab.path() / "thresholds.json")) continue;
    for (const auto& rule : rooflab::lab_thresholds(lab.path().filename().string().substr(0, 2))) {
      if (rule.baseline) baselines.push_back(*rule.baseline);
    }
  }
  ASSERT_GE(baselines.size(), 4u) << "cuBLAS SGEMM, cuBLAS FP16 GEMM, the naive path, cuBLAS's FP16 GEMV at least";
  for (const auto* gpu : {"h100-sxm", "h200-sxm"}) {
    const auto refs = load_references(file, gpu);
    for (const auto& b : baselines) {
      EXPECT_TRUE(std::any_of(refs.begin(), refs.end(), [&](const MeasuredReference& r) { return r.baseline == b.name; }))
          << gpu << ": no reference for " << b.name;
    }
  }
}

}  // namespace
