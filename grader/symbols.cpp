#include "symbols.hpp"

#include "build.hpp"
#include "process.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cxxabi.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <sstream>

namespace rooflab::grader {

namespace fs = std::filesystem;

std::vector<ForbiddenLibrary> forbidden_libraries(const Lab& lab) {
  std::ifstream in(lab.rubric);
  if (!in) return {};
  std::vector<ForbiddenLibrary> out;
  try {
    const auto j = nlohmann::json::parse(in);
    if (!j.contains("forbidden_symbols")) return {};
    for (const auto& e : j.at("forbidden_symbols")) {
      ForbiddenLibrary f{e.at("library").get<std::string>(), e.at("pattern").get<std::string>()};
      std::regex check(f.pattern);  // a bad pattern is the lab author's error: say so now, not per student
      out.push_back(std::move(f));
    }
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("{}: malformed \"forbidden_symbols\" ({}); each entry is "
                                         "{{\"library\": NAME, \"pattern\": REGEX}}", lab.rubric.string(), e.what()));
  }
  return out;
}

std::vector<fs::path> student_objects(const fs::path& build_dir, const Lab& lab, const Binary& binary,
                                      const std::string& student_file) {
  std::vector<fs::path> out;
  if (binary.target.empty() || !binary_uses(binary, student_file)) return out;
  // CMake puts a target's objects under CMakeFiles/<target>.dir of the lab's build folder: the student file's
  // own (kernels.cu.o, answers.cpp.o, at any depth: a submission's files lie outside the source tree) or the
  // CPU backend's wrapper of it (emu/<target>/kernels-<8 hex>.emu.cpp.o), in the binary's own target or in
  // the object library of kernels it shares with the other CPU kinds (objects_from).
  const std::string stem = fs::path(student_file).stem().string();
  const std::regex wrapper(stem + "-[0-9a-f]{8}\\.emu\\.cpp\\.o");
  std::vector<std::string> targets{binary.target};
  targets.insert(targets.end(), binary.objects_from.begin(), binary.objects_from.end());
  for (const auto& target : targets) {
    const fs::path dir = build_dir / "labs" / lab.dir_name() / "CMakeFiles" / (target + ".dir");
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator(); ++it) {
      if (!it->is_regular_file()) continue;
      const std::string name = it->path().filename().string();
      const std::string rel = it->path().lexically_relative(dir).string();
      if (rel.starts_with("tests/")) continue;  // the lab's tests, never student code
      if (name == student_file + ".o" || std::regex_match(name, wrapper)) out.push_back(it->path());
    }
  }
  return out;
}

namespace {

std::string demangle(const std::string& name) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> d(abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), std::free);
  return status == 0 && d ? std::string(d.get()) : name;
}

// Every symbol an object defines or needs; nullopt when nm cannot read it.
std::optional<std::vector<Symbol>> symbols_of(const fs::path& object) {
  // POSIX format: "name type [value size]", one per line, names as in the object (mangled: no blanks).
  const ProcessResult r = run_process({"nm", "-P", object.string()}, {.timeout_s = 60, .sandbox = std::nullopt});
  if (!r.ok()) return std::nullopt;
  std::vector<Symbol> out;
  std::istringstream in(r.output);
  for (std::string line; std::getline(in, line);) {
    const auto blank = line.find(' ');
    if (blank == std::string::npos || blank == 0 || blank + 1 >= line.size()) continue;
    std::string name = line.substr(0, blank);
    out.push_back({name, demangle(name), line[blank + 1]});
  }
  return out;
}

// nm's letters: a definition the linker can take over another's (global: upper case, and the weak or unique
// ones, W V u i); a strong one (upper case, not U, W or V); a reference (U, or w for a weak one).
bool upper(char type) { return std::isupper(static_cast<unsigned char>(type)) != 0; }
bool defines_global(char type) { return (upper(type) && type != 'U') || type == 'u' || type == 'i'; }
bool defines_strong(char type) { return upper(type) && type != 'U' && type != 'W' && type != 'V'; }
bool references(char type) { return type == 'U' || type == 'w'; }

