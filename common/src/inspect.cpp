#include <rooflab/testing/grading.hpp>
#include <rooflab/inspect.hpp>
#include <rooflab/perf_model.hpp>
#include <rooflab/testing/ptx.hpp>
#include <rooflab/specs.hpp>
#include <rooflab/detail/command.hpp>

#include <CLI/CLI.hpp>
#include <cuda_occupancy.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

namespace rooflab::inspect {

Limits limits_of(const GpuSpec& g) {
  Limits l;
  l.cc_major = g.cc_major;
  l.cc_minor = g.cc_minor;
  l.sms = g.sms.value_or(0);
  l.max_threads_per_sm = g.max_threads_per_sm;
  l.max_threads_per_block = g.max_threads_per_block;
  l.max_blocks_per_sm = g.max_blocks_per_sm;
  l.registers_per_sm = g.registers_per_sm;
  l.registers_per_block = g.registers_per_sm;
  l.smem_per_sm = static_cast<std::size_t>(g.smem_per_sm_kb * 1024);
  l.smem_per_block = 48 * 1024;
  l.smem_per_block_optin = static_cast<std::size_t>(g.smem_max_per_block_kb * 1024);
  l.reserved_smem_per_block = static_cast<std::size_t>(g.reserved_smem_per_block_bytes);
  return l;
}

Occupancy occupancy(const Limits& l, int registers_per_thread, std::size_t static_smem, std::size_t dynamic_smem,
                    unsigned block, int barriers) {
  cudaOccDeviceProp prop{};
  prop.computeMajor = l.cc_major;
  prop.computeMinor = l.cc_minor;
  prop.maxThreadsPerBlock = l.max_threads_per_block;
  prop.maxThreadsPerMultiprocessor = l.max_threads_per_sm;
  prop.regsPerBlock = l.registers_per_block;
  prop.regsPerMultiprocessor = l.registers_per_sm;
  prop.warpSize = 32;
  prop.sharedMemPerBlock = l.smem_per_block;
  prop.sharedMemPerMultiprocessor = l.smem_per_sm;
  prop.numSms = l.sms;
  prop.sharedMemPerBlockOptin = l.smem_per_block_optin;
  prop.reservedSharedMemPerBlock = l.reserved_smem_per_block;

  cudaOccFuncAttributes attr{};
  attr.maxThreadsPerBlock = l.max_threads_per_block;
  attr.numRegs = registers_per_thread;
  attr.sharedSizeBytes = static_smem;
  attr.partitionedGCConfig = PARTITIONED_GC_OFF;
  attr.shmemLimitConfig = FUNC_SHMEM_LIMIT_OPTIN;  // the launcher may raise the dynamic limit
  attr.maxDynamicSharedSizeBytes = l.smem_per_block_optin - static_smem;
  attr.numBlockBarriers = std::max(barriers, 1);

  cudaOccDeviceState state{};
  state.cacheConfig = CACHE_PREFER_NONE;
  state.carveoutConfig = SHAREDMEM_CARVEOUT_DEFAULT;

  cudaOccResult result{};
  Occupancy o;
  const cudaOccError err = cudaOccMaxActiveBlocksPerMultiprocessor(&result, &prop, &attr, &state,
                                                                   static_cast<int>(block), dynamic_smem);
  if (err != CUDA_OCC_SUCCESS) {
    o.error = err == CUDA_OCC_ERROR_UNKNOWN_DEVICE ? "the occupancy calculator does not know this architecture"
                                                   : "invalid launch configuration";
    return o;
  }
  o.blocks_per_sm = result.activeBlocksPerMultiprocessor;
  const int warps_per_block = static_cast<int>((block + 31) / 32);
  o.warps_per_sm = o.blocks_per_sm * warps_per_block;
  o.fraction = static_cast<double>(o.warps_per_sm) / (l.max_threads_per_sm / 32);
  std::vector<std::string> limits;
  if (result.limitingFactors & OCC_LIMIT_WARPS) limits.push_back("warps");
  if (result.limitingFactors & OCC_LIMIT_REGISTERS) limits.push_back("registers");
  if (result.limitingFactors & OCC_LIMIT_SHARED_MEMORY) limits.push_back("shared memory");
  if (result.limitingFactors & OCC_LIMIT_BLOCKS) limits.push_back("blocks");
  if (result.limitingFactors & OCC_LIMIT_BARRIERS) limits.push_back("barriers");
  for (std::size_t i = 0; i < limits.size(); ++i) o.limiter += (i ? "+" : "") + limits[i];
  if (o.blocks_per_sm == 0) o.error = "cannot launch: one block needs more than an SM has";
  return o;
}

namespace {
bool runnable(const std::filesystem::path& p) {
  return !p.empty() && ::access(p.c_str(), X_OK) == 0 && !std::filesystem::is_directory(p);
}
}  // namespace

std::string find_nvdisasm() {
  namespace fs = std::filesystem;
  if (const char* env = std::getenv("ROOFLAB_NVDISASM"); env != nullptr && *env != '\0') {
    return runnable(env) ? std::string(env) : std::string();
  }
#ifdef ROOFLAB_CUDA_BIN_DIR
  if (const fs::path beside = fs::path(ROOFLAB_CUDA_BIN_DIR) / "nvdisasm"; runnable(beside)) return beside.string();
#endif
  if (const char* path = std::getenv("PATH"); path != nullptr) {
    std::stringstream dirs(path);
    for (std::string d; std::getline(dirs, d, ':');) {
      if (!d.empty() && runnable(fs::path(d) / "nvdisasm")) return (fs::path(d) / "nvdisasm").string();
    }
  }
  std::error_code ec;
  return fetched_nvdisasm(fs::read_symlink("/proc/self/exe", ec));
}

std::string fetched_nvdisasm(const std::filesystem::path& exe) {
  if (exe.empty() || !exe.has_parent_path()) return {};
  for (const auto& p : fetched_nvdisasm_places(exe.parent_path().parent_path().parent_path())) {
    if (runnable(p)) return p.string();
  }
  return {};
}

Sass read_sass(const std::string& cubin) {
  Sass out;
  const std::string tool = find_nvdisasm();
  if (tool.empty()) {
    out.why_not = "no nvdisasm here (a full CUDA toolkit has it; `./rooflab test` fetches one where the toolkit lacks "
                  "it; or set ROOFLAB_NVDISASM)";
    return out;
  }
  if (!std::filesystem::exists(cubin)) {
    out.why_not = "no cubin captured (" + cubin + ")";
    return out;
  }
  // The file names are the build's own paths; quoted for the shell all the same.
  int status = 0;
  const std::string text =
      detail::command_output(detail::shell_quoted(tool) + " -c " + detail::shell_quoted(cubin) + " 2>&1", &status);
  if (status != 0) {
    out.why_not = status < 0 ? "nvdisasm could not be started" : "nvdisasm failed on " + cubin + ": " + text.substr(0, 200);
    return out;
  }
  out.functions = perf::sass_functions(text);
  if (out.functions.empty()) out.why_not = "nvdisasm listed no function of " + cubin;
  return out;
}

std::vector<Row> inspect(std::span<const KernelDecl> kernels, const std::string& ptx_text,
                         const std::string& ptxas_text, const GpuSpec& gpu, const std::string& arch, double n,
                         const Sass* sass, std::optional<double> copy_ceiling_gbps, const TimedLaunches* launches) {
  const auto entries = ptx::parse_ptx(ptx_text);
  const auto resources = ptx::parse_ptxas_report(ptxas_text);
  const Limits limits = limits_of(gpu);
  const double bandwidth = gpu.bandwidth_gbps * 1e9;
  std::optional<perf::Constants> constants;  // read once, for the first kernel that gets a prediction
  std::vector<Row> rows;
  for (const auto& k : kernels) {
    Row r;
    r.kernel = std::string(k.kernel);
    r.variant = std::string(k.variant);
    for (const auto q : k.graded_by) {
      if (!q.empty()) r.graded_by.emplace_back(q);
    }
    r.arch = arch;
    r.block = k.block;
    r.dynamic_smem = k.dynamic_smem;
    // Several instances of a template may match (a kernel with a VEC flag, one for each path): the one the
    // launcher started at the timed size, where recorded.
    std::vector<std::string> timed;
    if (launches != nullptr) {
      for (const auto& l : launches->launches) timed.push_back(l.kernel);
    }
    const ptx::Kernel* found = nullptr;
    try {
      found = &ptx::find_kernel_launched(entries, k.kernel, timed);
    } catch (const ptx::NotCompiled&) {
      // Not written yet: the kernels that are still get their rows (a student's lab half done, a grade's hints).
      r.missing = ptx::kNotCompiledWhy;
      r.prediction_error = r.missing;
      rows.push_back(std::move(r));
      continue;
    }
    const auto& entry = *found;
    const auto& res = ptx::resources_of(resources, entry);
    // The launch the launcher really made at the timed size, where recorded: its block and shared memory are
    // what occupancy depends on, and its grid what the waves are counted of.
    const TimedLaunch* launched = nullptr;
    if (launches != nullptr) {
      for (const auto& l : launches->launches) {
        // The CPU backend's demangled name, or (a run's file) the registry's own name for the kernel.
        if (l.kernel == k.kernel || ptx::same_kernel(entry.name, l.kernel)) launched = &l;
      }
    }
    if (launched != nullptr) {
      r.block = launched->block;
      r.dynamic_smem = launched->dynamic_smem;
      r.grid = launched->blocks;
      r.reach = launched->reach;
      r.scalars = launched->scalars;
    }
    const auto facts = ptx::facts(entry);
    r.registers = res.registers;
    r.static_smem = res.smem_bytes;
    r.stack = res.stack_bytes;
    r.spill_bytes = res.spill_store_bytes + res.spill_load_bytes;
    r.widest_load_bits = facts.widest_global_load_bits;
    r.widest_store_bits = facts.widest_global_store_bits;
    r.uses_shared = facts.uses_shared;
    if (facts.count("wgmma.") > 0) {
      r.tensor_instructions = "wgmma";
    } else if (facts.count("mma.sync") > 0) {
      r.tensor_instructions = "mma";
    } else if (facts.count("wmma.") > 0) {
      r.tensor_instructions = "wmma";
    }
    r.occ = occupancy(limits, res.registers, static_cast<std::size_t>(res.smem_bytes), r.dynamic_smem, r.block,
                      res.barriers);
    if (r.grid > 0 && r.occ.blocks_per_sm > 0 && gpu.sms) {
      r.waves = static_cast<double>(r.grid) / (static_cast<double>(*gpu.sms) * r.occ.blocks_per_sm);
    }
    r.flops = k.flops(n);
    r.bytes = k.bytes(n);
    const double t_mem = r.bytes / bandwidth;
    // The peak of the units the kernel computes on (a tensor-core kernel's floor uses the tensor peak); a GPU
    // without such units, or one whose figure is unpublished, falls back to its FP32 peak.
    const double peak = rooflab::peak_flops(gpu, k.dtype).value_or(gpu.fp32_tflops * 1e12);
    const double t_compute = r.flops / peak;
    r.floor_s = std::max(t_mem, t_compute);
    r.bound = t_mem >= t_compute ? "memory" : "compute";
    try {
      // An empty body moves none of the declared bytes: any figure would be the roof's, not the kernel's.
      if (!ptx::touches_global_memory(facts)) {
        throw std::runtime_error(std::string("not written yet: ") + ptx::kNoWorkWhy);
      }
      if (!constants) constants = perf::constants_for(gpu);
      const perf::Constants& c = *constants;
      perf::Work w;
      w.flops = r.flops;
      w.bytes = r.bytes;
      w.dtype = k.dtype;
      w.block = r.block;
      w.blocks_per_sm = r.occ.blocks_per_sm;
      w.grid = r.grid;
      w.reach.assign(r.reach.begin(), r.reach.end());
      w.scalars = r.scalars;
      if (r.grid > 0) {
        w.grid_from = launches->source.empty() ? "the launcher's grid at the timed size, recorded on the CPU backend"
                                               : launches->source;
      } else if (launches != nullptr) {
        w.grid_from = launches->note.empty() ? "the launcher did not start it at the timed size" : launches->note;
      }
      w.copy_ceiling_gbps = copy_ceiling_gbps;
      // The code that runs (SASS) where nvdisasm listed this kernel; its PTX otherwise, saying why.
      // The PTX, read once: the prediction's code where nvdisasm did not list the kernel, and always the loops whose
      // trips count_trips runs (the SASS has the same source loops; a loop with a run-time trip count stays a loop).
      perf::Code code = perf::analyze(facts.body);
      perf::count_trips(code, facts.body, w);
      const std::string* listed = nullptr;
      if (sass != nullptr) {
        if (const auto it = sass->functions.find(entry.mangled); it != sass->functions.end()) listed = &it->second;
      }
      if (listed != nullptr) {
        // The parameters' place in constant bank 0, for tracing loads to them: the cubin's architecture ("sm_90").
        perf::SassParams params;
        params.base = perf::param_bank_base(arch);
        params.layout = ptx::param_layout(entry.params);
        perf::Code from_sass = perf::analyze_sass(*listed, &params);
        from_sass.trips = std::move(code.trips);
        from_sass.trips.head_runs.clear();  // counted per loop of the PTX reading
        if (!from_sass.trips.round_trips_why.empty()) from_sass.trips.round_trips_why += " (read from the PTX)";
        code = std::move(from_sass);
      } else {
        code.from_note = sass == nullptr ? "" : (sass->why_not.empty() ? "nvdisasm did not list this kernel" : sass->why_not);
      }
      r.code_from = code.from;
      if (r.occ.blocks_per_sm > 0) r.prediction = std::make_shared<const perf::Prediction>(perf::predict(w, code, gpu, c));
      else r.prediction_error = r.occ.error;
    } catch (const std::exception& e) {
      r.prediction_error = e.what();
    }
    rows.push_back(std::move(r));
  }
  return rows;
}

std::string table(const std::vector<Row>& rows, const GpuSpec& gpu, double n) {
  std::string out = fmt::format("{} on {} ({} GB/s, {} FP32 TFLOP/s), problem size n = {:g}\n",
                                rows.empty() ? "" : rows.front().arch, gpu.name, gpu.bandwidth_gbps, gpu.fp32_tflops, n);
  std::size_t width = 6;
  for (const auto& r : rows) width = std::max(width, r.kernel.size());
  out += fmt::format("{:<{}} {:>5} {:>4} {:>11} {:>5} {:>5} {:>7} {:>6} {:>6} {:>28} {:>6} {:>19}\n", "kernel", width,
                     "block", "regs", "smem st/dyn", "stack", "spill", "ld/st", "shared", "tensor", "occupancy (limited by)",
                     "waves", "floor (bound)");
  for (const auto& r : rows) {
    if (!r.missing.empty()) {
      out += fmt::format("{:<{}} {}\n", r.kernel, width, r.missing);
      continue;
    }
    const std::string occ = r.occ.error.empty()
                                ? fmt::format("{:.0f}% {}x{}w ({})", 100 * r.occ.fraction, r.occ.blocks_per_sm,
                                              (r.block + 31) / 32, r.occ.limiter)
                                : r.occ.error;
    out += fmt::format("{:<{}} {:>5} {:>4} {:>11} {:>5} {:>5} {:>7} {:>6} {:>6} {:>28} {:>6} {:>19}\n", r.kernel, width,
                       r.block, r.registers, fmt::format("{}/{}", r.static_smem, r.dynamic_smem), r.stack, r.spill_bytes,
                       fmt::format("{}/{}", r.widest_load_bits, r.widest_store_bits), r.uses_shared ? "yes" : "no",
                       r.tensor_instructions.empty() ? "-" : r.tensor_instructions, occ,
                       r.waves > 0 ? fmt::format("{:.2f}", r.waves) : "-", fmt::format("{} ({})", perf::time_text(r.floor_s), r.bound));
  }
  out += "ld/st: widest global load/store in bits (128 = float4). occupancy: active warps per SM of the maximum, "
         "as blocks x warps.\nwaves: the grid the launcher starts at the timed size over the blocks the SMs hold at "
         "once (-: not recorded).\nfloor: the roofline's lower bound on time for the declared FLOPs and bytes.\n";
  out += fmt::format("\nPredicted on the {} (a model of the compiled code, not a measurement; docs/inspect.md, \"The "
                     "prediction\"):\n",
                     gpu.name);
  for (const auto& r : rows) {
    if (!r.missing.empty()) {
      out += fmt::format("{}: no prediction: not in the compiled code yet\n", r.kernel);
      continue;
    }
    if (!r.prediction) {
      out += fmt::format("{}: no prediction: {}\n", r.kernel, r.prediction_error);
      continue;
    }
    const auto& p = *r.prediction;
    out += fmt::format("{}: {:.0f}% of the {}, {} (floor {}), limited by {}\n", r.kernel, 100 * p.fraction, p.roof,
                       perf::time_text(p.time_s), perf::time_text(p.roof_time_s), p.limiter);
    if (p.fraction < 0.9) out += fmt::format("  to go faster: {}\n", p.advice);
    for (const auto& e : p.evidence) out += "  " + e + "\n";
  }
  return out;
}

std::string to_json(const std::vector<Row>& rows, const GpuSpec& gpu, double n) {
  nlohmann::json j = {{"gpu", gpu.id}, {"gpu_name", gpu.name}, {"n", n}, {"kernels", nlohmann::json::array()}};
  for (const auto& r : rows) {
    j["kernels"].push_back({{"kernel", r.kernel},
                            {"variant", r.variant},
                            {"graded_by", r.graded_by},
                            {"missing", r.missing},
                            {"arch", r.arch},
                            {"block", r.block},
                            {"registers", r.registers},
                            {"static_smem", r.static_smem},
                            {"dynamic_smem", r.dynamic_smem},
                            {"stack", r.stack},
                            {"spill_bytes", r.spill_bytes},
                            {"widest_load_bits", r.widest_load_bits},
                            {"widest_store_bits", r.widest_store_bits},
                            {"uses_shared", r.uses_shared},
                            {"tensor_instructions", r.tensor_instructions},
                            {"occupancy", r.occ.fraction},
                            {"blocks_per_sm", r.occ.blocks_per_sm},
                            {"grid", r.grid},
                            {"waves", r.waves},
                            {"reach", r.reach},
                            {"occupancy_limiter", r.occ.limiter},
                            {"occupancy_error", r.occ.error},
                            {"flops", r.flops},
                            {"bytes", r.bytes},
                            {"floor_s", r.floor_s},
                            {"bound", r.bound}});
    auto& row = j["kernels"].back();
    row["args"] = nlohmann::json::array();
    for (const auto& a : r.scalars) row["args"].push_back(a ? nlohmann::json(*a) : nlohmann::json(nullptr));
    if (r.prediction) {
      const auto& p = *r.prediction;
      row["prediction"] = {{"model", true},          {"time_s", p.time_s},     {"fraction", p.fraction},
                           {"roof", p.roof},         {"roof_time_s", p.roof_time_s}, {"limiter", p.limiter},
                           {"advice", p.advice},     {"evidence", p.evidence}, {"code_from", r.code_from}};
    } else {
      row["prediction"] = nullptr;
      row["prediction_error"] = r.prediction_error;
    }
  }
  return j.dump(2);
}

// ---- registration and the --rooflab-inspect entry point ----

namespace {
struct Registered {
  std::span<const KernelDecl> kernels;
  std::string static_dir;
  std::vector<std::string> archs;
  double timed_n = 0;  // 0: the lab registered none
  TimedLaunches (*timed_launches)(const GpuSpec&) = nullptr;
};
Registered& lab() {
  static Registered r;
  return r;
}
}  // namespace

bool register_lab(std::span<const KernelDecl> kernels, const char* static_dir, const char* archs) {
  lab().kernels = kernels;
  lab().static_dir = static_dir;
  std::stringstream list(archs);
  for (std::string a; std::getline(list, a, ',');) lab().archs.push_back("sm_" + a);
  grading::set_extra_main("--rooflab-inspect", &main);
  return true;
}

bool register_timed_size(double n) {
  lab().timed_n = n;
  return true;
}

bool register_timed_launches(TimedLaunches (*launches)(const GpuSpec& gpu)) {
  lab().timed_launches = launches;
  return true;
}

bool registered() { return !lab().kernels.empty(); }

std::string registry_json(std::span<const KernelDecl> kernels) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& k : kernels) {
    nlohmann::json graded = nlohmann::json::array();
    for (const auto q : k.graded_by) {
      if (!q.empty()) graded.push_back(std::string(q));
    }
    out.push_back({{"kernel", std::string(k.kernel)}, {"variant", std::string(k.variant)}, {"graded_by", graded}});
  }
  return out.dump(2);
}

