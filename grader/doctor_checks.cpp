// The doctor's checks (doctor_checks.hpp). Each message names what was seen; each fix is a command or a
// choice the reader can make now. The version rules are the launcher's (README.md "Oldest supported").
#include "doctor_checks.hpp"

#include <rooflab/specs.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <regex>
#include <sstream>

namespace rooflab::grader::doctor {

std::string_view to_string(Level level) {
  switch (level) {
    case Level::ok: return "ok";
    case Level::note: return "note";
    case Level::warning: return "warning";
    case Level::error: return "error";
  }
  return "?";
}

namespace {

std::string trim(std::string s) {
  const auto not_space = [](unsigned char c) { return std::isspace(c) == 0; };
  s.erase(s.begin(), std::find_if(s.begin(), s.end(), not_space));
  s.erase(std::find_if(s.rbegin(), s.rend(), not_space).base(), s.end());
  return s;
}

std::vector<std::string> split(const std::string& line, char sep) {
  std::vector<std::string> out;
  std::stringstream in(line);
  for (std::string cell; std::getline(in, cell, sep);) out.push_back(trim(cell));
  return out;
}

std::optional<Version> version_after(const std::string& text, const std::string& pattern) {
  std::smatch m;
  if (!std::regex_search(text, m, std::regex(pattern + R"(\s*(\d+)\.(\d+))"))) return std::nullopt;
  return Version{std::stoi(m[1]), std::stoi(m[2])};
}

// "525.60.13" < "525.60"? Compared field by field as numbers.
bool driver_older_than(const std::string& have, const std::string& want) {
  const auto a = split(have, '.'), b = split(want, '.');
  for (std::size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    const int x = i < a.size() ? std::atoi(a[i].c_str()) : 0, y = i < b.size() ? std::atoi(b[i].c_str()) : 0;
    if (x != y) return x < y;
  }
  return false;
}

std::string first_line(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line) && trim(line).empty()) {}
  return trim(line);
}

// Compute capability "9.0" -> 90.
int cc_number(const std::string& cc) {
  const auto parts = split(cc, '.');
  return parts.size() == 2 ? std::atoi(parts[0].c_str()) * 10 + std::atoi(parts[1].c_str()) : 0;
}

Finding ok(const std::string& check, const std::string& message) { return {check, Level::ok, message, ""}; }

}  // namespace

std::vector<std::map<std::string, std::string>> parse_csv(const std::string& text) {
  std::vector<std::map<std::string, std::string>> rows;
  std::istringstream in(text);
  std::vector<std::string> header;
  for (std::string line; std::getline(in, line);) {
    if (trim(line).empty()) continue;
    auto cells = split(line, ',');
    if (header.empty()) {
      for (auto& c : cells) c = trim(c.substr(0, c.find(" [")));  // "clocks.max.sm [MHz]" -> clocks.max.sm
      header = std::move(cells);
      continue;
    }
    if (cells.size() != header.size()) continue;  // "No running processes found" and the like
    std::map<std::string, std::string> row;
    for (std::size_t i = 0; i < header.size(); ++i) row[header[i]] = cells[i];
    rows.push_back(std::move(row));
  }
  return rows;
}

std::optional<double> number(const std::string& field) {
  char* end = nullptr;
  const double v = std::strtod(field.c_str(), &end);
  if (end == field.c_str()) return std::nullopt;
  return v;
}

std::string Facts::field(const std::string& name) const {
  const auto it = gpu.find(name);
  return it == gpu.end() ? "" : it->second;
}

