#include "predictions.hpp"

#include "process.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <rooflab/perf_model.hpp>
#include <rooflab/specs.hpp>
#include <rooflab/testing/ceiling.hpp>
#include <rooflab/testing/roofline_plot.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace rooflab::grader {

namespace fs = std::filesystem;

namespace {

// Adds `line` (ending in a newline) to a test's output, on a line of its own.
void append_line(std::string& output, const std::string& line) {
  output += (output.empty() || output.back() == '\n' ? "" : "\n") + line;
}

// The perf tests a prediction goes beside: owed to a GPU, or measured on one.
bool annotated(const TestResult& t) {
  const bool measured = t.status == Status::passed || t.status == Status::failed;
  return t.kind == "perf" && (t.status == Status::needs_gpu || measured);
}

// Kernel `k`'s prediction in the terms of rule `t`, where the rule compares with a baseline the test times in the
// same run (cuBLAS, the naive path): the kernel's FLOP rate where the rule counts FLOPs, and the figure the test
// computes, against what the course's run on this GPU measured of the baseline (`refs`; the model does not predict
// cuBLAS). "" for a rule graded against a roof, which the prediction is already stated against.
std::string in_test_terms(const KernelPrediction& k, const Threshold& t, const std::vector<MeasuredReference>& refs) {
  if (!t.baseline || !(k.time_s > 0)) return "";
  const Baseline& b = *t.baseline;
  std::vector<std::string> parts;
  if (b.unit == "FLOP/s" && k.flops > 0) parts.push_back(units::readable(k.flops / k.time_s, "FLOP/s"));
  const auto ref = std::find_if(refs.begin(), refs.end(), [&](const MeasuredReference& r) { return r.baseline == b.name; });
  if (ref == refs.end()) {
    parts.push_back("no course run has measured the test's baseline on this GPU: " + b.what);
    return fmt::format("{}", fmt::join(parts, "; "));
  }
  // The baseline's time for the kernel's work: a rate at the same work, a time at the test's shape, or bytes at a
  // share of the copy ceiling (the kernel's roof, where it is the copy ceiling, is that ceiling on this GPU).
  double base_s = 0;
  std::string measured;
  if (ref->flops > 0 && k.flops > 0) {
    base_s = k.flops / ref->flops;
    measured = units::readable(ref->flops, "FLOP/s");
  } else if (ref->time_s > 0) {
    base_s = ref->time_s;
    measured = perf::time_text(ref->time_s);
  } else if (ref->bytes > 0 && ref->copy_fraction > 0 && k.roof == "copy ceiling" && k.bytes > 0 && k.roof_time_s > 0) {
    base_s = ref->bytes / (ref->copy_fraction * k.bytes / k.roof_time_s);
    measured = fmt::format("{:.0f}% of the copy ceiling", 100 * ref->copy_fraction);
  }
  if (!(base_s > 0)) return fmt::format("{}", fmt::join(parts, "; "));
  const double figure = base_s / k.time_s;
  // A baseline that caps (cuBLAS: no honest kernel passes it) as a share of it; one to beat as a speedup over it.
  parts.push_back(b.caps ? fmt::format("{:.0f}% of {} as the course's {} measured it ({})", 100 * figure, ref->name,
                                       ref->run, measured)
                         : fmt::format("{:.2f}x the speed of {} as the course's {} timed it ({})", figure, ref->name,
                                       ref->run, measured));
  return fmt::format("{}", fmt::join(parts, ", "));
}

// The rules of `quantities` in lab `lab` (thresholds.json), those that load; a rule that does not is left out of
// the hint (the grade's own checks name it).
std::vector<const Threshold*> rules_of(const std::string& lab, const std::vector<std::string>& quantities) {
  std::vector<const Threshold*> out;
  for (const auto& q : quantities) {
    try {
      out.push_back(&threshold(lab, q));
    } catch (const std::exception&) {
    }
  }
  return out;
}

}  // namespace