// The name without a version suffix ("pthread_create@GLIBC_2.34").
std::string_view unversioned(std::string_view name) { return name.substr(0, name.find('@')); }

std::string shortened(const std::string& s) { return s.size() > 120 ? s.substr(0, 117) + "..." : s; }

// The C names of the CUDA runtime, driver, NVML and NVTX (a definition of one is tampering: the harness calls them),
// and of NVIDIA's libraries (which nvcc's object and the backend's must call alike, with the former).
constexpr std::string_view kCudaApiPrefixes = "cuda|cu[A-Z]|nvml|nvtx";
constexpr std::string_view kCudaLibraryPrefixes = "cublas|cufft|curand|cusparse|cusolver|nvrtc|nccl";

bool names_loader_symbol(const std::string& symbol, std::string_view name) {
  return symbol == name || (symbol.starts_with(name) && symbol.size() > name.size() && symbol[name.size()] == '@');
}

}  // namespace

const std::vector<LoaderSymbol>& loader_symbols() {
  static constexpr std::string_view load = "loads a shared library by name at run time";
  static constexpr std::string_view find = "looks a function up by name at run time";
  static constexpr std::string_view walk = "walks the objects loaded in the process, to a library's symbol table";
  static const std::vector<LoaderSymbol> symbols = {
      {"dlopen", load},
      {"dlmopen", load},
      {"__libc_dlopen_mode", load},
      {"dlsym", find},
      {"dlvsym", find},
      {"__libc_dlsym", find},
      {"__libc_dlvsym", find},
      {"_dl_sym", find},
      {"_dl_vsym", find},
      {"dl_iterate_phdr", walk},
      {"dlinfo", walk},
      {"dladdr", walk},
      {"dladdr1", walk},
      {"_dl_find_object", walk},
      {"_r_debug", walk},
      {"_DYNAMIC", walk},
      {"__ehdr_start", walk},
      {"getauxval", walk},
      {"syscall", "makes system calls past the C library (openat and mmap of a library's file)"},
  };
  return symbols;
}

