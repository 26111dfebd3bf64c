// The doctor's seam (doctor_tools.hpp): the machine's answers, or a fixtures folder's.
#include "doctor_tools.hpp"

#include "process.hpp"
#include "sandbox.hpp"
#include "util.hpp"

#if defined(ROOFLAB_HAVE_CUDA)
#include <rooflab/testing/calibration.hpp>
#endif

#include <fmt/format.h>

#include <fcntl.h>
#include <linux/landlock.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace rooflab::grader::doctor {

namespace fs = std::filesystem;

namespace {

// The GPU's state in one query: nvidia-smi answers these by name (the header row), so a field it does not
// know reads as missing rather than shifting the others. clocks_throttle_reasons is the name every driver
// since 450 accepts (535 added clocks_event_reasons as its new name).
constexpr const char* kGpuQuery =
    "--query-gpu=index,name,uuid,driver_version,compute_cap,persistence_mode,mig.mode.current,clocks.current.sm,"
    "clocks.max.sm,clocks.current.memory,clocks.max.memory,clocks.applications.graphics,power.limit,"
    "power.default_limit,clocks_throttle_reasons.active,ecc.mode.current,ecc.mode.pending,temperature.gpu,"
    "utilization.gpu";

}  // namespace

const std::vector<Source>& sources() {
  static const std::vector<Source> all = {
      {"nvidia-smi", "nvidia-smi.txt", "nvidia-smi (its header names the driver's CUDA version)"},
      {"nvidia-smi-gpu", "nvidia-smi.csv", std::string("nvidia-smi ") + kGpuQuery + " --format=csv"},
      {"nvidia-smi-apps", "nvidia-smi-apps.csv", "nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv"},
      {"nvcc-version", "nvcc-version.txt", "nvcc --version (the toolkit this build uses)"},
      {"nvcc-archs", "nvcc-archs.txt", "nvcc --list-gpu-arch"},
      {"build-cache", "CMakeCache.txt", "the build tree's CMakeCache.txt (CMAKE_CUDA_ARCHITECTURES)"},
      {"dev-nvidia", "dev.txt", "the NVIDIA device files in /dev"},
      {"landlock", "landlock.txt", "landlock_create_ruleset(LANDLOCK_CREATE_RULESET_VERSION): its ABI or errno"},
      {"uname", "uname.txt", "uname -r"},
      {"lsm", "lsm.txt", "/sys/kernel/security/lsm (the security modules enabled)"},
      {"proc-status", "proc-status.txt", "/proc/self/status (Seccomp: a filter on this process)"},
      {"euid", "euid.txt", "the effective user id"},
      {"nvidia-params", "nvidia-params.txt", "/proc/driver/nvidia/params (RmProfilingAdminOnly)"},
      {"probe-device", "probe-device.json", "rooflab-doctor-probe --device, in the test binaries' sandbox"},
      {"probe-health", "probe-health.json", "rooflab-doctor-probe --health (copy and FP32 FMA, outside the sandbox)"},
      {"calibrate", "calibrate.txt", "rooflab calibrate --remeasure (--record)"},
      {"ceilings", "ceilings.json", "the ceilings calibrate cached for this GPU (--record)"},
      {"grade-solutions", "results.json", "rooflab grade --solutions (--record): its results.json"},
  };
  return all;
}

fs::path probe_program() {
  if (const char* p = std::getenv("ROOFLAB_DOCTOR_PROBE"); p != nullptr && *p != '\0') return p;
  return own_build_dir() / "grader" / "rooflab-doctor-probe";
}

// The nvcc the build uses (its CMakeCache.txt says which), else the one on PATH.
std::string nvcc() {
  std::ifstream cache(own_build_dir() / "CMakeCache.txt");
  for (std::string line; std::getline(cache, line);) {
    if (line.rfind("CMAKE_CUDA_COMPILER:", 0) == 0) return line.substr(line.find('=') + 1);
  }
  return "nvcc";
}

namespace {

ToolOutput read_file(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return {};
  std::stringstream text;
  text << in.rdbuf();
  return {true, 0, text.str()};
}

ToolOutput run(const std::vector<std::string>& argv, double timeout_s = 30, std::optional<Sandbox> box = {},
               bool echo = false) {
  const SandboxScope scope(std::nullopt);  // the doctor's own tools run unconfined unless `box` says otherwise
  const ProcessResult p = run_process(argv, {.timeout_s = timeout_s, .echo = echo, .sandbox = std::move(box)});
  if (p.failed_to_start) return {};
  ToolOutput out{true, p.ok() ? 0 : (p.exit_code > 0 ? p.exit_code : 1), p.output};
  if (p.timed_out || p.signaled) out.text += "\n(" + p.describe() + ")";
  return out;
}

std::string dev_nvidia() {
  std::string out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/dev", ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("nvidia", 0) == 0) out += name + "\n";
  }
  return out;
}