namespace {
// --launches: what a GPU run recorded (the validation fixtures' measured.json), one object per launch.
TimedLaunches read_launches(const std::string& file) {
  std::ifstream in(file);
  if (!in) throw std::invalid_argument("cannot read the launches file " + file);
  TimedLaunches out;
  try {
    for (const auto& l : nlohmann::json::parse(in)) {
      out.launches.push_back({l.at("kernel").get<std::string>(), l.at("blocks").get<unsigned long long>(),
                              l.at("block").get<unsigned>(), l.value("dynamic_smem", std::size_t{0}),
                              l.value("reach", std::vector<std::size_t>{}), {}});
      // "args": each argument's integer value, null for the others.
      if (l.contains("args")) {
        for (const auto& a : l.at("args")) {
          out.launches.back().scalars.push_back(a.is_null() ? std::nullopt : std::optional<long long>(a.get<long long>()));
        }
      }
    }
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(file + ": not a list of launches ({\"kernel\", \"blocks\", \"block\"}): " + e.what());
  }
  out.source = "as the run recorded it (" + std::filesystem::path(file).filename().string() + ")";
  out.note = "the run's launches do not list it";
  return out;
}

// --code-names: {registry name: the name of the kernel the other code has in its place} (a run's kernels that the
// registry has since renamed: the kernel that code launched for the same timed call). Each renamed entry keeps its
// declared work; its name points into `names`, which must outlive the returned entries.
std::vector<KernelDecl> renamed(std::span<const KernelDecl> kernels, const std::string& file, std::vector<std::string>& names) {
  std::ifstream in(file);
  if (!in) throw std::invalid_argument("cannot read the code names file " + file);
  std::map<std::string, std::string> map;
  try {
    map = nlohmann::json::parse(in).get<std::map<std::string, std::string>>();
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(file + ": not an object of names ({\"registry name\": \"name in the code\"}): " + e.what());
  }
  std::vector<KernelDecl> out(kernels.begin(), kernels.end());
  names.reserve(map.size());
  for (auto& k : out) {
    const auto it = map.find(std::string(k.kernel));
    if (it == map.end()) continue;
    names.push_back(it->second);
    k.kernel = names.back();
    map.erase(it);
  }
  if (!map.empty()) throw std::invalid_argument(file + ": " + map.begin()->first + " is not in the lab's registry");
  return out;
}
}  // namespace