std::vector<std::string> tampering_findings(const std::string& file, const std::vector<Symbol>& symbols) {
  // Entry points that start a thread or a process, and the persisting-L2 controls: references in the kernels.
  static const std::set<std::string, std::less<>> starts = {
      "pthread_create", "thrd_create", "fork", "vfork", "_Fork", "clone", "clone3", "__clone", "posix_spawn",
      "posix_spawnp", "system", "popen", "daemon", "execv", "execve", "execvp", "execvpe", "execl", "execle",
      "execlp", "fexecve", "GOMP_parallel", "GOMP_parallel_start", "GOMP_task", "GOMP_teams_reg", "__kmpc_fork_call"};
  static const std::set<std::string, std::less<>> persisting_l2 = {
      "cudaStreamSetAttribute", "cudaStreamSetAttribute_ptsz", "cudaCtxResetPersistingL2Cache", "cudaDeviceSetLimit",
      "cudaGraphKernelNodeSetAttribute", "cuStreamSetAttribute", "cuStreamSetAttribute_ptsz", "cuCtxSetLimit",
      "cuCtxResetPersistingL2Cache"};
  static const std::set<std::string, std::less<>> clocks = {"clock_gettime", "__clock_gettime", "gettimeofday",
                                                             "clock", "time", "timespec_get"};
  // Clocks and sleeps, referenced in the kernels' file: a kernel or launcher that waits on purpose (a spin on
  // clock64(), __nanosleep, a host sleep before the launch) slows whatever it likes, the baseline of a ratio
  // first; no lab's kernel or launcher needs the time. The CPU backend's clock64() and __nanosleep() are its
  // own functions (rooflab/emu/runtime.hpp), named here.
  // The C library's clocks above, read there, are refused too.
  static const std::set<std::string, std::less<>> waits = {
      "nanosleep", "__nanosleep", "clock_nanosleep", "usleep", "sleep", "sched_yield",
      "_ZNSt6chrono3_V212steady_clock3nowEv", "_ZNSt6chrono3_V212system_clock3nowEv",
      "_ZN7rooflab3emu6detail12device_clockEv", "_ZN7rooflab3emu6detail12device_sleepEj"};
  // The operating system's entropy, from which the harness draws the elements it checks after timing.
  static const std::set<std::string, std::less<>> entropy = {"getrandom", "__getrandom", "getentropy", "arc4random",
                                                              "arc4random_buf", "arc4random_uniform"};
  // The environment: the harness and the CPU backend read their settings from it (the report channel, the record
  // mode, the thread order, the open device memory, the seed), some of them after the student's global initializers
  // have run. A student file has no use for it: reading it finds those settings, writing it changes them (a
  // getenv's string written in place as well), and defining one of these replaces the harness's own.
  static const std::set<std::string, std::less<>> environment = {
      "getenv", "secure_getenv", "__secure_getenv", "setenv", "putenv", "unsetenv", "clearenv",
      "environ", "__environ", "_environ"};
  // GoogleTest and the harness's own machinery (its verdicts, the values it records, the report it writes): a student
  // file that names any of it, defined (a template specialization of its own, weak) or used (a fake result reporter
  // that swallows failures), replaces or bypasses a verdict. The solutions' objects name none of it; the helpers they
  // include live elsewhere in rooflab (rooflab::warp_sum, rooflab::grid_for, the CPU backend's rooflab::emu).
  static const std::regex harness_names(
      R"((^|[^A-Za-z0-9_:])(testing|rooflab::(grading|report|testing|calib|rubric|coverage|loaded_libraries))::)");
  static const std::regex cuda_api(fmt::format("^({})[A-Za-z0-9_]*$", kCudaApiPrefixes));
  const bool kernels = fs::path(file).extension() == ".cu";
  std::vector<std::string> out;
  std::vector<std::string> machinery, environ_names;  // one finding each, however many names (a cheat names dozens)
  for (const auto& s : symbols) {
    const std::string_view name = unversioned(s.name);
    const bool mangled = name.starts_with("_Z");
    if (!mangled && defines_global(s.type) && std::regex_match(name.begin(), name.end(), cuda_api)) {
      out.push_back(fmt::format("{} defines {} (a function of the CUDA runtime, driver or NVML: the harness and its "
                                "timer call these, and the program's own definition would run instead)", file, name));
    } else if (!mangled && defines_global(s.type) && clocks.contains(name)) {
      out.push_back(fmt::format("{} defines {} (a C library clock, which the harness and its watchdog read)", file,
                                name));
    } else if ((!mangled && defines_global(s.type) && entropy.contains(name)) ||
               (defines_strong(s.type) && name.starts_with("_ZNSt13random_device"))) {
      out.push_back(fmt::format("{} defines {} (the source of randomness from which the harness draws the outputs it "
                                "checks after timing)", file, mangled ? shortened(s.demangled) : std::string(name)));
    } else if (defines_strong(s.type) && (name.starts_with("_ZN7rooflab") || name.starts_with("_ZNK7rooflab") ||
                                          name.starts_with("_ZN7testing") || name.starts_with("_ZNK7testing"))) {
      out.push_back(fmt::format("{} defines {} (a part of rooflab's harness or of GoogleTest: the linker would take "
                                "it instead of the harness's own)", file, shortened(s.demangled)));
    } else if ((defines_global(s.type) || references(s.type)) && mangled &&
               std::regex_search(s.demangled, harness_names)) {
      machinery.push_back(shortened(s.demangled));
    } else if (!mangled && (defines_global(s.type) || references(s.type)) && environment.contains(name)) {
      environ_names.push_back(std::string(name));
    } else if (kernels && references(s.type) &&
               (starts.contains(name) || name.starts_with("_ZNSt6thread15_M_start_thread"))) {
      out.push_back(fmt::format("{} uses {} (starts a thread or a process: work beside the timed launch, which no "
                                "lab asks for)", file, mangled ? shortened(s.demangled) : std::string(name)));
    } else if (kernels && references(s.type) &&
               (clocks.contains(name) || waits.contains(name) || name.starts_with("_ZNSt11this_thread11__sleep_for"))) {
      out.push_back(fmt::format("{} uses {} (reads a clock or sleeps: a kernel or launcher that waits on purpose "
                                "slows the baseline of a ratio, which no lab asks for)", file,
                                mangled ? shortened(s.demangled) : std::string(name)));
    } else if (kernels && references(s.type) && persisting_l2.contains(name)) {
      out.push_back(fmt::format("{} uses {} (the persisting-L2 controls: data kept in L2 between timed samples, which "
                                "no lab asks for)", file, name));
    }
  }
  // The first three names, then how many more.
  const auto some = [](const std::vector<std::string>& names) {
    std::string text;
    for (std::size_t k = 0; k < names.size() && k < 3; ++k) text += (k == 0 ? "" : ", ") + names[k];
    return names.size() > 3 ? fmt::format("{} and {} more", text, names.size() - 3) : text;
  };
  if (!machinery.empty()) {
    out.push_back(fmt::format("{} names GoogleTest's or the harness's own machinery, which decides and records each "
                              "test's verdict (a submission that names it can change a verdict): {}",
                              file, some(machinery)));
  }
  if (!environ_names.empty()) {
    out.push_back(fmt::format("{} uses the environment, where the grader's settings for the harness and the CPU "
                              "backend are (the report channel, the record mode, the thread order): {}",
                              file, some(environ_names)));
  }
  return out;
}