namespace {

void gather_nvidia(Facts& f, Tools& tools) {
  const ToolOutput smi = tools.get("nvidia-smi");
  f.smi_found = smi.found;
  f.smi_exit = smi.exit_code;
  f.smi_first_line = first_line(smi.text);
  std::smatch m;
  if (smi.found && smi.exit_code == 0) {
    f.driver_cuda = version_after(smi.text, "CUDA Version:");
    if (std::regex_search(smi.text, m, std::regex(R"(Driver Version:\s*([\d.]+))"))) f.driver_header = m[1];
  }
  const ToolOutput q = tools.get("nvidia-smi-gpu");
  if (q.found && q.exit_code != 0) f.query_error = first_line(q.text);
  if (q.found && q.exit_code == 0) {
    const auto rows = parse_csv(q.text);
    f.gpu_count = static_cast<int>(rows.size());
    if (!rows.empty()) f.gpu = rows.front();
  }
  const ToolOutput apps = tools.get("nvidia-smi-apps");
  if (apps.found && apps.exit_code == 0) f.apps = parse_csv(apps.text);
  const ToolOutput params = tools.get("nvidia-params");
  if (params.found && std::regex_search(params.text, m, std::regex(R"(RmProfilingAdminOnly:\s*(\d+))"))) {
    f.profiling_admin_only = m[1];
  }
  std::istringstream dev(tools.get("dev-nvidia").text);
  for (std::string name; std::getline(dev, name);) {
    if (!trim(name).empty()) f.dev.push_back(trim(name));
  }
}

void gather_toolkit(Facts& f, Tools& tools) {
  const ToolOutput nvcc = tools.get("nvcc-version");
  f.nvcc_found = nvcc.found && nvcc.exit_code == 0;
  if (f.nvcc_found) f.toolkit = version_after(nvcc.text, "release");
  const ToolOutput archs = tools.get("nvcc-archs");
  if (archs.found && archs.exit_code == 0) {
    const std::regex arch(R"((?:compute|sm)_(\d+))");
    for (std::sregex_iterator it(archs.text.begin(), archs.text.end(), arch), end; it != end; ++it) {
      const int a = std::stoi((*it)[1]);
      if (std::find(f.toolkit_archs.begin(), f.toolkit_archs.end(), a) == f.toolkit_archs.end()) f.toolkit_archs.push_back(a);
    }
    std::sort(f.toolkit_archs.begin(), f.toolkit_archs.end());
  }
  std::smatch m;
  const std::string cache = tools.get("build-cache").text;
  if (std::regex_search(cache, m, std::regex(R"(CMAKE_CUDA_ARCHITECTURES:[A-Z]*=([^\n]*))"))) f.build_archs = trim(m[1]);
}

void gather_kernel(Facts& f, Tools& tools) {
  f.landlock = trim(tools.get("landlock").text);
  f.kernel_release = trim(tools.get("uname").text);
  f.lsm = trim(tools.get("lsm").text);
  std::smatch m;
  const std::string status = tools.get("proc-status").text;
  f.seccomp_filter = std::regex_search(status, m, std::regex(R"(Seccomp:\s*2)"));
  const ToolOutput euid = tools.get("euid");
  if (euid.found) f.euid = std::atoi(euid.text.c_str());
}

}  // namespace

Facts gather(Tools& tools) {
  Facts f;
  f.fixtures = tools.fixtures();
  gather_nvidia(f, tools);
  gather_toolkit(f, tools);
  gather_kernel(f, tools);
  return f;
}

// ---- toolkit, driver, architecture ----

