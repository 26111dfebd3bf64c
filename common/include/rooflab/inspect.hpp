// `rooflab inspect`: what the compiler says about each kernel, without a GPU.
//
// For every kernel a lab declares, from the PTX and ptxas report captured at build time for one
// architecture: registers, static and dynamic shared memory, stack and spills, the widest global load and
// store, shared memory and tensor-core instructions; the theoretical occupancy at the kernel's launch
// block size on a chosen GPU (the toolkit's cuda_occupancy.h with that GPU's limits), naming what limits
// it; and the roofline floor time of the kernel's declared work at a problem size on that GPU.
//
// A lab declares its kernels once, in its registry (lab.hpp or kernels.hpp):
//   inline constexpr rooflab::inspect::KernelDecl kKernels[] = {
//       {"triad_vec4_kernel", "triad_vec4", kBlock, 0, [](double n) { return 2 * n; },
//        [](double n) { return 12 * n; }, rooflab::DType::fp32, {"triad_vec4"}}, ...};
// and its static test file registers them: ROOFLAB_INSPECT_KERNELS(lab01::kKernels);
// The static test binary then answers `--rooflab-inspect [--gpu ID] [--arch sm_XX] [--n N] [--json]`, and
// `--rooflab-inspect --registry` (the registry as JSON: kernel, variant, graded_by; no PTX needed).
#pragma once

#include <array>
#include <cstddef>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <rooflab/specs.hpp>
#include <rooflab/testing/capture_paths.hpp>

namespace rooflab {
struct GpuSpec;
}
namespace rooflab::perf {
struct Prediction;  // rooflab/perf_model.hpp: kept out of this header, which the labs' kernels include
}