std::vector<std::string> forbidden_findings(const std::vector<ForbiddenLibrary>& libraries, const std::string& file,
                                            const std::vector<std::string>& symbols) {
  std::vector<std::string> out;
  if (libraries.empty()) return out;
  std::vector<std::regex> patterns;
  for (const auto& l : libraries) patterns.emplace_back(l.pattern);
  for (const auto& s : symbols) {
    for (std::size_t i = 0; i < patterns.size(); ++i) {
      if (std::regex_search(s, patterns[i])) out.push_back(fmt::format("{} uses {} ({})", file, shortened(s), libraries[i].library));
    }
    for (const auto& l : loader_symbols()) {
      if (names_loader_symbol(s, l.name)) {
        out.push_back(fmt::format("{} uses {} (the dynamic loader: it {}, so no name in the compiled code says which "
                                  "library it reaches)", file, s, l.why));
      }
    }
  }
  return out;
}

std::vector<std::string> device_code_findings(const std::string& file, const std::string& arch, std::string_view ptx) {
  // PTX's special registers for the clocks, its sleep, and the L2 eviction priorities a load, a prefetch or a
  // cache policy may ask for (evict_last and evict_unchanged keep lines resident past the harness's flush;
  // applypriority sets it on lines already there). Streaming hints (evict_first, no_allocate) are allowed.
  // Each family's needles: text every line it matches holds (a line with none is not matched at all).
  struct Family {
    std::vector<std::string_view> needles;
    std::regex pattern;
    std::string_view what;
  };
  static const std::vector<Family> families = {
      {{"%clock", "%globaltimer"}, std::regex(R"(%(clock64|clock|globaltimer(_lo|_hi)?)\b)"),
       "reads the SM's clock: a kernel that waits on purpose slows the baseline of a ratio, which no lab asks for"},
      {{"nanosleep"}, std::regex(R"(\bnanosleep\.)"),
       "sleeps (__nanosleep): a kernel that waits on purpose slows the baseline of a ratio, which no lab asks for"},
      {{"L2::evict_", "createpolicy", "applypriority"},
       std::regex(R"(L2::evict_(last|unchanged)|\bcreatepolicy\.|\bapplypriority\.)"),
       "keeps lines in L2 past the flush before each timed sample (an L2 eviction priority), which no lab asks for"}};
  const auto holds_any = [](const std::string& line, const std::vector<std::string_view>& needles) {
    return std::any_of(needles.begin(), needles.end(),
                       [&](std::string_view n) { return line.find(n) != std::string::npos; });
  };
  static const std::regex function(R"(^\s*(\.visible\s+|\.weak\s+)?\.(entry|func)\s+(\([^)]*\)\s*)?([A-Za-z_$][\w$]*))");
  std::set<std::string> out;
  std::string current = "(module scope)";
  std::size_t begin = 0;
  while (begin < ptx.size()) {
    std::size_t end = ptx.find('\n', begin);
    if (end == std::string_view::npos) end = ptx.size();
    const std::string line(ptx.substr(begin, end - begin));
    begin = end + 1;
    // Most lines hold no needle: the regular expressions run only on those that do.
    std::smatch m;
    if (holds_any(line, {".entry", ".func"}) && std::regex_search(line, m, function)) {
      current = demangle(m[4].str());
      continue;
    }
    const std::size_t comment = line.find("//");
    const std::string code = comment == std::string::npos ? line : line.substr(0, comment);
    for (const auto& f : families) {
      std::smatch found;
      if (holds_any(code, f.needles) && std::regex_search(code, found, f.pattern)) {
        out.insert(fmt::format("{}, device code for {} (nvcc's PTX), in {}: {} ({})", file, arch, shortened(current),
                               f.what, found[0].str()));
      }
    }
  }
  return {out.begin(), out.end()};
}