namespace {

constexpr const char* kCuda12Fix =
    "build with a CUDA 12.4-12.9 toolkit instead (most images have one in /usr/local/cuda-12.*): "
    "PATH=/usr/local/cuda-12.X/bin:$PATH ./rooflab ..., after rm -rf build/default so that CMake finds it";

Finding toolkit_check(const Facts& f) {
  if (!f.nvcc_found) {
    return {"toolkit", Level::warning, "no CUDA toolkit (nvcc) found: the GPU, perf and static tests cannot be built",
            "install CUDA 12.4 or later (developer.nvidia.com/cuda-downloads) and put its bin/ on PATH"};
  }
  if (!f.toolkit) return {"toolkit", Level::warning, "nvcc --version names no release", "check that nvcc runs"};
  if (*f.toolkit < Version{12, 4}) {
    return {"toolkit", Level::error, fmt::format("CUDA toolkit {} is older than rooflab's oldest, 12.4", f.toolkit->str()),
            "install CUDA 12.4-12.9 (driver 525.60 or later) or CUDA 13 (driver 580 or later)"};
  }
  return ok("toolkit", fmt::format("CUDA toolkit {}", f.toolkit->str()));
}

Finding driver_check(const Facts& f) {
  if (!f.smi_found) {
    return {"driver", Level::note, "no nvidia-smi: no NVIDIA driver here (or the container was started without it), "
            "so the GPU checks are skipped", "on a GPU machine: install the driver; in a container: start it with the "
            "NVIDIA Container Toolkit (docker run --gpus all)"};
  }
  if (f.smi_exit != 0) {
    return {"driver", Level::error, "nvidia-smi failed: " + f.smi_first_line,
            "the driver is not loaded or does not match its kernel module (after a driver update: reboot; otherwise "
            "sudo modprobe nvidia), or the container has no GPU (docker run --gpus all)"};
  }
  // The header names the driver even when the query fails (a driver too old for one of its fields).
  const std::string driver = f.field("driver_version").empty() ? f.driver_header : f.field("driver_version");
  if (!driver.empty() && driver_older_than(driver, "525.60")) {
    return {"driver", Level::error, fmt::format("driver {} is older than any CUDA 12 program needs (525.60)", driver),
            "update the NVIDIA driver to 525.60 or later (580 or later for a CUDA 13 toolkit)"};
  }
  if (!f.query_error.empty()) {
    return {"driver", Level::error, fmt::format("driver {} answers nvidia-smi, but not its GPU query: {}", driver, f.query_error),
            "update the NVIDIA driver (525.60 or later; 580 or later for a CUDA 13 toolkit): the GPU checks below "
            "need its answers"};
  }
  const std::string seen = fmt::format("driver {} runs CUDA {} programs", driver, f.driver_cuda ? f.driver_cuda->str() : "?");
  if (!f.driver_cuda || !f.toolkit) return ok("driver", seen);
  if (f.driver_cuda->major < f.toolkit->major) {
    return {"driver", Level::error,
            fmt::format("{}, and the toolkit is CUDA {}: every test binary it builds fails with "
                        "cudaErrorInsufficientDriver", seen, f.toolkit->str()),
            fmt::format("update the driver to one for CUDA {} ({}), or {}", f.toolkit->major,
                        f.toolkit->major >= 13 ? "580 or later" : "a newer one", kCuda12Fix)};
  }
  if (f.driver_cuda->major == f.toolkit->major && f.driver_cuda->minor < f.toolkit->minor) {
    return {"driver", Level::warning,
            fmt::format("{}, older than the CUDA {} toolkit: it runs under minor-version compatibility (machine code "
                        "built for this GPU runs; newer PTX could not be compiled by the driver)", seen, f.toolkit->str()),
            "nothing is needed while the build targets this GPU (architecture below); to be safe, update the driver"};
  }
  return ok("driver", fmt::format("{}; the toolkit is CUDA {}", seen, f.toolkit->str()));
}

// What a toolkit that does not know this GPU should be replaced with.
std::string other_toolkit(int cc, const std::vector<int>& archs) {
  if (!archs.empty() && cc < archs.front()) {
    return fmt::format("this toolkit's oldest target is sm_{}: {} (CUDA 12 still targets sm_{})", archs.front(),
                       kCuda12Fix, cc);
  }
  return fmt::format("install a newer CUDA toolkit that lists sm_{} in nvcc --list-gpu-arch (CUDA 12.8 or later for "
                     "sm_100 and sm_120), then rm -rf build/default", cc);
}

Finding arch_check(const Facts& f) {
  const int cc = cc_number(f.field("compute_cap"));
  if (!f.has_gpu() || cc == 0) return {"architecture", Level::note, "no GPU here: nothing to compare the build with", ""};
  const std::string gpu = fmt::format("sm_{} ({})", cc, f.field("name"));
  if (!f.toolkit_archs.empty() &&
      std::find(f.toolkit_archs.begin(), f.toolkit_archs.end(), cc) == f.toolkit_archs.end()) {
    return {"architecture", Level::error,
            fmt::format("the CUDA {} toolkit cannot compile for {}: it targets sm_{} to sm_{}",
                        f.toolkit ? f.toolkit->str() : "?", gpu, f.toolkit_archs.front(), f.toolkit_archs.back()),
            other_toolkit(cc, f.toolkit_archs)};
  }
  const std::string cc_text = std::to_string(cc);
  std::vector<std::string> built = split(f.build_archs, ';');
  const bool targets = std::any_of(built.begin(), built.end(), [&](const std::string& a) {
    return a.substr(0, a.find('-')) == cc_text || a == "native" || a == "all" || a == "all-major";
  });
  if (!f.build_archs.empty() && !targets) {
    return {"architecture", Level::warning,
            fmt::format("this GPU is {}, and the build tree targets sm_{}", gpu, fmt::join(built, ";sm_")),
            fmt::format("nothing for ./rooflab grade (it configures for the GPU here); a build by hand needs "
                        "cmake --preset default -DCMAKE_CUDA_ARCHITECTURES={} (or the release preset: 75;80;86;89;90;100)",
                        cc)};
  }
  return ok("architecture", fmt::format("{}: the toolkit compiles for it{}", gpu,
                                        f.build_archs.empty() ? "" : " and the build tree targets it"));
}

}  // namespace