int main(int argc, char** argv) {
  std::string gpu_id = "h100-sxm";
  std::string arch;
  double n = 0;
  bool json = false;
  bool registry = false;
  std::string code_dir;
  CLI::App app{"the kernels of this lab as the compiler built them (rooflab inspect)"};
  app.add_flag("--rooflab-inspect")->description("this entry point");
  app.add_option("--gpu", gpu_id, "GPU id from data/gpus.json")->capture_default_str();
  app.add_option("--arch", arch, "sm_80, sm_90, ... (one the build captured; default: the GPU's own)");
  app.add_option("--n", n, "problem size for the roofline floor (default: the size the lab's perf tests time)");
  app.add_flag("--json", json, "machine-readable");
  std::optional<double> copy_ceiling;
  app.add_option("--copy-ceiling-gbps", copy_ceiling,
                 "the memory roof: a copy ceiling `rooflab calibrate` measured on this GPU (default: the datasheet "
                 "bandwidth times the model's share of it)")
      ->check(CLI::PositiveNumber);
  bool sass = false;
  app.add_flag("--sass", sass,
               "the prediction reads SASS (nvdisasm's listing of kernels.<arch>.cubin) instead of PTX, where nvdisasm "
               "is found ($ROOFLAB_NVDISASM, beside nvcc, PATH)");
  app.add_option("--code-dir", code_dir,
                 "read kernels.<arch>.ptx, .ptxas.txt and .cubin from this folder instead of the build's capture "
                 "(another version of the kernels, such as the validation fixtures of a recorded GPU run)");
  std::string launches_file;
  app.add_option("--launches", launches_file,
                 "the launches at the timed size from this JSON file ([{\"kernel\", \"blocks\", \"block\", "
                 "\"dynamic_smem\", \"reach\": the bytes each argument's pointer reaches, 0 for others, \"args\": each integer argument's value, null for others}, ...], as a GPU run recorded them) instead of the lab's launchers on the CPU backend; "
                 "with --code-dir and without this, no grid is known (the launchers here may not be that code's)");
  std::string code_names_file;
  app.add_option("--code-names", code_names_file,
                 "with --code-dir: the registry's kernels that code names otherwise, from this JSON object "
                 "({\"registry name\": \"name in that code\"}: the kernel it launched for the same timed call)");
  app.add_flag("--registry", registry, "print the lab's kernel registry as JSON (no compiler output needed)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (registry) {
    std::cout << registry_json(lab().kernels) << "\n";
    return 0;
  }
  if (n <= 0) n = lab().timed_n > 0 ? lab().timed_n : double(1 << 28);
  try {
    const GpuSpec& g = gpu(gpu_id);
    if (arch.empty()) {
      // The chosen GPU's own architecture when the build captured it, else the first captured one.
      arch = g.arch();
      if (code_dir.empty() && std::find(lab().archs.begin(), lab().archs.end(), arch) == lab().archs.end()) arch = lab().archs.front();
    }
    if (code_dir.empty() && std::find(lab().archs.begin(), lab().archs.end(), arch) == lab().archs.end()) {
      std::string known;
      for (const auto& x : lab().archs) known += " " + x;
      throw std::invalid_argument("the build captured the compiler's output for" + known + " only, not " + arch +
                                  " (ROOFLAB_STATIC_ARCHS)");
    }
    if (arch != g.arch()) {
      std::cerr << "rooflab inspect: note: the " << g.name << " is " << g.arch() << "; showing the " << arch
                << " code's registers and shared memory with the " << g.name << "'s limits\n";
    }
    const std::string dir = code_dir.empty() ? lab().static_dir : code_dir;
    const Sass listing = sass ? read_sass(dir + "/kernels." + arch + ".cubin") : Sass{};
    // The grids at the timed size: only when the size is the lab's own (another n has no launches recorded).
    std::optional<TimedLaunches> launches;
    if (!launches_file.empty()) {
      launches = read_launches(launches_file);
    } else if (!code_dir.empty()) {
      launches = TimedLaunches{{}, {}, "the code read is another version of the kernels (--code-dir), whose launchers "
                                   "did not run here"};
    } else if (lab().timed_launches != nullptr) {
      if (n == lab().timed_n) {
        launches = lab().timed_launches(g);
      } else {
        launches = TimedLaunches{{}, {}, "launches are recorded at the timed size only, not at --n"};
      }
    }
    std::vector<std::string> names;
    const auto kernels = code_names_file.empty() ? std::vector<KernelDecl>(lab().kernels.begin(), lab().kernels.end())
                                                 : renamed(lab().kernels, code_names_file, names);
    const auto rows = inspect(kernels, ptx::read_file(dir + "/kernels." + arch + ".ptx"),
                              ptx::read_file(dir + "/kernels." + arch + ".ptxas.txt"), g, arch, n,
                              sass ? &listing : nullptr, copy_ceiling, launches ? &*launches : nullptr);
    std::cout << (json ? to_json(rows, g, n) : table(rows, g, n)) << "\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "rooflab inspect: " << e.what() << "\n";
    return 2;
  }
}

}  // namespace rooflab::inspect
