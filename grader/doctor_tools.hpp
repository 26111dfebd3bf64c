// The one seam between `./rooflab doctor` and the machine: every outside fact the doctor judges (a tool's
// output, a /proc file, the kernel's Landlock answer, the probe run in the sandbox) is read here, by name.
// With ROOFLAB_DOCTOR_FIXTURES=DIR each name is read from DIR/<fixture file> instead, so that CI, without a
// GPU, runs every check against canned outputs (grader/tests/doctor/<case>/). docs/doctor.md lists the names.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace rooflab::grader::doctor {

struct ToolOutput {
  bool found = false;   // false: the tool is not installed, or the file does not exist here
  int exit_code = 0;
  std::string text;     // stdout and stderr, or the file
};

// Where a source's answer comes from.
struct Source {
  std::string name;             // "nvidia-smi-gpu"
  std::string fixture;          // its file in a fixtures folder: "nvidia-smi.csv"
  std::string what;             // for the report: the command line or the file
};
// Every source the doctor reads, in the order the report lists them.
const std::vector<Source>& sources();

class Tools {
 public:
  virtual ~Tools() = default;
  // The answer of the source `name` (one of sources()); `args` are extra arguments (the probe's --seconds).
  virtual ToolOutput get(const std::string& name, const std::vector<std::string>& args = {}) = 0;
  // Whether these are canned answers (the report says so).
  virtual std::string fixtures() const { return ""; }
};

// The machine's answers, or a fixtures folder's when ROOFLAB_DOCTOR_FIXTURES is set. In a fixtures folder a
// missing file reads as "not found", except for the probes (probe-device, probe-health): without their file
// the probe program runs (ROOFLAB_DOCTOR_PROBE names it; CI points it at the CPU backend's build).
std::unique_ptr<Tools> make_tools();

// The probe program: ROOFLAB_DOCTOR_PROBE, else rooflab-doctor-probe beside this build's grader.
std::filesystem::path probe_program();

// The nvcc this build uses (its CMakeCache.txt says which), else "nvcc" from PATH. `release` compiles with it too.
std::string nvcc();

}  // namespace rooflab::grader::doctor