std::vector<MeasuredReference> load_references(const fs::path& file, const std::string& gpu_id) {
  std::vector<MeasuredReference> out;
  try {
    std::ifstream in(file);
    if (!in) throw std::runtime_error("cannot be read");
    const auto j = nlohmann::json::parse(in);
    const nlohmann::json* newest = nullptr;
    for (const auto& run : j.at("runs")) {
      if (run.at("gpu").get<std::string>() != gpu_id) continue;
      if (newest == nullptr || run.at("date").get<std::string>() > newest->at("date").get<std::string>()) newest = &run;
    }
    if (newest == nullptr) return out;
    const std::string run = fmt::format("{} run of {}", gpu(gpu_id).name, newest->at("date").get<std::string>());
    for (const auto& [key, r] : newest->at("references").items()) {
      if (!r.contains("baseline")) continue;  // not a test's baseline (the FMA ceiling, a kernel's own time)
      MeasuredReference m;
      m.baseline = r.at("baseline").get<std::string>();
      m.name = r.at("name").get<std::string>();
      m.run = run;
      m.flops = r.value("flops", 0.0);
      m.time_s = r.value("time_s", 0.0);
      m.bytes = r.value("bytes", 0.0);
      m.copy_fraction = r.value("copy_fraction", 0.0);
      if (!(m.flops > 0) && !(m.time_s > 0) && !(m.bytes > 0 && m.copy_fraction > 0)) {
        throw std::runtime_error(fmt::format("{}: no flops, time_s, or bytes and copy_fraction", key));
      }
      out.push_back(std::move(m));
    }
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("{}: {}", file.string(), e.what()));
  }
  return out;
}

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
    out.gpu_id = j.value("gpu", std::string());
    for (const auto& k : j.at("kernels")) {
      const auto& p = k.at("prediction");
      if (p.is_null()) continue;
      KernelPrediction kp;
      kp.kernel = k.at("kernel").get<std::string>();
      kp.graded_by = k.value("graded_by", std::vector<std::string>{});
      kp.fraction = p.at("fraction").get<double>();
      kp.roof = p.at("roof").get<std::string>();
      kp.limiter = p.at("limiter").get<std::string>();
      kp.variant = k.value("variant", std::string());
      kp.flops = k.value("flops", 0.0);
      kp.bytes = k.value("bytes", 0.0);
      kp.time_s = p.value("time_s", 0.0);
      kp.roof_time_s = p.value("roof_time_s", 0.0);
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
    const auto rules = predictions.references_read ? rules_of(rubric.lab, entry->thresholds)
                                                   : std::vector<const Threshold*>{};
    for (const auto& k : predictions.kernels) {
      const bool grades = std::any_of(k.graded_by.begin(), k.graded_by.end(), [&](const std::string& q) {
        return std::find(entry->thresholds.begin(), entry->thresholds.end(), q) != entry->thresholds.end();
      });
      if (!grades) continue;
      // Its time too: a test that grades a ratio of two kernels' times (GQA 8 over GQA 1, batch 8 over batch 1)
      // is read from them.
      const std::string time = k.time_s > 0 ? " (" + perf::time_text(k.time_s) + ")" : "";
      predicted += fmt::format("{}{} {:.0f}% of the {}{}, limited by {}", predicted.empty() ? "" : "; ", k.kernel,
                               100 * k.fraction, k.roof, time, k.limiter);
      // In the test's terms where it compares with a baseline of the same run (the rule of the kernel's quantity).
      for (const Threshold* rule : rules) {
        if (std::find(k.graded_by.begin(), k.graded_by.end(), rule->quantity) == k.graded_by.end()) continue;
        if (const std::string terms = in_test_terms(k, *rule, predictions.references); !terms.empty()) {
          predicted += " (in the test's terms: " + terms + ")";
        }
      }
    }
    if (predicted.empty()) continue;
    // Owed: what to expect of a GPU. Measured: the model beside the measurement, to hold one against the other.
    const std::string what =
        t.status == Status::needs_gpu ? "prediction on" : "beside this measurement, the prediction on";
    append_line(t.output, fmt::format("{} {} (the performance model, not a measurement; no points): {}. The test: {}. "
                                      "Evidence: ./rooflab inspect {}\n",
                                      what, predictions.gpu, predicted, entry->checks, rubric.lab));
  }
}

