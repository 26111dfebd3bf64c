#include "commands.hpp"

#include "pipeline.hpp"
#include "watch.hpp"

#include <rooflab/inspect.hpp>
#include <rooflab/specs.hpp>

#if defined(ROOFLAB_HAVE_CUDA)
#include <rooflab/testing/calibration.hpp>
#include <rooflab/testing/device.hpp>
#include <rooflab/testing/device_info.hpp>
#endif

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <iostream>
#include <map>

#include <unistd.h>

namespace rooflab::grader {

namespace fs = std::filesystem;

namespace {

// Says that a --kind or --test run is not a grade, where its results go, and adds that to the header.
void announce_focused(const GradeArgs& a, const GradePlan& plan, std::string& header) {
  if (!plan.focused) return;
  const std::string what = fmt::format("{}{}{}", a.kinds.empty() ? "" : "--kind " + fmt::format("{}", fmt::join(a.kinds, ",")),
                                       !a.kinds.empty() && !a.test.empty() ? " " : "",
                                       a.test.empty() ? "" : "--test " + a.test);
  header += fmt::format("\nFocused run ({}): only some tests ran; this is not a grade.", what);
  fmt::print("rooflab: FOCUSED RUN ({}): only some tests run; this is NOT A GRADE. Its results go to {}; the "
             "last full grade's {} is left as it was.\n", what, plan.json_path.string(),
             (plan.report_dir / "results.json").string());
}

}  // namespace

// plan -> build -> run -> verify -> collect (pipeline.hpp), once, or again after every save with --watch.
int cmd_grade(const GradeArgs& a) {
  require_numeric_seed(a.seed);
  const Manifest base = load_manifest(own_build_dir());
  GradePlan plan = plan_grade(a, base);

  // The build and every test binary run sandboxed (sandbox.hpp); the build may write the build tree.
  const ScratchRoot scratch;
  GradingTree sandboxed{source_dir(), plan.tree.build_dir, plan.student_dir, {}, scratch.path(), harness_dirs()};
  GradingTree for_build = sandboxed;  // the hidden tests are compiled; no test process may read them
  if (a.hidden_tests) for_build.readable.push_back(plan.hidden_tests);
  std::optional<Sandbox> build_box;
  if (!a.no_sandbox) build_box = build_sandbox(for_build);
  if (const auto failed = configure_stage(plan, build_box, a.verbose)) return *failed;
  const Manifest built = load_manifest(plan.tree.build_dir);

  GradeRun run{a, plan, built, {}, build_box, "", "", !a.no_color && isatty(STDOUT_FILENO) != 0};
  run.options.timeout_s = a.timeout_s;
  run.options.verbose = a.verbose;
  run.options.gpu_present = plan.gpu.present;
  run.options.env["ROOFLAB_REPORT_DIR"] = fs::absolute(plan.report_dir).string();
  if (a.seed) run.options.env["ROOFLAB_SEED"] = *a.seed;
  run.header = run_header(plan, a.no_sandbox, run.options, sandboxed);
  run.gpu_detail = plan.gpu.present ? "" : "\nGPU detection: " + plan.gpu.description + ".";
  std::optional<Sandbox> test_box;
  if (!a.no_sandbox) {
    test_box = test_sandbox(sandboxed);
    // Plots are written to the scratch and copied out: a test never writes the report directory itself.
    test_box->collect["ROOFLAB_REPORT_DIR"] = fs::absolute(plan.report_dir);
  }
  const SandboxScope in_sandbox(test_box);  // the runner's processes
  fmt::print("{}\n", run.header);
  announce_focused(a, plan, run.header);

  const auto grade_once = [&] {
    std::vector<LabResults> all;
    for (const Lab* wanted : plan.labs) all.push_back(grade_lab(run, built.lab(wanted->id)));
    collect_grade(run, all);
  };
  grade_once();
  return a.watch ? watch_and_regrade(a, plan, grade_once) : kExitOk;
}

// The build stage of a grade for one static binary, then its run with --rooflab-inspect: what the compiler
// said about the student's (or the solutions') kernels.
namespace {

// The main variant's binary of `kind` that this build can make, or null.
const Binary* buildable(const Lab& lab, std::string_view kind) {
  for (const auto& b : lab.variant("main").binaries) {
    if (b.kind == kind && b.unavailable.empty()) return &b;
  }
  return nullptr;
}

}  // namespace

WithoutStubs without_stub_failures(const std::string& gtest_output) {
  // GoogleTest prints an escaping exception as two lines ("unknown file: Failure", then `C++ exception with
  // description "<what()>" thrown in the test body.`) and the test's "[  FAILED  ] Suite.Name (N ms)" line after
  // them; rooflab::NotImplemented's what() is "not implemented: <step> (the student file still holds the stub)".
  static constexpr std::string_view kStub = "C++ exception with description \"not implemented: ";
  static constexpr std::string_view kStubEnd = " (the student file still holds the stub)";
  WithoutStubs out;
  std::vector<std::string> lines;
  std::size_t at = 0;
  while (at < gtest_output.size()) {
    const std::size_t end = gtest_output.find('\n', at);
    lines.push_back(gtest_output.substr(at, end == std::string::npos ? std::string::npos : end - at));
    at = end == std::string::npos ? gtest_output.size() : end + 1;
  }
  // GoogleTest's summary (counts, the list of failed tests): kept where something else failed, left out where only
  // stubs did.
  auto summary = [](const std::string& line) {
    return line.rfind("[==========] ", 0) == 0 || line.rfind("[  PASSED  ] ", 0) == 0 ||
           (line.rfind("[  FAILED  ] ", 0) == 0 && line.find(" (") == std::string::npos) ||
           line.find(" FAILED TEST") != std::string::npos;
  };
  std::vector<std::string> kept;
  bool stub = false;  // the test running now failed by a stub
  for (const auto& line : lines) {
    if (line.rfind("[  FAILED  ] ", 0) == 0 && line.find(" (") != std::string::npos) {  // one test's verdict
      if (!stub) {
        ++out.other_failures;
        kept.push_back(line);
      }
      stub = false;
      continue;
    }
    if (line.rfind(kStub, 0) == 0) {
      const std::size_t from = kStub.size();
      const std::size_t to = line.find(kStubEnd, from);
      if (to != std::string::npos) {
        std::string step = line.substr(from, to - from);
        if (std::find(out.stubs.begin(), out.stubs.end(), step) == out.stubs.end()) out.stubs.push_back(std::move(step));
        stub = true;
        if (!kept.empty() && kept.back() == "unknown file: Failure") kept.pop_back();
        continue;
      }
    }
    kept.push_back(line);
  }
  for (const auto& line : kept) {
    if (out.other_failures > 0 || !summary(line)) out.text += line + "\n";
  }
  // What did not end in a newline does not gain one.
  if (!gtest_output.empty() && gtest_output.back() != '\n' && !out.text.empty() && out.text.back() == '\n') {
    out.text.pop_back();
  }
  return out;
}

namespace {

// Inspect's traffic section: the lab's traffic binary (its kernels on the CPU backend, every global load and
// store recorded and counted as a GPU's memory system counts them; docs/cpu-mode.md, "Memory traffic") run
// with ROOFLAB_TRAFFIC_SITES=1, which adds each access site's table to each kernel's summary line. The
// figures are modelled, not measured; a lab without tests/traffic.cpp has no section. Returns an exit code.
int inspect_traffic(const GradePlan& plan, const Lab& lab, const GradingTree& sandboxed) {
  const Binary* traffic = buildable(lab, "traffic");
  if (traffic == nullptr) {
    fmt::print("\nMemory traffic: lab {} has no traffic hints (tests/traffic.cpp), so nothing is modelled.\n", lab.id);
    return kExitOk;
  }
  if (const std::string error = compile_binary(plan, *traffic, false, build_sandbox(sandboxed)); !error.empty()) {
    std::cerr << "rooflab inspect: " << error << "\n";
    return kExitFailed;
  }
  fmt::print("\nMemory traffic, modelled on the CPU backend (not measured; one line per kernel, then each access "
             "site):\n");
  std::fflush(stdout);
  const ProcessResult p = run_process({traffic->path.string(), "--gtest_brief=1"},
                                      {.timeout_s = 300,
                                       .env = {{"ROOFLAB_TRAFFIC_SITES", "1"}, {"ROOFLAB_EMU_QUIET", "1"}},
                                       .sandbox = test_sandbox(sandboxed)});
  if (p.ok()) {
    std::fputs(p.output.c_str(), stdout);
    return kExitOk;
  }
  // A launcher not written yet has no traffic to model: named in a line, not a failure trace. Anything else that
  // failed (a crash, a timeout, a hint's check) is shown as it came, and inspect says so.
  const WithoutStubs w = without_stub_failures(p.output);
  const bool only_stubs = !w.stubs.empty() && w.other_failures == 0 && p.exit_code == 1 && !p.signaled &&
                          !p.timed_out && !p.failed_to_start;
  std::fputs((only_stubs ? w.text : p.output).c_str(), stdout);
  if (!w.stubs.empty()) {
    fmt::print("not written yet, so not modelled: {}\n", fmt::join(w.stubs, ", "));
  }
  if (only_stubs) return kExitOk;
  std::cerr << "rooflab inspect: a traffic hint failed (above); it is a hint, worth no points\n";
  return kExitFailed;
}

// The GPU inspect predicts for when none is named: this machine's, when data/gpus.json knows it, else the H100 SXM
// (what most students rent, and the GPU the model was checked on).
std::string default_inspect_gpu() {
  const GpuState here = detect_gpu();
  const GpuSpec* g = here.present ? find_gpu_by_cuda_name(here.name) : nullptr;
  return g != nullptr ? g->id : "h100-sxm";
}

// The copy ceiling `rooflab calibrate` cached for this machine's GPU, when inspect predicts for that GPU: the
// prediction's memory roof is then the measured one. Never measures (inspect stays seconds long).
std::optional<double> calibrated_copy_ceiling([[maybe_unused]] const std::string& gpu_id) {
#if defined(ROOFLAB_HAVE_CUDA)
  const GpuState here = detect_gpu();
  const GpuSpec* g = here.present ? find_gpu_by_cuda_name(here.name) : nullptr;
  if (g == nullptr || g->id != gpu_id) return std::nullopt;
  try {
    if (const auto c = rooflab::cached_ceilings(rooflab::query_device(0)); c && c->copy_gbps > 0) return c->copy_gbps;
  } catch (const std::exception&) {
    // The device could not be queried: the datasheet roof, as on a machine without a GPU (as with no cache).
  }
#endif
  return std::nullopt;
}

}  // namespace

int cmd_inspect(const InspectArgs& a) {
  const Manifest base = load_manifest(own_build_dir());
  const Lab& wanted = base.lab(a.lab);
  GradePlan plan;
  plan.tree = {source_dir(), own_build_dir(), "default", {{"ROOFLAB_STUDENT_DIR", (source_dir() / "labs").string()}}};
  if (a.solutions) plan.tree = {source_dir(), source_dir() / "build" / "solutions", "solutions", {}};
  plan.student_dir = a.solutions ? source_dir() / "solutions" : base.student_dir;
  // Student code is compiled and its static binary run: both sandboxed, as in grade.
  const ScratchRoot scratch;
  const GradingTree sandboxed{source_dir(), plan.tree.build_dir, plan.student_dir, {}, scratch.path(), harness_dirs()};
  if (a.solutions) {
    // As a grade configures the tree (configure_if_needed): with its stamp, so that a later grade in the same tree
    // (a submission's reference run, say) sees how it was configured and does not take it for its own.
    const ProcessResult conf = configure_if_needed(plan.tree, false, build_sandbox(sandboxed));
    if (!conf.ok()) {
      std::cerr << conf.output << "\nrooflab: configuring the build failed\n";
      return kExitHarness;
    }
  }
  const Manifest m = load_manifest(plan.tree.build_dir);
  const Lab& lab = m.lab(wanted.id);
  const Binary* stat = buildable(lab, "static");
  if (stat == nullptr) {
    std::cerr << "rooflab inspect: lab " << lab.id << " has no static binary (this build has no CUDA compiler)\n";
    if (!a.json && buildable(lab, "traffic") != nullptr) inspect_traffic(plan, lab, sandboxed);
    return kExitNoGpu;
  }
  if (const std::string error = compile_binary(plan, *stat, false, build_sandbox(sandboxed)); !error.empty()) {
    std::cerr << "rooflab inspect: " << error << "\n";
    return kExitFailed;
  }
  const std::string gpu_id = a.gpu.empty() ? default_inspect_gpu() : a.gpu;
  std::vector<std::string> argv = {stat->path.string(), "--rooflab-inspect", "--gpu", gpu_id};
  if (const auto copy = calibrated_copy_ceiling(gpu_id)) {
    argv.insert(argv.end(), {"--copy-ceiling-gbps", fmt::format("{:.1f}", *copy)});
  }
  if (a.n > 0) argv.insert(argv.end(), {"--n", fmt::format("{:g}", a.n)});
  if (!a.arch.empty()) argv.insert(argv.end(), {"--arch", a.arch});
  if (a.json) argv.push_back("--json");
  Sandbox box = test_sandbox(sandboxed);
  if (a.sass) {
    argv.push_back("--sass");
    // An nvdisasm outside the toolkit (ROOFLAB_NVDISASM: a wheel's, say) runs in the sandbox too, and so does the
    // copy `./rooflab test` fetched into a build of this course where the toolkit lacks one (<build>/nvdisasm: the
    // static binary looks in its own build, then in the builds beside it; rooflab::inspect::fetched_nvdisasm).
    if (const char* tool = std::getenv("ROOFLAB_NVDISASM"); tool != nullptr && *tool == '/') {
      box.read_exec.push_back(std::filesystem::path(tool).parent_path());
    }
    for (const auto& fetched : rooflab::inspect::fetched_nvdisasm_places(plan.tree.build_dir)) {
      std::error_code ec;
      if (std::filesystem::is_regular_file(fetched, ec)) box.read_exec.push_back(fetched.parent_path());
    }
  }
  const ProcessResult p = run_process(argv, {.timeout_s = 120, .sandbox = box});
  std::fputs(p.output.c_str(), p.ok() ? stdout : stderr);
  if (!p.ok()) return p.exit_code == 2 ? kExitUsage : kExitFailed;
  // --json keeps its output one JSON document; the traffic section is text.
  return a.json || !a.traffic ? kExitOk : inspect_traffic(plan, lab, sandboxed);
}

int cmd_list(bool json) {
  const Manifest m = load_manifest(own_build_dir());
  nlohmann::json out = nlohmann::json::array();
  if (!json) fmt::print("{:<4} {:<28} {:>9} {:>6} {:>5} {:>5} {:>7}  {}\n", "lab", "title", "analytic", "emu", "gpu", "perf",
                        "static", "status");
  for (const auto& lab : m.labs) {
    std::map<std::string, double> points;
    for (const auto& b : lab.variant("main").binaries) {
      for (const auto& t : b.tests()) points[t.kind] += t.points;
    }
    const int todos = count_todos(lab.variant("main").student_dir, lab.student_files);
    const std::string status = todos == 0 ? "no stubs left" : fmt::format("{} stub steps left", todos);
    if (json) {
      out.push_back({{"id", lab.id}, {"name", lab.name}, {"title", lab.title}, {"points", points}, {"todos", todos}});
    } else {
      fmt::print("{:<4} {:<28} {:>9} {:>6} {:>5} {:>5} {:>7}  {}\n", lab.id, lab.title, points["analytic"], points["emu"],
                 points["gpu"], points["perf"], points["static"], status);
    }
  }
  if (json) {
    std::cout << out.dump(2) << "\n";
  } else {
    fmt::print("\nCorrectness points are earned once: on the GPU when there is one, else on the CPU backend (emu).\n"
               "Static checks are hints worth no points. Student files: {}\n", m.student_dir.string());
  }
  return kExitOk;
}

int cmd_calibrate([[maybe_unused]] bool remeasure) {
#if defined(ROOFLAB_HAVE_CUDA)
  std::string why;
  if (!rooflab::device_available(&why)) {
    std::cerr << "rooflab calibrate: needs a GPU, and none is usable here (" << why << ").\n"
              << "Without a GPU the graders use datasheet figures only for the analytic questions and plots.\n";
    return kExitNoGpu;
  }
  const auto info = rooflab::query_device(0);
  fmt::print("{}\n\n", rooflab::describe(info));
  const auto& c = rooflab::ceilings(0, remeasure);
  const rooflab::GpuSpec* spec = rooflab::find_gpu_by_cuda_name(info.name);
  const auto row = [&](const char* what, double measured, std::optional<double> datasheet, const char* unit) {
    if (datasheet && *datasheet > 0) {
      fmt::print("  {:<28} {:>10.1f} {:<8} datasheet {:>8.1f}  ({:.1f}%)\n", what, measured, unit, *datasheet,
                 100.0 * measured / *datasheet);
    } else {
      fmt::print("  {:<28} {:>10.1f} {:<8} datasheet     n/a\n", what, measured, unit);
    }
  };
  fmt::print("Ceilings measured {} ({}):\n", c.measured_at, spec ? spec->name : "GPU not in data/gpus.json");
  row("copy (best of kernel/memcpy)", c.copy_gbps, spec ? std::optional<double>(spec->bandwidth_gbps) : std::nullopt, "GB/s");
  row("  our vectorized copy kernel", c.copy_kernel_gbps, std::nullopt, "GB/s");
  row("  cudaMemcpy device to device", c.memcpy_gbps, std::nullopt, "GB/s");
  row("FP32 FMA (our kernel)", c.fp32_fma_flops / 1e12, spec ? std::optional<double>(spec->fp32_tflops) : std::nullopt, "TFLOP/s");
  row("SGEMM (cuBLAS)", c.sgemm_flops / 1e12, spec ? std::optional<double>(spec->fp32_tflops) : std::nullopt, "TFLOP/s");
  row("FP16 tensor GEMM (cuBLAS)", c.fp16_tensor_flops / 1e12, spec ? spec->fp16_tflops : std::nullopt, "TFLOP/s");
  row("BF16 tensor GEMM (cuBLAS)", c.bf16_tensor_flops / 1e12, spec ? spec->bf16_tflops : std::nullopt, "TFLOP/s");
  fmt::print("\ncached in {}\n", rooflab::ceilings_cache_path(info).string());
  return kExitOk;
#else
  std::cerr << "rooflab calibrate: this build has no CUDA support (no CUDA compiler was found at configure time).\n";
  return kExitNoGpu;
#endif
}

}  // namespace rooflab::grader