// The kernel's own answer, with the errno that says why there is none (sandbox.cpp turns it into a sentence;
// the doctor also needs to tell a seccomp filter from a kernel without Landlock).
std::string landlock_answer() {
  const long abi = syscall(444 /* landlock_create_ruleset */, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  if (abi > 0) return fmt::format("abi {}\n", abi);
  const int err = errno;
  const char* name = err == ENOSYS ? "ENOSYS" : err == EOPNOTSUPP ? "EOPNOTSUPP" : err == EPERM ? "EPERM" : nullptr;
  return name != nullptr ? fmt::format("errno {}\n", name) : fmt::format("errno {}\n", err);
}

// The newest ceilings file calibrate cached for the GPU `uuid` (its name starts with the UUID; the driver and
// clock that complete the key are the calibration's business).
ToolOutput cached_ceilings([[maybe_unused]] const std::string& uuid) {
#if defined(ROOFLAB_HAVE_CUDA)
  fs::path newest;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(rooflab::cache_dir(), ec)) {
    if (e.path().filename().string().rfind("ceilings-" + uuid + "-", 0) != 0) continue;
    if (newest.empty() || fs::last_write_time(e.path(), ec) > fs::last_write_time(newest, ec)) newest = e.path();
  }
  if (!newest.empty()) return read_file(newest);
#endif
  return {};
}

std::vector<std::string> with_args(std::vector<std::string> first, const std::vector<std::string>& more) {
  first.insert(first.end(), more.begin(), more.end());
  return first;
}

ToolOutput probe(const std::vector<std::string>& args, bool sandboxed) {
  const fs::path program = probe_program();
  if (!fs::exists(program)) return {false, 0, program.string() + " was not built"};
  std::vector<std::string> argv = {program.string()};
  argv.insert(argv.end(), args.begin(), args.end());
  if (!sandboxed) return run(argv, 300);
  // The sandbox of a test binary, exactly: the same policy function grade uses.
  const ScratchRoot scratch;
  Sandbox box = test_sandbox({source_dir(), own_build_dir(), source_dir() / "labs", {}, scratch.path()});
  box.read_exec.push_back(program.parent_path());  // a probe outside the build tree (ROOFLAB_DOCTOR_PROBE)
  return run(argv, 120, box);
}

class Machine : public Tools {
 public:
  ToolOutput get(const std::string& name, const std::vector<std::string>& args) override {
    if (name == "nvidia-smi") return run({"nvidia-smi"});
    if (name == "nvidia-smi-gpu") return run({"nvidia-smi", kGpuQuery, "--format=csv"});
    if (name == "nvidia-smi-apps") return run({"nvidia-smi", "--query-compute-apps=pid,process_name,used_memory", "--format=csv"});
    if (name == "nvcc-version") return run({nvcc(), "--version"});
    if (name == "nvcc-archs") return run({nvcc(), "--list-gpu-arch"});
    if (name == "build-cache") return read_file(own_build_dir() / "CMakeCache.txt");
    if (name == "dev-nvidia") return {true, 0, dev_nvidia()};
    if (name == "landlock") return {true, 0, landlock_answer()};
    if (name == "uname") {
      utsname u{};
      return uname(&u) == 0 ? ToolOutput{true, 0, std::string(u.release) + "\n"} : ToolOutput{};
    }
    if (name == "lsm") return read_file("/sys/kernel/security/lsm");
    if (name == "proc-status") return read_file("/proc/self/status");
    if (name == "euid") return {true, 0, std::to_string(geteuid()) + "\n"};
    if (name == "nvidia-params") return read_file("/proc/driver/nvidia/params");
    if (name == "probe-device") return probe({"--device"}, true);
    if (name == "probe-health") return probe(with_args({"--health"}, args), false);
    const std::string self = fs::read_symlink("/proc/self/exe").string();
    if (name == "calibrate") return run({self, "calibrate", "--remeasure"}, 1800, std::nullopt, true);
    if (name == "ceilings") return cached_ceilings(args.empty() ? "" : args[0]);
    if (name == "grade-solutions") {
      // args: the report folder; the grade's progress is shown as it runs, its results.json is the answer.
      const fs::path dir = args.empty() ? fs::path("rooflab-report") : fs::path(args[0]);
      const ToolOutput graded = run({self, "grade", "--solutions", "--report-dir", dir.string(), "--json",
                                     (dir / "results.json").string()}, 7200, std::nullopt, true);
      if (!graded.found || graded.exit_code != 0) return {graded.found, graded.exit_code, graded.text};
      return read_file(dir / "results.json");
    }
    throw std::logic_error("doctor: no source named " + name);
  }
};

class Fixtures : public Tools {
 public:
  explicit Fixtures(fs::path dir) : dir_(std::move(dir)) {}
  ToolOutput get(const std::string& name, const std::vector<std::string>& args) override {
    for (const auto& s : sources()) {
      if (s.name != name) continue;
      ToolOutput out = read_file(dir_ / s.fixture);
      // A canned tool that failed: "<file>.exit" holds its exit code.
      if (const ToolOutput rc = read_file(dir_ / (s.fixture + ".exit")); rc.found) out.exit_code = std::atoi(rc.text.c_str());
      if (!out.found && name == "probe-device") return probe({"--device"}, true);
      if (!out.found && name == "probe-health") return probe(with_args({"--health"}, args), false);
      return out;
    }
    throw std::logic_error("doctor: no source named " + name);
  }
  std::string fixtures() const override { return dir_.string(); }

 private:
  fs::path dir_;
};

}  // namespace

std::unique_ptr<Tools> make_tools() {
  if (const char* d = std::getenv("ROOFLAB_DOCTOR_FIXTURES"); d != nullptr && *d != '\0') {
    if (!fs::is_directory(d)) throw std::invalid_argument(fmt::format("ROOFLAB_DOCTOR_FIXTURES={}: not a folder", d));
    return std::make_unique<Fixtures>(d);
  }
  return std::make_unique<Machine>();
}

}  // namespace rooflab::grader::doctor