std::string prediction_gpu(bool gpu_present, const std::string& gpu_name) {
  if (!gpu_present) return "h100-sxm";
  const GpuSpec* g = find_gpu_by_cuda_name(gpu_name);
  return g != nullptr ? g->id : "";
}

ModelRun run_model(const std::vector<Binary>& binaries, const std::string& gpu_id) {
  ModelRun out;
  if (gpu_id.empty()) return out;
  const auto binary = std::find_if(binaries.begin(), binaries.end(), [](const Binary& b) {
    return b.kind == "static" && b.unavailable.empty() && fs::exists(b.path);
  });
  if (binary == binaries.end()) return out;
  // The binary runs the student's launchers on the CPU backend (to learn which kernels they start), so it runs
  // as the tests do: in the grade's sandbox, with a time limit.
  ProcessOptions options;
  options.timeout_s = 120;
  options.env["ROOFLAB_EMU_QUIET"] = "1";
  const ProcessResult r = run_process({binary->path.string(), "--rooflab-inspect", "--gpu", gpu_id, "--json"}, options);
  try {
    if (!r.ok()) throw std::runtime_error(fmt::format("{} --rooflab-inspect --json failed", binary->target));
    out.predictions = parse_predictions(r.output);
    out.json = r.output.substr(r.output.find("{\n"));
  } catch (const std::exception& e) {
    out.predictions.reset();
    out.error = e.what();
  }
  // The course runs' references, for the predictions in the tests' terms: without them the predictions stand
  // against their roofs alone, and the grade says why.
  if (out.predictions) {
    try {
      out.predictions->references = load_references(data_dir() / "references.json", gpu_id);
    } catch (const std::exception& e) {
      out.predictions->references_read = false;
      out.references_error = e.what();
    }
  }
  return out;
}

void predict_perf_tests(const Lab& lab, const ModelRun& model, std::vector<TestResult>& tests) {
  const auto first = std::find_if(tests.begin(), tests.end(), annotated);
  if (first == tests.end()) return;
  if (model.predictions) {
    add_predictions(rubric::load(lab.rubric), *model.predictions, tests);
    if (!model.plot.empty()) {
      append_line(first->output, fmt::format("plot: {} in the report directory: the model's predictions on the {} "
                                             "roofline, hollow points (no measurement)\n",
                                             model.plot, model.predictions->gpu));
    }
    if (!model.references_error.empty()) {
      append_line(first->output, fmt::format("the course runs' references could not be read, so no prediction is "
                                             "stated in a test's terms: {}\n", model.references_error));
    }
  } else if (!model.error.empty()) {
    append_line(first->output, fmt::format("no prediction of the performance model: {}\n", model.error));
  }
}

std::optional<Plot> model_roofline(const std::string& lab_id, const Predictions& predictions) {
  const auto& known = gpus();
  const auto g = std::find_if(known.begin(), known.end(), [&](const GpuSpec& s) { return s.id == predictions.gpu_id; });
  if (g == known.end()) return std::nullopt;
  auto p = roofline_plot(fmt::format("Lab {}: the performance model's prediction on the {}", lab_id, g->name), 0.01,
                         4000, "hollow points: predicted from the compiled code (a model, not a measurement)",
                         "predicted TFLOP/s", "arithmetic intensity from DRAM, as each kernel declares it (FLOP/byte)");
  add_datasheet_roofs(p, *g);
  for (const auto& k : predictions.kernels) {
    if (!(k.flops > 0) || !(k.bytes > 0) || !(k.time_s > 0)) continue;
    const std::string name = k.variant.empty() ? k.kernel : k.variant;
    p.series.push_back({name, {{k.flops / k.bytes, k.flops / k.time_s / 1e12}}, "points pt 6 ps 2"});
  }
  if (p.series.empty()) return std::nullopt;
  return p;
}

}  // namespace rooflab::grader