namespace {

// The files of a static binary's capture folder whose names match `name`, in path order, each with the groups it
// matched (none for a binary without captures).
struct CapturedFile {
  fs::path path;
  std::vector<std::string> groups;  // groups[1] ...: the name's parenthesized parts
};
std::vector<CapturedFile> captured_files(const Binary& binary, const std::regex& name) {
  std::vector<CapturedFile> out;
  if (binary.capture_dir.empty()) return out;
  std::error_code ec;
  for (auto it = fs::directory_iterator(binary.capture_dir, ec); !ec && it != fs::directory_iterator(); ++it) {
    const std::string file = it->path().filename().string();
    std::smatch m;
    if (!it->is_regular_file() || !std::regex_match(file, m, name)) continue;
    out.push_back({it->path(), {m.begin(), m.end()}});
  }
  std::sort(out.begin(), out.end(), [](const CapturedFile& a, const CapturedFile& b) { return a.path < b.path; });
  return out;
}

}  // namespace

std::vector<StudentPtx> student_ptx(const Binary& binary) {
  std::vector<StudentPtx> out;
  static const std::regex name(R"(([A-Za-z0-9_.-]+)\.(sm_[0-9]+a?)\.ptx)");
  for (const auto& f : captured_files(binary, name)) out.push_back({f.path, f.groups[1] + ".cu", f.groups[2]});
  return out;
}

std::vector<std::string> branch_findings(const Binary& binary) {
  std::vector<std::string> out;
  static const std::regex name(R"(.+\.branches\.txt)");
  for (const auto& f : captured_files(binary, name)) {
    std::ifstream in(f.path);
    for (std::string line; std::getline(in, line);) {
      if (!line.empty()) out.push_back(line);
    }
  }
  return out;
}

std::vector<NvccObject> nvcc_objects(const Binary& binary) {
  std::vector<NvccObject> out;
  static const std::regex name(R"(([A-Za-z0-9_.-]+)\.nvcc\.o)");
  for (const auto& f : captured_files(binary, name)) out.push_back({f.path, f.groups[1] + ".cu"});
  return out;
}

