#include "predictions.hpp"

#include "process.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <rooflab/specs.hpp>

#include <algorithm>
#include <filesystem>
#include <stdexcept>

namespace rooflab::grader {

namespace fs = std::filesystem;

namespace {

// The perf tests a prediction goes beside: owed to a GPU, or measured on one.
bool annotated(const TestResult& t) {
  const bool measured = t.status == Status::passed || t.status == Status::failed;
  return t.kind == "perf" && (t.status == Status::needs_gpu || measured);
}

}  // namespace

Predictions parse_predictions(const std::string& inspect_output) {
  // The object is the last thing the binary prints; a backend's note may come before it.
  const auto first = inspect_output.find("{\n");
  const auto last = inspect_output.rfind('}');
  if (first == std::string::npos || last == std::string::npos || last < first) {
    throw std::runtime_error("the static binary's --rooflab-inspect --json printed no JSON object");
  }
  Predictions out;
  try {
    const auto j = nlohmann::json::parse(inspect_output.substr(first, last - first + 1));
    out.gpu = j.value("gpu_name", j.value("gpu", std::string()));
    for (const auto& k : j.at("kernels")) {
      const auto& p = k.at("prediction");
      if (p.is_null()) continue;
      KernelPrediction kp;
      kp.kernel = k.at("kernel").get<std::string>();
      kp.graded_by = k.value("graded_by", std::vector<std::string>{});
      kp.fraction = p.at("fraction").get<double>();
      kp.roof = p.at("roof").get<std::string>();
      kp.limiter = p.at("limiter").get<std::string>();
      out.kernels.push_back(std::move(kp));
    }
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(fmt::format("the static binary's --rooflab-inspect --json is malformed: {}", e.what()));
  }
  return out;
}

void add_predictions(const rubric::Rubric& rubric, const Predictions& predictions, std::vector<TestResult>& tests) {
  for (auto& t : tests) {
    if (!annotated(t)) continue;
    const auto entry = std::find_if(rubric.tests.begin(), rubric.tests.end(),
                                    [&](const rubric::Entry& e) { return e.test == t.id; });
    if (entry == rubric.tests.end()) continue;
    std::string predicted;
    for (const auto& k : predictions.kernels) {
      const bool grades = std::any_of(k.graded_by.begin(), k.graded_by.end(), [&](const std::string& q) {
        return std::find(entry->thresholds.begin(), entry->thresholds.end(), q) != entry->thresholds.end();
      });
      if (!grades) continue;
      predicted += fmt::format("{}{} {:.0f}% of the {}, limited by {}", predicted.empty() ? "" : "; ", k.kernel,
                               100 * k.fraction, k.roof, k.limiter);
    }
    if (predicted.empty()) continue;
    // Owed: what to expect of a GPU. Measured: the model beside the measurement, to hold one against the other.
    const std::string what =
        t.status == Status::needs_gpu ? "prediction on" : "beside this measurement, the prediction on";
    t.output += fmt::format("{}{} {} (the performance model, not a measurement; no points): {}. The test: {}. "
                            "Evidence: ./rooflab inspect {}\n",
                            t.output.empty() || t.output.back() == '\n' ? "" : "\n", what, predictions.gpu,
                            predicted, entry->checks, rubric.lab);
  }
}

std::string prediction_gpu(bool gpu_present, const std::string& gpu_name) {
  if (!gpu_present) return "h100-sxm";
  const GpuSpec* g = find_gpu_by_cuda_name(gpu_name);
  return g != nullptr ? g->id : "";
}

void predict_perf_tests(const Lab& lab, const std::vector<Binary>& binaries, const std::string& gpu_id,
                        std::vector<TestResult>& tests) {
  const auto first = std::find_if(tests.begin(), tests.end(), annotated);
  if (gpu_id.empty() || first == tests.end()) return;
  const auto binary = std::find_if(binaries.begin(), binaries.end(), [](const Binary& b) {
    return b.kind == "static" && b.unavailable.empty() && fs::exists(b.path);
  });
  if (binary == binaries.end()) return;
  // The binary runs the student's launchers on the CPU backend (to learn which kernels they start), so it runs
  // as the tests do: in the grade's sandbox, with a time limit.
  ProcessOptions options;
  options.timeout_s = 120;
  options.env["ROOFLAB_EMU_QUIET"] = "1";
  const ProcessResult r = run_process({binary->path.string(), "--rooflab-inspect", "--gpu", gpu_id, "--json"}, options);
  try {
    if (!r.ok()) throw std::runtime_error(fmt::format("{} --rooflab-inspect --json failed", binary->target));
    add_predictions(rubric::load(lab.rubric), parse_predictions(r.output), tests);
  } catch (const std::exception& e) {
    first->output += fmt::format("{}no prediction of the performance model: {}\n",
                                 first->output.empty() || first->output.back() == '\n' ? "" : "\n", e.what());
  }
}

}  // namespace rooflab::grader