std::vector<Finding> toolchain_checks(const Facts& f) { return {toolkit_check(f), driver_check(f), arch_check(f)}; }

// ---- the sandbox: device files, Landlock, a kernel inside it ----

namespace {

bool has_dev(const Facts& f, const std::string& name) { return std::find(f.dev.begin(), f.dev.end(), name) != f.dev.end(); }

Finding devices_check(const Facts& f) {
  if (f.dev.empty()) {
    return {"device files", f.has_gpu() ? Level::error : Level::note, "no /dev/nvidia* files",
            f.has_gpu() ? "start the container with the NVIDIA Container Toolkit (docker run --gpus all)" : ""};
  }
  if (!has_dev(f, "nvidia-uvm")) {
    return {"device files", Level::error,
            fmt::format("no /dev/nvidia-uvm (there are {}): CUDA cannot allocate memory or launch a kernel without it "
                        "(cudaErrorNoDevice or cudaErrorUnknown)", fmt::join(f.dev, ", ")),
            "on the host: sudo nvidia-modprobe -u -c=0 (loads nvidia-uvm and makes its device file); in a container: "
            "start it with the NVIDIA Container Toolkit (docker run --gpus all), which passes it in"};
  }
  return ok("device files", fmt::format("/dev/{}", fmt::join(f.dev, ", /dev/")));
}

// Why the kernel offers no Landlock, from its errno, its version, its security modules and this process's
// seccomp filter.
Finding landlock_unavailable(const Facts& f) {
  const std::string err = f.landlock.substr(std::min(f.landlock.size(), std::size_t{6}));
  const std::string unconfined = "student code runs with the grader's rights (grade says so in its report)";
  const std::string seccomp_fix = "run the container with a seccomp profile that allows landlock_create_ruleset, "
                                  "landlock_add_rule and landlock_restrict_self (Docker 25's default profile does; "
                                  "or --security-opt seccomp=PROFILE.json); fine for your own code, not for grading a class";
  const int major = std::atoi(f.kernel_release.c_str());
  const int minor = std::atoi(f.kernel_release.substr(f.kernel_release.find('.') + 1).c_str());
  if (err == "EOPNOTSUPP") {
    return {"landlock", Level::warning,
            fmt::format("Landlock is built into kernel {} but not enabled (security modules: {}): {}", f.kernel_release,
                        f.lsm.empty() ? "?" : f.lsm, unconfined),
            "add landlock to the kernel's lsm= boot parameter (e.g. lsm=landlock," + (f.lsm.empty() ? "yama" : f.lsm) +
                ") and reboot"};
  }
  if (err == "EPERM" || (err == "ENOSYS" && f.seccomp_filter && (major > 5 || (major == 5 && minor >= 13)))) {
    return {"landlock", Level::warning,
            fmt::format("a seccomp filter on this process (a container's profile) blocks the Landlock system calls "
                        "({}; kernel {}): {}", err, f.kernel_release, unconfined),
            seccomp_fix};
  }
  if (err == "ENOSYS" && major > 0 && (major < 5 || (major == 5 && minor < 13))) {
    return {"landlock", Level::warning,
            fmt::format("kernel {} predates Landlock (Linux 5.13): {}", f.kernel_release, unconfined),
            "grade on a newer kernel (Ubuntu 22.04's 5.15 or later); fine for your own code, not for grading a class"};
  }
  return {"landlock", Level::warning,
          fmt::format("no Landlock ({}; kernel {}, security modules {}): {}", err, f.kernel_release,
                      f.lsm.empty() ? "?" : f.lsm, unconfined),
          "a kernel built with CONFIG_SECURITY_LANDLOCK and landlock in its lsm= list"};
}

Finding landlock_check(const Facts& f) {
  if (f.landlock.rfind("abi ", 0) != 0) return landlock_unavailable(f);
  const int abi = std::atoi(f.landlock.c_str() + 4);
  if (abi < 4) {
    return {"landlock", Level::warning,
            fmt::format("Landlock ABI {} (kernel {}): files are confined, TCP is not", abi, f.kernel_release),
            "a kernel of 6.7 or later (ABI 4) also refuses the network to student code"};
  }
  return ok("landlock", fmt::format("Landlock ABI {} (kernel {}): files, TCP{} confined", abi, f.kernel_release,
                                    abi >= 6 ? ", signals and abstract sockets" : ""));
}

// What a failed probe in the sandbox means, given what else is known.
Finding probe_failed(const Facts& f, const std::string& why) {
  if (!f.has_gpu()) {
    return {"sandbox device", Level::note, "no GPU here, so none for the test binaries either (the CUDA runtime in the "
            "sandbox says: " + why + ")", ""};
  }
  if (!has_dev(f, "nvidia-uvm")) {
    return {"sandbox device", Level::error,
            fmt::format("nvidia-smi sees {}, and a program in the grader's sandbox cannot use it ({}): /dev/nvidia-uvm "
                        "is missing", f.field("name"), why),
            "see \"device files\" above"};
  }
  return {"sandbox device", Level::error,
          fmt::format("nvidia-smi sees {}, and a program in the grader's sandbox cannot use it: {}", f.field("name"), why),
          "run ./rooflab grade --no-sandbox once: if the GPU tests pass there, the sandbox blocks something the driver "
          "needs (report it with this doctor's report); if not, the driver or container is at fault"};
}

Finding sandbox_device_check(const Facts& f, Tools& tools) {
  const ToolOutput p = tools.get("probe-device");
  if (!p.found) {
    return {"sandbox device", Level::warning, "the probe program is missing: " + p.text,
            "cmake --build build/default --target rooflab-doctor-probe"};
  }
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(p.text.substr(p.text.find('{')));
  } catch (const std::exception&) {
    return probe_failed(f, "the probe did not finish: " + first_line(p.text));
  }
  // /dev/shm is named beside a failure: a driver or library that needs it would fail there.
  const std::string shm = j.value("shm", std::string("?"));
  const std::string shm_note = shm == "writable" ? "" : "; /dev/shm there is " + shm;
  if (j.value("devices", 0) == 0 || j.contains("error")) {
    return probe_failed(f, j.value("error", std::string("no device")) + shm_note);
  }
  const std::string kernel = j.value("kernel", std::string("?"));
  if (kernel != "ran") return probe_failed(f, "the tiny kernel " + kernel + shm_note);
  const std::string jit = j.value("jit_cache", std::string("?"));
  if (jit != "writable") {
    return {"sandbox device", Level::error, "CUDA's JIT cache in the sandbox's HOME is " + jit,
            "set CUDA_CACHE_PATH to a writable folder (or CUDA_CACHE_DISABLE=1)"};
  }
  const std::string where = j.value("backend", "") == "cpu"
                                ? "on the CPU backend's pretend GPU (a dry run: no GPU was used)"
                                : "on the GPU";
  return ok("sandbox device", fmt::format("a kernel ran inside the test binaries' sandbox {} ({}, compute capability {}) "
                                          "and wrote the right values; the JIT cache is writable; /dev/shm is {}",
                                          where, j.value("name", "?"), j.value("cc", "?"),
                                          shm == "writable" ? shm : shm + " (the kernel ran without it)"));
}

}  // namespace

