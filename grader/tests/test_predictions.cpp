// The performance model beside the perf tests a grade without a GPU leaves owed (predictions.hpp): which
// tests get a line, what it says, and that nothing else changes.
#include "predictions.hpp"

#include <gtest/gtest.h>

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
