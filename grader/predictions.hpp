// The performance model beside the perf tests (issue 37): on a machine without a GPU, each perf test owed to a
// GPU gets a line with what the model predicts for the kernels it grades on an H100 SXM, and what the test asks
// (its rubric line), e.g.
//
//   prediction on NVIDIA H100 SXM5 (the performance model, not a measurement; no points): lab01::copy_kernel
//   97% of the copy ceiling, limited by loads in flight. The test: copy GB/s (2 arrays): full points at 90% of
//   the copy ceiling, none at or below 50%. Evidence: ./rooflab inspect 01
//
// On a GPU, each perf test that ran gets the prediction for that GPU beside its measurement ("beside this
// measurement, the prediction on ..."), so that a student, and the course, hold the one against the other.
//
// The predictions come from the lab's static binary (`--rooflab-inspect --json`: common/src/inspect.cpp and
// perf_model.cpp), which registers the lab's kernels and the thresholds.json quantities each one is graded
// by; a perf test's rubric entry names its quantities. Nothing here changes a score or a status.
#pragma once

#include "manifest.hpp"
#include "runner.hpp"

#include <rooflab/detail/rubric.hpp>
#include <rooflab/testing/plot.hpp>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace rooflab::grader {

struct KernelPrediction {
  std::string kernel;                  // "lab01::copy_kernel"
  std::string variant;                 // the registry id it implements: "copy"
  std::vector<std::string> graded_by;  // thresholds.json quantities: {"copy"}
  double fraction = 0;                 // of its roof
  std::string roof;                    // "copy ceiling"
  std::string limiter;                 // "loads in flight"
  double flops = 0, bytes = 0;         // its declared work at the timed size
  double time_s = 0;                   // the predicted time of that work
  double roof_time_s = 0;              // the time of that work at its roof
};

// What a course GPU run measured of a baseline that perf tests time in the same run (cuBLAS at the rung's shape,
// the naive attention path, cuBLAS's FP16 GEMV): data/references.json. The model does not predict cuBLAS; with
// these a prediction is stated in its test's terms ("25% of cuBLAS's FP16 GEMM as the course's H100 run measured
// it") instead of only against the kernel's roof, which is not what such a test compares with.
struct MeasuredReference {
  std::string baseline;      // the thresholds.json baseline it stands for: "cublas_hgemm_same_run"
  std::string name;          // "cuBLAS's FP16 GEMM"
  std::string run;           // "NVIDIA H100 SXM5 run of 2026-11-24"
  double flops = 0;          // a FLOP rate, or
  double time_s = 0;         // a time at the test's shape, or
  double bytes = 0;          // bytes moved at
  double copy_fraction = 0;  // this share of the copy ceiling
};

struct Predictions {
  std::string gpu;     // the GPU's name, as data/gpus.json has it
  std::string gpu_id;  // its id there: "h100-sxm"
  std::vector<KernelPrediction> kernels;
  std::vector<MeasuredReference> references;  // of the newest course run on that GPU (none: no run there)
  bool references_read = true;  // false: data/references.json could not be read, and no test's terms are stated
};

// The references of the newest run on the GPU `gpu_id` in `file` (data/references.json); none where no run was on
// it. Throws std::runtime_error naming the file and what is wrong when it cannot be read.
std::vector<MeasuredReference> load_references(const std::filesystem::path& file, const std::string& gpu_id);

// Reads `--rooflab-inspect --json` output (its JSON object, whatever the process printed around it); the
// kernels without a prediction are left out. Throws std::runtime_error when no JSON object can be read.
Predictions parse_predictions(const std::string& inspect_output);

// Adds the prediction line to each perf test of `tests` that is owed to a GPU (needs_gpu) or was measured
// (passed, failed) and whose rubric entry names a quantity some predicted kernel is graded by.
void add_predictions(const rubric::Rubric& rubric, const Predictions& predictions, std::vector<TestResult>& tests);

// The predictions of one grade: run once, after the lab's static binary is built and before its other binaries
// run, so that their plots can show them (hand_over_model in pipeline.cpp writes `json` to the report folder and
// names it to the tests in ROOFLAB_MODEL_PREDICTIONS), and the perf tests' lines come from the same run.
struct ModelRun {
  std::optional<Predictions> predictions;
  std::string json;   // the binary's JSON object, as it printed it
  std::string error;  // why there are none ("" where none was asked for: no GPU id, no static binary)
  std::string references_error;  // why data/references.json could not be read (the predictions stand without it)
  std::string plot;   // the file of the lab's roofline of predictions in the report folder, once drawn
};

// Runs the lab's static binary among `binaries` (built, not unavailable) for its predictions on the GPU
// `gpu_id` of data/gpus.json (the grade's GPU, or the H100 SXM where there is none: prediction_gpu). Nothing
// when `gpu_id` is empty or the binary is not there.
ModelRun run_model(const std::vector<Binary>& binaries, const std::string& gpu_id);

// Adds `model`'s predictions to the perf tests (add_predictions) and names its plot in the first perf test owed or
// measured, or where its run failed puts a note there. Does nothing when no prediction was asked for or no perf test is owed or measured.
void predict_perf_tests(const Lab& lab, const ModelRun& model, std::vector<TestResult>& tests);

// The model's roofline of a lab (issue 37: each kernel at its predicted point, hollow): every predicted kernel that
// does math at its declared intensity (FLOP per DRAM byte at the timed size) and predicted TFLOP/s, labelled with
// its registry id, on the datasheet roofs of the GPU it was predicted for; nullopt when no kernel does math or the
// GPU is unknown. A model, not a measurement: the plot says so under its title.
std::optional<Plot> model_roofline(const std::string& lab_id, const Predictions& predictions);

// The GPU a grade's predictions are for: the one found here when data/gpus.json knows it ("" when it does not:
// a prediction for another GPU would say nothing beside this one's measurements), else the H100 SXM.
std::string prediction_gpu(bool gpu_present, const std::string& gpu_name);

}  // namespace rooflab::grader