std::vector<Finding> sandbox_checks(const Facts& f, Tools& tools) {
  return {devices_check(f), landlock_check(f), sandbox_device_check(f, tools)};
}

// ---- the GPU's state ----

namespace {

Finding processes_check(const Facts& f) {
  if (f.apps.empty()) return ok("other processes", "none on the GPU (nvidia-smi lists what this container can see)");
  std::vector<std::string> who;
  const auto get = [](const std::map<std::string, std::string>& row, const char* key) {
    const auto it = row.find(key);
    return it == row.end() ? std::string() : it->second;
  };
  for (const auto& a : f.apps) {
    // nvidia-smi heads the used_memory column "used_gpu_memory [MiB]".
    const std::string memory = get(a, "used_gpu_memory").empty() ? get(a, "used_memory") : get(a, "used_gpu_memory");
    who.push_back(fmt::format("pid {} {} ({})", get(a, "pid").empty() ? "?" : get(a, "pid"),
                              get(a, "process_name").empty() ? "?" : get(a, "process_name"), memory.empty() ? "?" : memory));
  }
  return {"other processes", Level::warning,
          fmt::format("{} other process{} on the GPU: {}; they share its bandwidth and SMs, so timings vary",
                      who.size(), who.size() == 1 ? "" : "es", fmt::join(who, ", ")),
          "grade when they have finished (or stop them); the health check below shows how much they cost"};
}

Finding mig_check(const Facts& f) {
  if (f.mig()) {
    return {"MIG", Level::warning,
            "MIG is on: programs see one slice of the GPU (part of its SMs and bandwidth); perf is graded against the "
            "slice's own measured ceilings, and the datasheet comparison does not apply",
            "for figures comparable with other GPUs, grade on a whole GPU (sudo nvidia-smi -i 0 -mig 0 where you own it)"};
  }
  return ok("MIG", f.field("mig.mode.current").empty() ? "not reported" : "MIG mode " + f.field("mig.mode.current"));
}

Finding persistence_check(const Facts& f) {
  if (f.field("persistence_mode") == "Disabled") {
    return {"persistence", Level::warning,
            "persistence mode is off: the driver tears the GPU down between programs, so each test process starts "
            "with a cold GPU (about a second more each, clocks ramping up)",
            "sudo nvidia-smi -pm 1 (or run nvidia-persistenced)"};
  }
  return ok("persistence", "persistence mode " + (f.field("persistence_mode").empty() ? "?" : f.field("persistence_mode")));
}

Finding clocks_check(const Facts& f) {
  const auto cur = number(f.field("clocks.current.sm")), max = number(f.field("clocks.max.sm"));
  const auto mem = number(f.field("clocks.current.memory")), mem_max = number(f.field("clocks.max.memory"));
  const auto app = number(f.field("clocks.applications.graphics"));
  const std::string seen = fmt::format("SM clock {} of {} MHz, memory {} of {} MHz (at rest a GPU runs slower)",
                                       cur ? fmt::format("{:.0f}", *cur) : "?", max ? fmt::format("{:.0f}", *max) : "?",
                                       mem ? fmt::format("{:.0f}", *mem) : "?", mem_max ? fmt::format("{:.0f}", *mem_max) : "?");
  if (app && max && *app < 0.9 * *max) {
    return {"clocks", Level::warning, fmt::format("{}; application clocks are set to {:.0f} MHz", seen, *app),
            "sudo nvidia-smi -rac (reset application clocks) and sudo nvidia-smi -rgc (unlock the GPU clock)"};
  }
  const GpuSpec* spec = find_gpu_by_cuda_name(f.field("name"));
  if (spec != nullptr && spec->boost_clock_mhz && max && *max < 0.9 * *spec->boost_clock_mhz) {
    return {"clocks", Level::warning,
            fmt::format("{}; the datasheet's boost clock is {:.0f} MHz", seen, *spec->boost_clock_mhz),
            "a capped or lower-clocked variant: grading is against the ceilings measured here, but the health check "
            "compares with the datasheet"};
  }
  return ok("clocks", seen);
}

// nvidia-smi's clocks_throttle_reasons.active bits (nvml.h, nvmlClocksEventReason*).
struct Reason {
  unsigned long long bit;
  const char* name;
  Level level;
  const char* fix;
};
constexpr Reason kReasons[] = {
    {0x2, "application clocks set below the maximum", Level::warning, "sudo nvidia-smi -rac"},
    {0x4, "software power cap (at its power limit)", Level::warning, "see \"power\"; at rest this should not be set"},
    {0x8, "hardware slowdown (power supply or temperature alarm)", Level::error,
     "a hardware or host problem: on a cloud instance ask for another one"},
    {0x20, "software thermal slowdown (over its target temperature)", Level::error,
     "let it cool, check fans and airflow; on a cloud instance ask for another one"},
    {0x40, "hardware thermal slowdown (too hot)", Level::error,
     "let it cool, check fans and airflow; on a cloud instance ask for another one"},
    {0x80, "hardware power brake (the power supply asked it to slow down)", Level::error,
     "a host power problem: on a cloud instance ask for another one"},
};

Finding throttle_check(const Facts& f) {
  const std::string raw = f.field("clocks_throttle_reasons.active");
  if (raw.rfind("0x", 0) != 0) return {"throttling", Level::note, "not reported (" + (raw.empty() ? "?" : raw) + ")", ""};
  const unsigned long long bits = std::stoull(raw, nullptr, 16);
  Level worst = Level::ok;
  std::vector<std::string> names, fixes;
  for (const auto& r : kReasons) {
    if ((bits & r.bit) == 0) continue;
    names.emplace_back(r.name);
    if (std::find(fixes.begin(), fixes.end(), r.fix) == fixes.end()) fixes.emplace_back(r.fix);
    worst = std::max(worst, r.level);
  }
  if (names.empty()) return ok("throttling", fmt::format("none ({}{})", raw, bits & 1 ? ": idle" : ""));
  return {"throttling", worst,
          fmt::format("the GPU holds its clocks down now: {} ({}; {} C)", fmt::join(names, ", "), raw,
                      f.field("temperature.gpu").empty() ? "?" : f.field("temperature.gpu")),
          fmt::format("{}", fmt::join(fixes, "; "))};
}

Finding power_check(const Facts& f) {
  const auto limit = number(f.field("power.limit")), def = number(f.field("power.default_limit"));
  if (!limit) return {"power", Level::note, "power limit not reported", ""};
  if (def && *limit < 0.95 * *def) {
    return {"power", Level::warning, fmt::format("power limit {:.0f} W, below its default {:.0f} W: clocks drop under load",
                                                 *limit, *def),
            fmt::format("sudo nvidia-smi -pl {:.0f}", *def)};
  }
  return ok("power", fmt::format("power limit {:.0f} W{}", *limit, def ? fmt::format(" (default {:.0f} W)", *def) : ""));
}

Finding ecc_check(const Facts& f) {
  const std::string cur = f.field("ecc.mode.current"), pending = f.field("ecc.mode.pending");
  if (!pending.empty() && !cur.empty() && pending != cur && pending.front() != '[') {
    return {"ECC", Level::warning, fmt::format("ECC is {} and becomes {} at the next reboot: the ceilings change then", cur, pending),
            "reboot before grading, then ./rooflab calibrate --remeasure"};
  }
  return ok("ECC", "ECC " + (cur.empty() ? "not reported" : cur));
}

Finding counters_check(const Facts& f) {
  if (!f.profiling_admin_only) return {"perf counters", Level::note, "not known (no /proc/driver/nvidia/params)", ""};
  if (*f.profiling_admin_only == "0") return ok("perf counters", "readable by every user (Nsight Compute works)");
  if (f.euid == 0) return ok("perf counters", "restricted to administrators, and this is root");
  return {"perf counters", Level::warning,
          "the driver lets only administrators read the performance counters: Nsight Compute fails with "
          "ERR_NVGPUCTRPERM (grading does not need them; profiling your kernels does)",
          "run ncu with sudo, or on the host: echo 'options nvidia NVreg_RestrictProfilingToAdminUsers=0' | sudo tee "
          "/etc/modprobe.d/nvidia-profiling.conf, then reboot"};
}

}  // namespace