std::vector<std::string> api_findings(const std::string& file, const std::vector<Symbol>& nvcc,
                                      const std::vector<Symbol>& backend) {
  // The functions both builds must call alike: the CUDA runtime's, driver's and libraries' (C names), and the
  // harness's (rooflab::, less the CPU backend's own rooflab::emu::, which only its build calls).
  static const std::regex api(fmt::format("^({}|{})[A-Za-z0-9_]*$", kCudaApiPrefixes, kCudaLibraryPrefixes));
  const auto in_scope = [](std::string_view name) {
    if (name.starts_with("_ZN7rooflab3emu") || name.starts_with("_ZNK7rooflab3emu")) return false;
    return name.starts_with("_ZN7rooflab") || name.starts_with("_ZNK7rooflab") ||
           std::regex_match(name.begin(), name.end(), api);
  };
  // nvcc's stubs launch a kernel through its runtime (cudaLaunchKernel before CUDA 12.8, __cudaLaunchKernel
  // after); the backend's launch is its own rooflab::emu:: call.
  static const std::set<std::string, std::less<>> nvcc_launch = {"cudaLaunchKernel", "cudaLaunchKernel_ptsz",
                                                                 "cudaConfigureCall", "cudaSetupArgument",
                                                                 "cudaLaunch", "cudaLaunch_ptsz"};
  const auto called = [&](const std::vector<Symbol>& symbols) {
    std::map<std::string, std::string, std::less<>> out;  // name -> demangled
    for (const auto& s : symbols) {
      const std::string_view name = unversioned(s.name);
      if (references(s.type) && in_scope(name)) out.emplace(std::string(name), name.starts_with("_Z") ? s.demangled : std::string(name));
    }
    return out;
  };
  const auto by_nvcc = called(nvcc);
  const auto by_backend = called(backend);
  std::vector<std::string> out;
  for (const auto& [name, demangled] : by_nvcc) {
    if (by_backend.contains(name) || nvcc_launch.contains(name)) continue;
    out.push_back(fmt::format("{}: nvcc's build calls {}, which the CPU backend's build of the same file does not "
                              "(the file shows the two compilers different code: a GPU would run a call the CPU "
                              "backend never grades)", file, shortened(demangled)));
  }
  for (const auto& [name, demangled] : by_backend) {
    if (by_nvcc.contains(name)) continue;
    out.push_back(fmt::format("{}: the CPU backend's build calls {}, which nvcc's build of the same file does not "
                              "(the file shows the two compilers different code: the CPU backend grades a call a "
                              "GPU would never make)", file, shortened(demangled)));
  }
  return out;
}

namespace {

std::string listed(const std::set<std::string>& findings) {
  std::string out;
  int shown = 0;
  for (const auto& f : findings) {
    if (++shown > 10) {
      out += fmt::format("  ... and {} more\n", findings.size() - 10);
      break;
    }
    out += "  " + f + "\n";
  }
  return out;
}

}  // namespace

