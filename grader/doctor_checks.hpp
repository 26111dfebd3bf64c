// The doctor's checks: each reads the facts the seam gave (doctor_tools.hpp) and says ok, warning or error,
// with the fix. No check runs a tool itself except through `Tools`, so CI runs each against canned outputs.
#pragma once

#include "doctor_tools.hpp"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace rooflab::grader::doctor {

// `note`: could not be checked here (no GPU, no driver); it never fails the doctor.
enum class Level { ok, note, warning, error };
std::string_view to_string(Level level);

struct Finding {
  std::string check;    // "driver"
  Level level = Level::ok;
  std::string message;  // what was found, in a sentence
  std::string fix;      // what to do; empty when nothing is to be done
};

struct Version {
  int major = 0;
  int minor = 0;
  bool operator<(const Version& o) const { return major != o.major ? major < o.major : minor < o.minor; }
  std::string str() const { return std::to_string(major) + "." + std::to_string(minor); }
};

// What the seam answered, read once: the parsed facts every check works from.
struct Facts {
  bool smi_found = false;
  int smi_exit = 0;
  std::string smi_first_line;                // nvidia-smi's complaint when it failed
  std::string driver_header;                 // "Driver Version: 470.82.01" in its header: the query may fail
  std::string query_error;                   // the GPU query's complaint (a driver too old for a field), or ""
  std::map<std::string, std::string> gpu;    // device 0's row of the query, by field name; empty: no GPU
  int gpu_count = 0;
  std::optional<Version> driver_cuda;        // "CUDA Version: 12.4" in nvidia-smi's header
  bool nvcc_found = false;
  std::optional<Version> toolkit;            // "release 13.0" in nvcc --version
  std::vector<int> toolkit_archs;            // 75, 80, ... from nvcc --list-gpu-arch
  std::string build_archs;                   // CMAKE_CUDA_ARCHITECTURES of the build tree, "" if unknown
  std::vector<std::string> dev;              // nvidia0, nvidiactl, nvidia-uvm, ...
  std::string landlock;                      // "abi 6", "errno ENOSYS"
  std::string kernel_release;
  std::string lsm;
  bool seccomp_filter = false;               // Seccomp: 2 in /proc/self/status
  int euid = -1;
  std::optional<std::string> profiling_admin_only;  // RmProfilingAdminOnly's value, if the driver says
  std::vector<std::map<std::string, std::string>> apps;  // the compute processes nvidia-smi lists
  std::string fixtures;                      // non-empty: canned answers from this folder
  // The GPU's field (nvidia-smi's name, without the unit), or "".
  std::string field(const std::string& name) const;
  bool has_gpu() const { return !gpu.empty(); }
  bool mig() const { return field("mig.mode.current") == "Enabled"; }
};
Facts gather(Tools& tools);

// nvidia-smi --format=csv: the header row names the fields ("clocks.max.sm [MHz]" is clocks.max.sm).
std::vector<std::map<std::string, std::string>> parse_csv(const std::string& text);
// The leading number of a field ("1980 MHz", "700.00 W"); nullopt for "[N/A]", "Not Supported".
std::optional<double> number(const std::string& field);

// The shares of the datasheet figures below which the GPU is unfit to grade performance on (docs/doctor.md
// says why these): copy bandwidth, and the FP32 FMA rate, whose bar is lower because cards with a low power
// limit (T4, L4) hold their clock well under the boost clock through a full FMA load, healthy as they are.
inline constexpr double kHealthyCopyFraction = 0.70;
inline constexpr double kHealthyFmaFraction = 0.60;

// What the health measurement found (the probe's JSON, judged), and whether perf points may be awarded.
struct Health {
  Finding finding;
  bool measured = false;  // a GPU's figures were measured (not a dry run, not skipped)
  bool fit = true;        // false: perf points are withheld
  double copy_gbps = 0, fma_tflops = 0;
  std::string home_jit_cache;  // outside the sandbox (calibration, the probe): "writable" or why not; "" unknown
};
// CUDA's JIT cache under the grader's own HOME (calibration and the health probe run outside the sandbox, whose
// processes get a scratch HOME): a warning when it is not writable, nothing when all is well or unknown.
std::optional<Finding> home_jit_cache_check(const Health& health);

// ---- the checks: toolkit and driver, the sandbox, the GPU's state, its health ----
std::vector<Finding> toolchain_checks(const Facts& f);
std::vector<Finding> sandbox_checks(const Facts& f, Tools& tools);
std::vector<Finding> state_checks(const Facts& f);
Health health_check(const Facts& f, Tools& tools, double seconds);

}  // namespace rooflab::grader::doctor