std::vector<Finding> state_checks(const Facts& f) {
  if (!f.has_gpu()) return {{"GPU state", Level::note, "no GPU here: its processes, clocks, power and ECC are not checked", ""}};
  return {processes_check(f), mig_check(f), persistence_check(f), clocks_check(f), throttle_check(f),
          power_check(f), ecc_check(f), counters_check(f)};
}

// ---- health: copy bandwidth and FP32 FMA against the datasheet ----

namespace {

// The measured figures against the datasheet's: fit, or why not.
Health judge(const Facts& f, const nlohmann::json& j, Health h) {
  const GpuSpec* spec = find_gpu_by_cuda_name(j.value("name", f.field("name")));
  const std::string figures = fmt::format("copy {:.0f} GB/s, FP32 FMA {:.1f} TFLOP/s in {:.0f} s", h.copy_gbps,
                                          h.fma_tflops, j.value("seconds", 0.0));
  if (f.mig()) {
    h.finding = ok("health", figures + "; a MIG slice: not compared with the whole GPU's datasheet");
    return h;
  }
  if (spec == nullptr) {
    h.finding = {"health", Level::warning, figures + "; this GPU is not in data/gpus.json, so nothing to compare with",
                 "add it to data/gpus.json with its datasheet figures and their source"};
    return h;
  }
  const double copy = h.copy_gbps / spec->bandwidth_gbps, fma = h.fma_tflops / spec->fp32_tflops;
  const std::string shares = fmt::format("copy {:.0f} GB/s is {:.0f}% of the datasheet's {:.0f}; FP32 FMA {:.1f} TFLOP/s "
                                         "is {:.0f}% of {:.1f}", h.copy_gbps, 100 * copy, spec->bandwidth_gbps,
                                         h.fma_tflops, 100 * fma, spec->fp32_tflops);
  if (copy >= kHealthyCopyFraction && fma >= kHealthyFmaFraction) {
    h.finding = ok("health", shares);
    return h;
  }
  h.fit = false;
  h.finding = {"health", Level::error,
               fmt::format("{}: under {:.0f}% (copy) or {:.0f}% (FMA), this GPU is not fit to grade performance on "
                           "(perf points are withheld)", shares, 100 * kHealthyCopyFraction, 100 * kHealthyFmaFraction),
               "find the cause above (other processes, throttling, power cap, clocks) or use another GPU; then "
               "./rooflab doctor measures again"};
  return h;
}

}  // namespace