std::string forbidden_symbols_in(const fs::path& build_dir, const Lab& lab, const Binary& binary) {
  const auto libraries = forbidden_libraries(lab);
  std::set<std::string> findings, tampering;  // sorted, each once
  for (const auto& file : lab.student_files) {
    for (const auto& object : student_objects(build_dir, lab, binary, file)) {
      const auto symbols = symbols_of(object);
      if (!symbols) continue;
      std::vector<std::string> names;
      for (const auto& s : *symbols) names.push_back(s.demangled);
      for (auto& f : forbidden_findings(libraries, file, names)) findings.insert(std::move(f));
      for (auto& f : tampering_findings(file, *symbols)) tampering.insert(std::move(f));
    }
  }
  for (const auto& ptx : student_ptx(binary)) {
    std::ifstream in(ptx.path);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (auto& f : device_code_findings(ptx.file, ptx.arch, text)) tampering.insert(std::move(f));
  }
  std::set<std::string> branches;
  for (auto& f : branch_findings(binary)) branches.insert(std::move(f));
  // nvcc's own object of each kernels file: refused for what the backend's would be refused for, and held to call
  // what the backend's object of the same file calls.
  for (const auto& host : nvcc_objects(binary)) {
    const auto symbols = symbols_of(host.path);
    if (!symbols) continue;
    const std::string as_nvcc = host.file + " (as nvcc compiles it)";
    std::vector<std::string> names;
    for (const auto& s : *symbols) names.push_back(s.demangled);
    for (auto& f : forbidden_findings(libraries, as_nvcc, names)) findings.insert(std::move(f));
    for (auto& f : tampering_findings(host.file, *symbols)) tampering.insert(f + " (in nvcc's build)");
    for (const auto& object : student_objects(build_dir, lab, binary, host.file)) {
      if (object.filename().string().ends_with(".emu.cpp.o")) {
        if (const auto backend = symbols_of(object)) {
          for (auto& f : api_findings(host.file, *symbols, *backend)) branches.insert(std::move(f));
        }
      }
    }
  }
  std::string out;
  if (!findings.empty()) {
    std::string libs;
    for (const auto& l : libraries) libs += (libs.empty() ? "" : ", ") + l.library;
    out = fmt::format("refused: lab {} forbids {}; the student's compiled code uses them, or the dynamic loader, "
                      "refused in every lab that forbids a library:\n", lab.id, libs) +
          listed(findings) + "Write the kernels yourself: the lab grades your code, not a library's.";
  }
  if (!tampering.empty()) {
    out += (out.empty() ? "" : "\n") +
           fmt::format("refused: the student's compiled code replaces part of what runs and times the tests, or "
                       "works beside the timed launch (refused in every lab):\n") +
           listed(tampering) +
           "The harness times your kernels as they run on its stream: define none of the CUDA runtime's, the "
           "harness's or the C library's clocks, name none of GoogleTest's or the harness's machinery, leave the "
           "environment alone, and start no thread or process and read no clock in the kernels' file.";
  }
  if (!branches.empty()) {
    out += (out.empty() ? "" : "\n") +
           std::string("refused: the student's kernels file compiles to different code under nvcc than on the CPU "
                       "backend, which grades it without a GPU (each compiler's preprocessor keeps other lines or "
                       "gives a name another value, or each build calls other functions):\n") +
           listed(branches) +
           "Write one program for both: a conditional may tell host code from device code (__CUDA_ARCH__), not "
           "nvcc from the CPU backend (its headers, its macros, __has_include of either, a type either declares "
           "its own way), and no macro's value may either.";
  }
  return out;
}

std::optional<TestResult> forbidden_symbols_check(const fs::path& build_dir, const Lab& lab,
                                                  const std::vector<Binary>& binaries) {
  TestResult r =
      lab_check(lab, fmt::format("Lab{}Static.NoForbiddenLibraries", lab.id), "compiler output", Status::passed);
  std::set<std::string> seen;
  std::set<fs::path> checked;  // each object once: the kinds of the CPU backend share the kernels' objects
  for (const auto& b : binaries) {
    if (!b.unavailable.empty() || !fs::exists(b.path)) continue;
    for (const auto& f : lab.student_files) {
      for (auto& object : student_objects(build_dir, lab, b, f)) checked.insert(std::move(object));
    }
    for (auto& ptx : student_ptx(b)) checked.insert(std::move(ptx.path));
    for (auto& host : nvcc_objects(b)) checked.insert(std::move(host.path));
    const std::string found = forbidden_symbols_in(build_dir, lab, b);
    if (!found.empty() && seen.insert(found).second) {
      r.status = Status::failed;
      r.output += fmt::format("in {} ({} tests): {}\n", b.target, b.kind, found);
    }
  }
  if (r.status == Status::passed) {
    r.output = fmt::format("{} compiled student objects and PTX files checked: no forbidden library, nothing that "
                           "replaces or works beside the harness", checked.size());
  }
  return r;
}

}  // namespace rooflab::grader