namespace rooflab::inspect {

struct KernelDecl {
  std::string_view kernel;     // a distinctive part of the demangled name, e.g. "lab01::triad_vec4_kernel"
  std::string_view variant;    // the registry id it implements
  unsigned block;              // threads per block at launch
  std::size_t dynamic_smem;    // bytes of dynamic shared memory at launch
  double (*flops)(double n);   // declared work at problem size n
  double (*bytes)(double n);   // declared DRAM traffic at problem size n
  // The math units whose peak bounds it: fp32 (CUDA cores), fp16_nontensor (half2 on the CUDA cores), or a
  // tensor-core type (fp16, bf16, tf32, fp8, int8). The roofline floor uses that peak, not always FP32's.
  DType dtype = DType::fp32;
  // The thresholds.json quantities of the lab that grade this kernel (none: informational). A CPU test
  // checks, lab by lab, that these, thresholds.json and the perf tests' rubric entries name the same set.
  std::array<std::string_view, 2> graded_by = {};
};

// A launch the lab's launcher makes at the timed problem size, recorded on the CPU backend without running it
// (rooflab::ptx::timed_launches, a static test binary's registration): the grid the prediction counts waves of,
// and the block and dynamic shared memory the launch really asks for (a student's may differ from the
// registry's).
struct TimedLaunch {
  std::string kernel;  // demangled, as the CPU backend names it
  unsigned long long blocks = 0;
  unsigned block = 0;
  std::size_t dynamic_smem = 0;
  // Per argument: the bytes a pointer argument reaches (to the end of its allocation), 0 for other arguments
  // (rooflab::emu::LaunchShape::reach); empty when not recorded.
  std::vector<std::size_t> reach;
  // Per argument: an integer argument's value, nothing for others (rooflab::emu::LaunchShape::scalars); empty when
  // not recorded. The model counts the trips of loops bounded by them.
  std::vector<std::optional<long long>> scalars;
};
struct TimedLaunches {
  std::vector<TimedLaunch> launches;
  std::string source;  // where they come from, when not the launchers run here
  std::string note;    // why a kernel has none
};

// The per-SM limits the occupancy calculation needs (CUDA C++ Programming Guide, compute capabilities).
struct Limits {
  int cc_major = 8;
  int cc_minor = 0;
  int sms = 108;
  int max_threads_per_sm = 2048;
  int max_threads_per_block = 1024;
  int max_blocks_per_sm = 32;
  int registers_per_sm = 65536;
  int registers_per_block = 65536;
  std::size_t smem_per_sm = 164 * 1024;
  std::size_t smem_per_block = 48 * 1024;        // without opt-in
  std::size_t smem_per_block_optin = 163 * 1024;
  std::size_t reserved_smem_per_block = 1024;
};
Limits limits_of(const GpuSpec& gpu);

struct Occupancy {
  int blocks_per_sm = 0;
  int warps_per_sm = 0;
  double fraction = 0;   // active warps / maximum warps per SM
  std::string limiter;   // "warps", "registers", "shared memory", "blocks", "barriers" (several joined by '+')
  std::string error;     // non-empty when the configuration cannot launch
};
Occupancy occupancy(const Limits& limits, int registers_per_thread, std::size_t static_smem,
                     std::size_t dynamic_smem, unsigned block, int barriers = 1);

struct Row {
  std::string kernel;
  std::string variant;
  // Why the kernel is not in the compiled code, where it is not (a template a stub launcher never instantiates):
  // the row then has its name, variant and graded_by and nothing else, and no prediction.
  std::string missing;
  std::vector<std::string> graded_by;  // the thresholds.json quantities that grade it (KernelDecl::graded_by)
  std::string arch;
  unsigned block = 0;
  int registers = 0;
  int static_smem = 0;
  std::size_t dynamic_smem = 0;
  unsigned long long grid = 0;  // blocks the launcher starts at the timed size (0: not recorded)
  double waves = 0;             // grid / (SMs x blocks per SM), where the grid is known
  std::vector<std::size_t> reach;  // the launch's reach per argument, where recorded (TimedLaunch::reach)
  std::vector<std::optional<long long>> scalars;  // its integer arguments, where recorded (TimedLaunch::scalars)
  int stack = 0;
  int spill_bytes = 0;
  int widest_load_bits = 0;
  int widest_store_bits = 0;
  bool uses_shared = false;
  std::string tensor_instructions;  // "", "wmma", "mma", "wgmma"
  Occupancy occ;
  double flops = 0;
  double bytes = 0;
  double floor_s = 0;        // max(bytes / bandwidth, flops / the peak of its dtype) on the chosen GPU
  std::string bound;         // "memory" or "compute"
  // The performance model's prediction on the chosen GPU (rooflab/perf_model.hpp): a model, not a measurement.
  std::shared_ptr<const perf::Prediction> prediction;
  std::string code_from;         // what the prediction read: "SASS" or "PTX"
  std::string prediction_error;  // why there is none (no constants for the architecture, say)
};

// The SASS of a capture's cubin, where nvdisasm is found: each function's listing by mangled name, or why none.
struct Sass {
  std::map<std::string, std::string> functions;
  std::string why_not;  // empty when read
};
// nvdisasm: $ROOFLAB_NVDISASM, else beside the CUDA compiler the build used, else on PATH, else the copy a build of
// this course fetched for its own tests where the toolkit lacks one (fetched_nvdisasm); empty when none.
std::string find_nvdisasm();
// The folders under build/ that CMakePresets.json's presets build into (common.inspect checks the two agree).
inline constexpr const char* kPresetBuilds[] = {"ci", "default", "solutions", "student", "debug", "release"};
// Where `./rooflab test` leaves the nvdisasm it fetches when the toolkit lacks one (NVIDIA's wheel: the perf-model
// CTests' --nvdisasm-dir, <build>/nvdisasm/nvdisasm), in the order they are tried for a program of build folder
// `build`: its own, then each preset's folder beside it (build/ci's for a program of build/default). Named, not
// listed: a sandboxed program may not list build/, and the grader lets the sandbox run these (inline: the grader
// does not link the inspect library).
inline std::vector<std::filesystem::path> fetched_nvdisasm_places(const std::filesystem::path& build) {
  std::vector<std::filesystem::path> out{build / "nvdisasm" / "nvdisasm"};
  for (const char* preset : kPresetBuilds) out.push_back(build.parent_path() / preset / "nvdisasm" / "nvdisasm");
  return out;
}
// The first of those places that holds a runnable nvdisasm, for a program at `exe` (<build>/labs/bin/labNN_static);
// empty when none.
std::string fetched_nvdisasm(const std::filesystem::path& exe);
Sass read_sass(const std::string& cubin);

// With `sass`, the prediction reads each kernel's SASS where the listing has it, its PTX otherwise. With
// `copy_ceiling_gbps` (what `rooflab calibrate` measured on this GPU), the memory roof is that ceiling rather
// than the datasheet bandwidth times the model's share of it.
// With `launches`, each kernel's occupancy and prediction use the last launch of it there (its grid, block
// and dynamic shared memory); a kernel not launched there keeps the registry's block and a grid assumed to fill
// every SM.
std::vector<Row> inspect(std::span<const KernelDecl> kernels, const std::string& ptx, const std::string& ptxas,
                         const GpuSpec& gpu, const std::string& arch, double n, const Sass* sass = nullptr,
                         std::optional<double> copy_ceiling_gbps = std::nullopt,
                         const TimedLaunches* launches = nullptr);
std::string table(const std::vector<Row>& rows, const GpuSpec& gpu, double n);
std::string to_json(const std::vector<Row>& rows, const GpuSpec& gpu, double n);

// The registry as data: [{"kernel", "variant", "graded_by": [...]}, ...].
std::string registry_json(std::span<const KernelDecl> kernels);

// Registration by a lab's static test binary, and the entry point test_main calls for --rooflab-inspect.
bool register_lab(std::span<const KernelDecl> kernels, const char* static_dir, const char* archs);
// The problem size the lab's perf tests time, in the lab's meaning of n (the registry's flops and bytes take it):
// inspect's default, so that floors and predictions are those of the timed problem.
bool register_timed_size(double n);
// The launches at that size on `gpu` (its SM count), for the waves of each grid: the lab's launchers called on
// the CPU backend with nothing run (a static test binary's function, ROOFLAB_INSPECT_TIMED_LAUNCHES).
bool register_timed_launches(TimedLaunches (*launches)(const GpuSpec& gpu));
bool registered();
int main(int argc, char** argv);

}  // namespace rooflab::inspect

#define ROOFLAB_INSPECT_TIMED_SIZE(n) \
  [[maybe_unused]] static const bool rooflab_inspect_timed_size_ = ::rooflab::inspect::register_timed_size(n)

#define ROOFLAB_INSPECT_TIMED_LAUNCHES(fn) \
  [[maybe_unused]] static const bool rooflab_inspect_timed_launches_ = ::rooflab::inspect::register_timed_launches(fn)

#define ROOFLAB_INSPECT_KERNELS(list)                                                  \
  [[maybe_unused]] static const bool rooflab_inspect_registered_ =                     \
      ::rooflab::inspect::register_lab(std::span<const ::rooflab::inspect::KernelDecl>(list), \
                                       ::rooflab::testing::capture_dir(), ::rooflab::testing::capture_archs())