Health health_check(const Facts& f, Tools& tools, double seconds) {
  Health h;
  if (!f.has_gpu()) {
    h.finding = {"health", Level::note, "no GPU here: the copy and FMA measurement needs one", ""};
    return h;
  }
  const ToolOutput p = tools.get("probe-health", {"--seconds", fmt::format("{:g}", seconds)});
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(p.text.substr(p.text.find('{')));
  } catch (const std::exception&) {
    h.finding = {"health", Level::error, "the measurement did not finish: " + first_line(p.text),
                 "run ./rooflab calibrate --remeasure to see the error in full"};
    return h;
  }
  if (j.contains("error")) {
    h.finding = {"health", Level::error, "the measurement failed: " + j.value("error", std::string()),
                 "see the sandbox device check above"};
    return h;
  }
  h.home_jit_cache = j.value("jit_cache", std::string());
  h.copy_gbps = j.value("copy_gbps", 0.0);
  h.fma_tflops = j.value("fma_tflops", 0.0);
  if (j.value("backend", "") == "cpu") {
    h.finding = ok("health", fmt::format("dry run on the CPU backend's pretend GPU ({}): copy {:.3f} GB/s, FP32 FMA {:.6f} "
                                         "TFLOP/s in {:.1f} s; CPU timings, not compared with any datasheet",
                                         j.value("name", "?"), h.copy_gbps, h.fma_tflops, j.value("seconds", 0.0)));
    return h;
  }
  h.measured = true;
  return judge(f, j, h);
}

std::optional<Finding> home_jit_cache_check(const Health& health) {
  if (health.home_jit_cache.empty() || health.home_jit_cache == "writable") return std::nullopt;
  return Finding{"JIT cache", Level::warning,
                 "CUDA's JIT cache under your HOME (~/.nv/ComputeCache) is " + health.home_jit_cache +
                     ": calibration and the probes compile their PTX again on every run (slower, not wrong); the test "
                     "binaries are not affected (the sandbox gives each its own HOME)",
                 "export CUDA_CACHE_PATH=/tmp/$USER-cuda-cache (a writable folder) before ./rooflab"};
}

}  // namespace rooflab::grader::doctor
